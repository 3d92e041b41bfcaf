//! What sonde's link emulator and the lab's queues do to traffic, each
//! checked against the configured truth with `sonde udp` across a lab:
//! Gilbert-Elliott loss, duplication, reordering, policers (drop, remark),
//! and queue limits in packets and bytes. Needs root; `SONDE_LAB=skip`
//! skips elsewhere.

use crate::common;
use common::lab_allowed;
use common::lab_cli::{lab_up, num, remarked, serial, serve_in, udp_in, KillOnDrop};

const TWO: &str =
    "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
const B6: &str = "2001:2:0:1::2";

#[test]
fn gilbert_elliott_loss_averages_to_its_stationary_rate() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    // p = 1 %, r = 25 %, every packet lost in the bad state: 1/26 = 3.85 %.
    let _lab = lab_up(
        "li1",
        &format!("{TWO}[link.a_to_b]\nloss = {{ p = \"1%\", r = \"25%\" }}\n"),
    );
    let _server = KillOnDrop(serve_in("li1", "b", B6));
    // 100-byte payloads at 16 Mbit/s for 10 s: 200,000 packets.
    let r = udp_in(
        "li1",
        "a",
        B6,
        &["-t", "10s", "-b", "16M", "-l", "100", "-i", "0"],
    );
    let s = &r["summary"]["forward"];
    let loss = num(&s["loss_pct"]);
    let expected = 100.0 / 26.0;
    eprintln!("Gilbert-Elliott 1 %/25 %: measured {loss:.3} %, expected {expected:.3} %");
    assert!(common::u(&s["sent_packets"]) >= 190_000, "{s}");
    // Bursts make the estimate noisier than random loss: ±10 % (3σ).
    assert!(
        (loss - expected).abs() <= 0.1 * expected,
        "loss {loss:.3} %"
    );
}

#[test]
fn duplicated_and_reordered_frames_are_counted_as_configured() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    // A packet every 1 ms (1250 bytes at 10 Mbit/s), held 10.5 ms; 5 % skip
    // the delay. RFC 4737 counts packet i reordered when a later one arrived
    // first: i was delayed (0.95) and one of the 10 after it was not.
    let _lab = lab_up(
        "li2",
        &format!(
            "{TWO}[link.a_to_b]\ndelay = \"10ms 500us\"\nreorder = \"5%\"\nduplicate = \"1%\"\n"
        ),
    );
    let _server = KillOnDrop(serve_in("li2", "b", B6));
    let r = udp_in("li2", "a", B6, &["-t", "10s", "-b", "10M", "-l", "1250"]);
    let s = &r["summary"]["forward"];
    let received = num(&s["received_packets"]);
    let dup = num(&s["duplicates"]) / received;
    let reordered = num(&s["reordered"]) / received;
    let expected = 0.95 * (1.0 - 0.95f64.powi(10));
    eprintln!(
        "duplicate 1 %: {:.3} %; reorder 5 % over 10.5 ms at 1 ms spacing: {:.3} % reordered, expected {:.3} %",
        dup * 100.0,
        reordered * 100.0,
        expected * 100.0
    );
    assert!(num(&s["lost_packets"]) == 0.0, "{s}");
    assert!((dup - 0.01).abs() <= 0.0035, "duplicates {dup:.4}");
    assert!(
        (reordered - expected).abs() <= 0.03,
        "reordered {reordered:.4}"
    );
}

#[test]
fn a_policer_drops_or_remarks_what_exceeds_its_rate() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    // a → b: EF policed to 7.75 Mbit/s (6NET's 5 % of 155), excess dropped;
    // b → a: EF policed to 5 Mbit/s, excess remarked to CS1.
    let _lab = lab_up(
        "li3",
        &format!(
            "{TWO}[link.a_to_b]\npolicer = [{{ rate = \"7.75M\", dscp = \"EF\" }}]\n\
             [link.b_to_a]\npolicer = [{{ rate = \"5M\", dscp = \"EF\", action = \"remark:CS1\" }}]\n"
        ),
    );
    let _server = KillOnDrop(serve_in("li3", "b", B6));
    // 10 Mbit/s of 1400-byte payloads is 10 × 1448 / 1400 Mbit/s of IPv6
    // packets, which is what a policer counts.
    let ip_rate = 10.0 * 1448.0 / 1400.0;
    let run = |extra: &[&str]| {
        let mut args = vec!["-t", "6s", "-b", "10M", "-l", "1400"];
        args.extend(extra);
        udp_in("li3", "a", B6, &args)
    };
    let ef = run(&["-S", "EF"]);
    let loss = num(&ef["summary"]["forward"]["loss_pct"]);
    let expected = (1.0 - 7.75 / ip_rate) * 100.0;
    eprintln!(
        "EF at 10 Mbit/s into a 7.75 Mbit/s policer: loss {loss:.2} %, expected {expected:.2} %"
    );
    assert!((loss - expected).abs() <= 1.5, "EF loss {loss:.2} %");

    let be = run(&[]);
    let be_loss = num(&be["summary"]["forward"]["loss_pct"]);
    assert!(be_loss < 0.1, "best effort is not policed: {be_loss} %");

    let back = run(&["-S", "EF", "-R"]);
    let s = &back["summary"]["reverse"];
    let received = num(&s["received_packets"]);
    let share = remarked(s, 46, 8) / received * 100.0;
    let expected = (1.0 - 5.0 / ip_rate) * 100.0;
    eprintln!("EF at 10 Mbit/s into a 5 Mbit/s remarking policer: {share:.2} % remarked to CS1, expected {expected:.2} %");
    assert!(num(&s["loss_pct"]) < 0.1, "{s}");
    assert!((share - expected).abs() <= 1.5, "remarked {share:.2} %");
}

#[test]
fn a_queue_limit_in_packets_or_bytes_sets_the_standing_delay() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    // 10 Mbit/s, overloaded at 20: the queue stays full, and each packet
    // waits for the queue ahead of it. 20 packets of 1462-byte frames take
    // 23.4 ms; 30 KiB takes 24.6 ms. The hosts share a clock, so one-way
    // delay is exact.
    for (name, queue, expected_ms) in [
        ("li4", "\"20p\"", 20.0 * 1462.0 * 8.0 / 10e6 * 1e3),
        ("li5", "\"30K\"", 30.0 * 1024.0 * 8.0 / 10e6 * 1e3),
    ] {
        let _lab = lab_up(
            name,
            &format!("{TWO}[link.a_to_b]\nrate = \"10M\"\nqueue = {queue}\n"),
        );
        let _server = KillOnDrop(serve_in(name, "b", B6));
        let r = udp_in(
            name,
            "a",
            B6,
            &["-t", "4s", "-b", "20M", "-l", "1400", "--clock-synced"],
        );
        let d = &r["summary"]["forward"]["delay"];
        let standing = num(&d["avg_ms"]) - num(&d["min_ms"]);
        eprintln!("queue {queue} at 10 Mbit/s: standing delay {standing:.2} ms, expected {expected_ms:.2} ms");
        assert!(
            (standing - expected_ms).abs() <= 0.15 * expected_ms,
            "queue {queue}: {standing:.2} ms"
        );
    }
}
