//! SmokePing's documented alert examples (smokeping_config, "Alerts"),
//! each against samples that must and must not raise it.

use super::*;

fn loss(p: &str) -> Pattern {
    Pattern::parse(p, Quantity::LossPct).unwrap()
}

fn rtt(p: &str) -> Pattern {
    Pattern::parse(p, Quantity::RttMs).unwrap()
}

fn s(v: &[f64]) -> Vec<Option<f64>> {
    v.iter().map(|x| Some(*x)).collect()
}

#[test]
fn bigloss_suddenly_there_is_packet_loss() {
    let p = loss("==0%,==0%,==0%,==0%,>0%,>0%,>0%");
    assert!(p.matches(&s(&[0.0, 0.0, 0.0, 0.0, 25.0, 50.0, 10.0])));
    // Older samples before the pattern's first item do not matter.
    assert!(p.matches(&s(&[90.0, 0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0])));
    // The latest sample must be the pattern's last item.
    assert!(!p.matches(&s(&[0.0, 0.0, 0.0, 0.0, 25.0, 50.0, 10.0, 0.0])));
    assert!(!p.matches(&s(&[0.0, 0.0, 0.0, 5.0, 25.0, 50.0, 10.0])));
    assert!(
        !p.matches(&s(&[0.0, 0.0, 25.0, 50.0, 10.0])),
        "too few samples"
    );
}

#[test]
fn someloss_loss_three_times_within_the_last_27_samples() {
    let p = loss(">0%,*12*,>0%,*12*,>0%");
    assert_eq!(p.span(), 27);
    let mut v = vec![0.0; 30];
    v[29] = 10.0;
    v[20] = 10.0;
    v[8] = 10.0;
    assert!(p.matches(&s(&v)), "gaps of 8 and 11");
    v[8] = 0.0;
    v[3] = 10.0;
    assert!(!p.matches(&s(&v)), "a gap of 16 is more than *12* takes");
    let mut burst = vec![0.0; 10];
    burst.extend([5.0, 5.0, 5.0]);
    assert!(p.matches(&s(&burst)), "*N* takes 0 samples too");
    burst.push(0.0);
    assert!(!p.matches(&s(&burst)), "the latest has no loss");
}

#[test]
fn rttdetect_routing_messed_up_again() {
    let p = rtt("<10,<10,<10,<10,<10,<100,>100,>100,>100");
    assert!(p.matches(&s(&[5.0, 6.0, 5.0, 7.0, 8.0, 50.0, 150.0, 160.0, 155.0])));
    assert!(!p.matches(&s(&[5.0, 6.0, 5.0, 7.0, 8.0, 50.0, 150.0, 90.0, 155.0])));
    // `ms` may be written, as the issue's `>50ms` on the median.
    assert!(rtt(">50ms").matches(&s(&[60.0])));
    assert!(!rtt(">50ms").matches(&s(&[50.0])));
}

#[test]
fn hostdown_no_reply_is_unknown() {
    let p = loss("==U");
    assert!(p.matches(&[Some(0.0), None]));
    assert!(!p.matches(&[None, Some(100.0)]));
    assert!(!p.matches(&[]));
    // Unknown never passes a number's comparison.
    assert!(!loss(">0%").matches(&[None]));
    assert!(!loss("<100%").matches(&[None]));
    assert!(loss("!=U,!=U").matches(&s(&[1.0, 2.0])));
}

#[test]
fn each_fault_names_its_item() {
    let cases = [
        (">0%,>x%", 2, "not a number"),
        (">0%,*0*", 2, "1 to 1000"),
        (">0%,*a*", 2, "whole number"),
        ("0%", 1, "starts with none"),
        (">U", 1, "only with == or !="),
        (">-1%", 1, "not a % value"),
        ("*3*", 1, "at least one comparison"),
        (">0%,,>0%", 2, "starts with none"),
    ];
    for (text, item, why) in cases {
        let e = Pattern::parse(text, Quantity::LossPct).unwrap_err();
        assert_eq!(e.item, item, "{text}: {e}");
        assert!(e.to_string().contains(why), "{text}: {e}");
    }
    // A loss unit on an RTT pattern is not a number of ms.
    assert!(Pattern::parse(">5%", Quantity::RttMs).is_err());
}

#[test]
fn a_pattern_reads_back_as_written_in_canonical_form() {
    let p = loss(">0%, *12* ,>=0.5%,==U");
    assert_eq!(p.to_string(), ">0%,*12*,>=0.5%,==U");
    assert_eq!(
        Pattern::parse(&p.to_string(), Quantity::LossPct).unwrap(),
        p
    );
}

#[test]
fn many_wildcards_over_a_long_history_match_where_they_should() {
    // Wildcards that pass almost everything: a search would try every
    // split; the table answers at once either way (no timing asserted).
    let p = loss(&format!("{},>=0%", ["*200*"; 8].join(",")));
    let v = vec![Some(1.0); 2000];
    assert!(p.matches(&v));
    let p = loss(&format!("==U,{}", ["*200*"; 8].join(",")));
    assert!(!p.matches(&v), "no unknown sample in the last 1601");
    let mut w = v.clone();
    w[2000 - 1601] = None;
    assert!(p.matches(&w));
    w[2000 - 1601] = Some(1.0);
    w[2000 - 1602] = None;
    assert!(!p.matches(&w), "one too far back");
}
