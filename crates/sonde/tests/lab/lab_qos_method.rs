//! `sonde qos` on the 6NET testbed (examples/studies/004-6net-qos/lab.toml, seed 004
//! §4), as docs/methods.md's walkthrough `6net` runs it: the checks find
//! the NON-PARTICIPANT reset on the background host's access link, the
//! 5 % policer at its rate and EF protected beside an overloaded core;
//! scenario 7 (80 Mbit/s background from that host through a third-party
//! agent, a UDP EF foreground ramped in 0.5 Mbit/s steps) loses no
//! foreground below the policer; scenario 8's TCP streams stay under it.
//! Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_allowed;
use common::lab_cli::num;
use common::walkthrough::Walkthrough;

const NL: &str = "2001:2:0:2::1";
/// 5 % of 155 Mbit/s, counted on IPv6 packets (payload + 48 bytes).
const POLICER_IP_BPS: f64 = 7.75e6;

#[test]
fn the_6net_checks_and_scenarios_7_and_8() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    // The walkthrough: Greece serves, the Netherlands' agent takes
    // third-party requests from the UK's prefix only, the UK runs the
    // check and the scenarios.
    let walked = Walkthrough::named("docs/methods.md", "6net").run(&["qos"]);
    let runs = walked.of("qos");
    assert_eq!(runs.len(), 3, "the check, scenario 7 and scenario 8");
    let docs: Vec<serde_json::Value> = runs.iter().map(|r| r.json()).collect();
    for doc in &docs {
        common::schema::assert_method_v1(doc);
    }

    let checks = docs[0]["checks"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&serde_json::Value> {
        checks.iter().filter(|c| c["check"] == kind).collect()
    };
    let marking = of("marking");
    assert_eq!(marking.len(), 8, "4 classes from each host");
    for c in marking {
        let (from, class, verdict) = (
            c["from"].as_str().unwrap(),
            c["class"].as_u64().unwrap(),
            c["verdict"].as_str().unwrap(),
        );
        let expected = if from == NL && class != 0 {
            "reset"
        } else {
            "kept"
        };
        assert_eq!(verdict, expected, "{from} class {class}: {}", c["evidence"]);
    }
    // EF at 1.3 × 7.75 Mbit/s: the policer found at its rate of IP
    // packets (3 %: a sender short of its rate on a loaded machine only
    // lowers what is offered, not what the policer passes).
    let policing = of("policing");
    assert_eq!(
        policing[0]["verdict"], "policed",
        "{}",
        policing[0]["evidence"]
    );
    let found = num(&policing[0]["figures"]["policer_ip_bps"]);
    assert!(
        (found / POLICER_IP_BPS - 1.0).abs() < 0.03,
        "policer found at {found} bit/s of IP packets"
    );
    // Premium beside 200 Mbit/s of background through the 155 Mbit/s
    // core: strict priority keeps it whole while the background loses.
    let priority = of("priority");
    assert_eq!(
        priority[0]["verdict"], "protected",
        "{}",
        priority[0]["evidence"]
    );
    assert!(num(&priority[0]["figures"]["background_loss_pct"]) > 10.0);

    // Scenario 7: the study's ramp, 1.5 to 7.5 Mbit/s in 0.5 steps.
    let doc = &docs[1];
    let steps = doc["qos_steps"].as_array().unwrap();
    assert_eq!(steps.len(), 13);
    let trials = doc["trials"].as_array().unwrap();
    assert_eq!(
        trials.len(),
        13 * 3,
        "each step's foreground and background results"
    );
    let mut stalled = 0;
    for s in steps {
        let offered = num(&s["fg_offered_bps"]);
        // What the policer meets is what the foreground's sender achieved
        // (its trial, the step's first), in IPv6 packets: a loaded sender
        // may fall short of the rate asked.
        let fg = trials
            .iter()
            .find(|t| t["id"] == s["trials"][0])
            .unwrap_or_else(|| panic!("no foreground trial for {s}"));
        let ip = num(&fg["summary"]["forward"]["sender_throughput_bps"]) * 1448.0 / 1400.0;
        let loss = num(&s["fg_loss_pct"]);
        let expected = (1.0 - POLICER_IP_BPS / ip).max(0.0) * 100.0;
        eprintln!(
            "scenario 7: offered {:.1} Mbit/s ({:.2} of IP achieved), lost {loss:.3} % (policer: {expected:.2} %), \
             background lost {:.3} %",
            offered / 1e6,
            ip / 1e6,
            num(&s["bg_loss_pct"])
        );
        if ip < POLICER_IP_BPS * 0.9 {
            // None lost, but for a sender stall: the policer's bucket
            // (rate/100) holds about 10 ms, so a sender that catches up
            // after a longer stall on this shared machine bursts past it
            // (the suite saw one step of thirteen lose 1 %). A policer or
            // class that took premium traffic would lose in every step
            // near it (3 % and up just above the policer): at most one
            // step loses more than 0.5 %, and none more than 2 %. Within
            // 10 % of the policer's rate the bucket refills too slowly
            // for a loaded sender's bursts (the suite saw 2.9 % at 93 %
            // of it, 7 Mbit/s): those steps are not judged.
            assert!(
                loss <= 2.0,
                "premium below the policer lost {loss} % at {offered}"
            );
            if loss > 0.5 {
                stalled += 1;
            }
        } else if ip > POLICER_IP_BPS * 1.03 {
            assert!(
                (loss - expected).abs() <= 2.0,
                "policed loss {loss:.2} % at {offered}, expected {expected:.2} % at the rate achieved"
            );
        }
        // 56 Mbit/s of UDP and 24 of TCP from the agent, through a
        // 155 Mbit/s core: the background passes too. Neither paced
        // sender runs ahead of its rate (2 % for the UDP receive window,
        // 5 % for TCP's); a third-party sender on a loaded machine may
        // fall behind over a 2 s step (5 %; 10 % for TCP, whose slow
        // start is in the step).
        let bg_udp = num(&s["bg_achieved_bps"]) / 56e6;
        assert!((0.95..=1.02).contains(&bg_udp), "{s}");
        let bg_tcp = num(&s["bg_tcp_bps"]) / 24e6;
        assert!((0.9..=1.05).contains(&bg_tcp), "{s}");
    }

    assert!(
        stalled <= 1,
        "{stalled} steps below the policer lost more than 0.5 %"
    );

    // Scenario 8: TCP streams under the policer never carry more than it
    // passes (its rate in payload: 7.75 × 1400 / 1448; 2 % for the step's
    // edges), and they carry something: no more is promised, since many
    // streams' losses at a policer can leave them in retransmission
    // timeouts for much of a 2 s step (10 streams carried 0.37 Mbit/s
    // once in CI, 2026-12-06).
    let steps = docs[2]["qos_steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    for s in steps {
        let fg = num(&s["fg_achieved_bps"]);
        eprintln!(
            "scenario 8: {} streams, {:.2} Mbit/s",
            s["fg_streams"],
            fg / 1e6
        );
        assert!(
            fg > 0.0 && fg < POLICER_IP_BPS * 1400.0 / 1448.0 * 1.02,
            "{} streams carried {fg} bit/s",
            s["fg_streams"]
        );
    }
}
