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
    // The sender's schedule is 200,000; a sender whose schedule slipped
    // more than its catch-up (a loaded machine) sends a little less. Every
    // packet sent is received or lost.
    let (sent, received, lost) = (
        num(&s["sent_packets"]),
        num(&s["received_packets"]),
        num(&s["lost_packets"]),
    );
    assert!((190_000.0..=200_000.0).contains(&sent), "{s}");
    assert_eq!(received + lost, sent, "{s}");
    // Bursts make the estimate noisier than random loss: the loss
    // indicator is a two-state Markov chain of stationary share π = 1/26
    // and memory λ = 1 − p − r = 0.74, so σ = √(π(1 − π)/n · (1 + λ)/(1 − λ))
    // = 0.111 pp at n = 200,000. 4.5 σ either side (0.50 pp), and 0.1 pp
    // more above (200 packets) for drops on a loaded host, which only add.
    let (pi, lambda) = (1.0 / 26.0, 0.74);
    let sigma = (pi * (1.0 - pi) / sent * (1.0 + lambda) / (1.0 - lambda)).sqrt() * 100.0;
    assert!(
        loss >= expected - 4.5 * sigma && loss <= expected + 4.5 * sigma + 0.1,
        "loss {loss:.3} %, expected {expected:.3} % (σ {sigma:.3} pp over {sent} packets)"
    );
}

/// Variance, per packet, of RFC 4737's "reordered" indicator when each
/// packet is held (probability `q`) or skips the hold, and a held packet
/// is overtaken by any of the `w` sent after it that skipped:
/// R_i = H_i · (1 − H_{i+1} ⋯ H_{i+w}). The indicators of packets less
/// than `w` apart share their followers, so the covariances count:
/// Var = p(1 − p) + 2 Σ_{k=1..w} (E[R_i R_{i+k}] − p²), with p = q(1 − q^w)
/// and E[R_i R_{i+k}] = q² (1 − q^(w−1) − q^w + q^(w−1+k)) (packet i+k is
/// held; the two windows cover w − 1 + k other packets).
fn reordered_variance(q: f64, w: i32) -> f64 {
    let p = q * (1.0 - q.powi(w));
    let covariances: f64 = (1..=w)
        .map(|k| q * q * (1.0 - q.powi(w - 1) - q.powi(w) + q.powi(w - 1 + k)) - p * p)
        .sum();
    p * (1.0 - p) + 2.0 * covariances
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
    let (sent, received, lost) = (
        num(&s["sent_packets"]),
        num(&s["received_packets"]),
        num(&s["lost_packets"]),
    );
    let dup = num(&s["duplicates"]) / received;
    let reordered = num(&s["reordered"]) / received;
    let expected = 0.95 * (1.0 - 0.95f64.powi(10));
    eprintln!(
        "duplicate 1 %: {:.3} %; reorder 5 % over 10.5 ms at 1 ms spacing: {:.3} % reordered, expected {:.3} %",
        dup * 100.0,
        reordered * 100.0,
        expected * 100.0
    );
    // The counting: each packet sent is received once (its copies are
    // duplicates, not received twice) or lost. The link loses nothing;
    // what is lost is the loaded host's (a stalled emulator or receiver)
    // or a held packet still in flight at the end: at most 0.5 %.
    assert_eq!(received + lost, sent, "{s}");
    assert!(lost <= 0.005 * sent, "{lost} lost of {sent}: {s}");
    // Duplicates: binomial, σ = √(0.01 · 0.99 / n) = 0.0995 pp at n =
    // 10,000 received; 4.5 σ is 0.45 pp.
    let dup_tol = 4.5 * (0.01 * 0.99 / received).sqrt();
    assert!(
        (dup - 0.01).abs() <= dup_tol,
        "duplicates {dup:.4}, tolerance {dup_tol:.4} over {received} packets"
    );
    // Reordered: the indicators of neighbours are correlated (they share
    // the packets that overtake them), σ = √(Var / n) with Var = 1.87 per
    // packet (reordered_variance), 1.37 pp at n = 10,000; 4.5 σ is 6.2 pp.
    // Plus 1 pp for the sender's departure times on a loaded machine: the
    // model counts the 10 packets sent within the 10.5 ms hold, and a
    // departure late by more than the 0.5 ms to spare moves one in or out.
    let reo_tol = 4.5 * (reordered_variance(0.95, 10) / received).sqrt() + 0.01;
    assert!(
        (reordered - expected).abs() <= reo_tol,
        "reordered {reordered:.4}, expected {expected:.4} ± {reo_tol:.4} over {received} packets"
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
    // What the policer meets is what the sender achieved (a loaded sender
    // may fall short of 10 Mbit/s), in Mbit/s of IPv6 packets.
    let offered_ip =
        |d: &serde_json::Value| num(&d["sender_throughput_bps"]) / 1e6 * 1448.0 / 1400.0;
    let ef = run(&["-S", "EF"]);
    let s = &ef["summary"]["forward"];
    let loss = num(&s["loss_pct"]);
    let expected = (1.0 - 7.75 / offered_ip(s)) * 100.0;
    eprintln!(
        "EF at {:.2} Mbit/s of IP ({ip_rate:.2} asked) into a 7.75 Mbit/s policer: loss {loss:.2} %, expected {expected:.2} %",
        offered_ip(s)
    );
    // 2 pp: the policer's bucket and the sender's bursts after a stall.
    assert!(
        (loss - expected).abs() <= 2.0,
        "EF loss {loss:.2} %, expected {expected:.2} % at the rate offered"
    );

    // Best effort is not policed: what it loses is the host's (0.3 % is
    // 16 of 5,357 packets), far below what the policer takes from EF.
    let be = run(&[]);
    let be_loss = num(&be["summary"]["forward"]["loss_pct"]);
    assert!(
        be_loss <= 0.3 && be_loss < loss / 50.0,
        "best effort is not policed: {be_loss} % lost, EF {loss:.2} %"
    );

    let back = run(&["-S", "EF", "-R"]);
    let s = &back["summary"]["reverse"];
    let received = num(&s["received_packets"]);
    let share = remarked(s, 46, 8) / received * 100.0;
    let expected = (1.0 - 5.0 / offered_ip(s)) * 100.0;
    eprintln!(
        "EF at {:.2} Mbit/s of IP into a 5 Mbit/s remarking policer: {share:.2} % remarked to CS1, expected {expected:.2} %",
        offered_ip(s)
    );
    // Remarked, not dropped: what is lost is the host's, as above.
    assert!(num(&s["loss_pct"]) <= 0.3, "{s}");
    assert!(
        (share - expected).abs() <= 2.0,
        "remarked {share:.2} %, expected {expected:.2} % at the rate offered"
    );
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
        // The median delay above the minimum (RFC 5481 PDV, p50): the
        // median leaves out the fill-up at the start and the tail of late
        // wake-ups that a mean takes in; the minimum is a packet that
        // found the queue empty.
        let standing = num(&d["pdv_p50_ms"]);
        eprintln!(
            "queue {queue} at 10 Mbit/s: standing delay {standing:.2} ms (mean {:.2}), expected {expected_ms:.2} ms",
            num(&d["avg_ms"]) - num(&d["min_ms"])
        );
        // Full in overload, the queue makes each packet wait for the 19 or
        // 20 ahead of it (95–100 % of its length), a sender's stall drains
        // it for a while, and a late receiver adds to every delay but the
        // quickest: 15 % either side.
        assert!(
            (standing - expected_ms).abs() <= 0.15 * expected_ms,
            "queue {queue}: {standing:.2} ms"
        );
    }
}
