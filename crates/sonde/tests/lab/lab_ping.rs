//! `sonde ping` across lab links whose delay, loss and line rate are
//! known, beside the system's `ping` (iputils). Needs root;
//! `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_allowed;
use common::lab_cli::{
    assert_rtt_of, lab, lab_up, num, serial, serve_in, stamp_answers_in, system_ping_ms, KillOnDrop,
};
use common::{sonde, stderr};

const TWO: &str =
    "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";

/// `sonde ping ARGS -J` in node a of `labname`.
fn sonde_ping(labname: &str, args: &[&str]) -> serde_json::Value {
    let mut cmd = vec![
        "exec",
        "--lab",
        labname,
        "a",
        "--",
        env!("CARGO_BIN_EXE_sonde"),
        "ping",
        "-J",
    ];
    cmd.extend(args);
    let o = lab(&cmd);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Every round trip was taken between the kernel's send and receive
/// times (the lab's veth links stamp both; they have no hardware clock).
fn assert_kernel_stamps(r: &serde_json::Value, n: u64) {
    let t = &r["series"][0]["timestamps"];
    for side in ["send", "receive"] {
        assert_eq!(t[side]["kernel"], n, "{side}: {t}");
        assert_eq!(t[side]["user"], 0, "{side}: {t}");
        assert_eq!(t[side]["hardware"], 0, "{side}: {t}");
    }
}

#[test]
fn sonde_ping_and_the_system_ping_agree_on_an_emulated_delay() {
    if !lab_allowed() {
        return;
    }
    let _serial = serial();
    let _lab = lab_up("lp1", &format!("{TWO}delay = \"20ms\"\n"));
    // A reflector on b (STAMP's port 862).
    let _server = KillOnDrop(serve_in("lp1", "b", "::"));
    for target in ["2001:2:0:1::2", "198.18.1.2"] {
        stamp_answers_in("lp1", "a", target);
        let system = system_ping_ms("lp1", "a", target);
        for proto in ["icmp", "udp"] {
            let r = sonde_ping("lp1", &["-c", "20", "-i", "50ms", "--proto", proto, target]);
            let rt = &r["summary"]["round_trip"];
            // The quickest and the median of both (see system_ping_ms).
            let ours = (num(&rt["rtt_ms"]["min"]), num(&rt["rtt_ms"]["p50"]));
            eprintln!(
                "20 ms each way, {target}: sonde ping (quickest, median) {ours:.3?} ms ({}), system ping {system:.3?} ms",
                r["env"]["method"]
            );
            assert_eq!(rt["received_packets"], 20, "{r}");
            assert_kernel_stamps(&r, 20);
            assert_rtt_of(&format!("{target} {proto}"), ours, 40.0);
            assert!(
                (ours.0 - system.0).abs() <= 0.2,
                "{target} {proto}: sonde {ours:.3?} vs system {system:.3?} ms"
            );
        }
    }
    // With datagram ICMP sockets allowed in the node, sonde uses them.
    let allow = lab(&[
        "exec",
        "--lab",
        "lp1",
        "a",
        "--",
        "sysctl",
        "-qw",
        "net.ipv4.ping_group_range=0 2147483647",
    ]);
    assert!(allow.status.success());
    let r = sonde_ping("lp1", &["-c", "5", "-i", "50ms", "2001:2:0:1::2"]);
    assert_eq!(r["env"]["method"], "icmp-datagram");
    assert_kernel_stamps(&r, 5);
    let rtt = &r["summary"]["round_trip"]["rtt_ms"];
    assert_rtt_of("icmp-datagram", (num(&rtt["min"]), num(&rtt["p50"])), 40.0);
}

#[test]
fn a_tenth_of_echo_requests_dropped_measures_as_ten_percent_loss() {
    if !lab_allowed() {
        return;
    }
    let _serial = serial();
    let _lab = lab_up("lp2", TWO);
    // b drops 10 % of the echo requests it receives, nothing else.
    for rule in [
        "add table inet t",
        "add chain inet t in { type filter hook input priority 0; }",
        "add rule inet t in icmpv6 type echo-request numgen random mod 100 < 10 counter drop",
    ] {
        let o = lab(&["exec", "--lab", "lp2", "b", "--", "nft", rule]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let r = sonde_ping(
        "lp2",
        &["-c", "1000", "-i", "2ms", "-W", "500ms", "2001:2:0:1::2"],
    );
    let rt = &r["summary"]["round_trip"];
    let loss = num(&rt["loss_pct"]);
    eprintln!(
        "10 % of echo requests dropped: {loss:.1} % loss over {} pings",
        rt["sent_packets"]
    );
    assert_eq!(rt["sent_packets"], 1000);
    // The known truth is what b's rule dropped, counted by nft: every one
    // of those is lost, and at most a few more (a reply later than -W on a
    // loaded machine). Each request has its answer or is lost.
    let dropped = nft_counter_packets("lp2", "b", "inet t", "in");
    let (received, lost) = (num(&rt["received_packets"]), num(&rt["lost_packets"]));
    assert_eq!(received + lost, 1000.0, "{rt}");
    assert!(
        lost >= dropped && lost <= dropped + 5.0,
        "{lost} lost, {dropped} dropped by the rule: {rt}"
    );
    assert_eq!(loss, lost / 10.0, "{rt}");
    // The rule's own draw: binomial, σ = √(1000 · 0.1 · 0.9) ≈ 9.5 packets;
    // 4.5 σ is 43.
    assert!((dropped - 100.0).abs() <= 43.0, "{dropped} dropped of 1000");
    // Reporting intervals cover every request once.
    let per_interval: f64 = r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| num(&i["round_trip"]["sent_packets"]))
        .sum();
    assert_eq!(per_interval, 1000.0);
}

/// The packets an nft chain's rules counted (`counter`), summed.
fn nft_counter_packets(labname: &str, node: &str, table: &str, chain: &str) -> f64 {
    let mut cmd = vec!["exec", "--lab", labname, node, "--", "nft", "list", "chain"];
    cmd.extend(table.split(' '));
    cmd.push(chain);
    let o = lab(&cmd);
    assert!(o.status.success(), "nft list chain: {}", stderr(&o));
    common::lab_cli::nft_counted(&String::from_utf8_lossy(&o.stdout)) as f64
}

#[test]
fn rtt_grows_with_size_by_the_serialisation_time_of_the_line() {
    if !lab_allowed() {
        return;
    }
    let _serial = serial();
    // 2 Mbit/s each way: a request and its reply each take their frame
    // size × 8 / 2e6 to cross, so RTT grows by 2 × 8 µs per byte.
    let _lab = lab_up("lp3", &format!("{TWO}line_rate = \"2M\"\n"));
    let r = sonde_ping(
        "lp3",
        &[
            "-c",
            "30",
            "-i",
            "50ms",
            "--sizes",
            "64,512,1408",
            "2001:2:0:1::2",
        ],
    );
    let series = r["series"].as_array().unwrap();
    // The quickest of 30 at each size, not the median: the line holds
    // each frame its serialisation time, never less, and a loaded
    // machine's late wake-ups only add, so the quickest is each size's
    // RTT to within 0.3 ms (as assert_rtt_of holds a path's RTT) where a
    // median drifts with the load.
    let quickest = |i: usize| num(&series[i]["rtt_ms"]["min"]);
    let base = quickest(0);
    for (i, size) in [(1, 512.0), (2, 1408.0)] {
        let grew = quickest(i) - base;
        let expected = 2.0 * (size - 64.0) * 8.0 / 2e6 * 1e3;
        eprintln!(
            "{size} bytes: quickest RTT {:.3} ms, {grew:.3} ms above 64 bytes; serialisation predicts {expected:.3}",
            quickest(i)
        );
        // Below: the 64-byte quickest may itself be up to 0.3 ms late.
        // Above: this size's quickest may be, and 5 % for the emulator's
        // clock of the line.
        assert!(
            grew >= expected - 0.3 && grew <= expected * 1.05 + 0.3,
            "{size}: grew {grew:.3} ms, serialisation predicts {expected:.3}"
        );
    }
}

#[test]
fn latency_under_load_shows_the_bottleneck_queue() {
    if !lab_allowed() {
        return;
    }
    let _serial = serial();
    // 10 Mbit/s with a 100 ms queue; cubic fills it, so pings wait for
    // most of it under load.
    let _lab = lab_up("lp4", &format!("{TWO}rate = \"10M\"\nqueue_ms = 100\n"));
    let _server = KillOnDrop(serve_in("lp4", "b", "2001:2:0:1::2"));
    let o = sonde()
        .args(["lab", "exec", "--lab", "lp4", "a", "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args([
            "tcp",
            "2001:2:0:1::2",
            "-t",
            "5s",
            "-C",
            "cubic",
            "--latency",
            "-J",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let l = &r["summary"]["latency"];
    let idle = num(&l["idle"]["rtt_ms"]["p50"]);
    let idle_quickest = num(&l["idle"]["rtt_ms"]["min"]);
    let increase = num(&l["increase_ms"]);
    eprintln!(
        "10 Mbit/s, 100 ms queue: idle RTT {idle:.3} ms (quickest {idle_quickest:.3}), under TCP load +{increase:.1} ms"
    );
    // No delay on the path: idle, the RTT is the hosts' own, a fraction
    // of a millisecond at best; the median may take a loaded machine's
    // late wake-ups (3 ms).
    assert!(idle_quickest < 1.0, "idle quickest {idle_quickest} ms");
    assert!(idle < 3.0, "idle {idle} ms");
    // Never more than the queue holds (100 ms, and 10 for the hosts):
    // the invariant. Cubic's sawtooth keeps the queue between about 60
    // and 100 % full (62 ms measured here); 20 ms allows a sender that a
    // loaded machine slowed.
    assert!((20.0..=110.0).contains(&increase), "increase {increase} ms");
}

#[test]
fn requests_carry_the_dscp_asked_for() {
    if !lab_allowed() {
        return;
    }
    let _serial = serial();
    let _lab = lab_up("lp5", TWO);
    for rule in [
        "add table inet t",
        "add chain inet t in { type filter hook input priority 0; }",
        "add rule inet t in icmpv6 type echo-request ip6 dscp ef counter",
        "add rule inet t in icmp type echo-request ip dscp af41 counter",
    ] {
        let o = lab(&["exec", "--lab", "lp5", "b", "--", "nft", rule]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let ef = sonde_ping(
        "lp5",
        &["-c", "7", "-i", "5ms", "-S", "EF", "2001:2:0:1::2"],
    );
    let af41 = sonde_ping("lp5", &["-c", "5", "-i", "5ms", "-S", "AF41", "198.18.1.2"]);
    let o = lab(&[
        "exec", "--lab", "lp5", "b", "--", "nft", "list", "chain", "inet", "t", "in",
    ]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "nft list chain: {}", stderr(&o));
    // Each rule's count of marked requests that reached b.
    let counted = |rule: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.contains(rule))
            .unwrap_or_else(|| panic!("no rule {rule}: {text}"));
        common::lab_cli::nft_counted(line) as f64
    };
    // Every request sent carries the mark asked for: the requests sonde
    // counts sent (exactly -c) are the marked ones b counted, on a link
    // that loses nothing. Whatever was answered was counted first.
    for (rule, r, asked) in [("dscp ef", &ef, 7.0), ("dscp af41", &af41, 5.0)] {
        let rt = &r["summary"]["round_trip"];
        assert_eq!(num(&rt["sent_packets"]), asked, "{rt}");
        assert_eq!(counted(rule), asked, "{rule}: {text}");
        assert!(num(&rt["received_packets"]) <= counted(rule), "{rt}");
    }
}

/// `-t` sets the TTL / hop limit of the requests: across one router, 1
/// dies at the router (its "time exceeded" is no answer) and 2 arrives.
#[test]
fn a_ttl_of_1_dies_at_the_first_router_and_2_gets_through() {
    if !lab_allowed() {
        return;
    }
    let _serial = serial();
    let _lab = lab_up(
        "lp5",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"r\"\nkind = \"router\"\n[[node]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"r\"\n[[link]]\na = \"r\"\nb = \"b\"\n",
    );
    // b is at the far end of link 2.
    for target in ["2001:2:0:2::2", "198.18.2.2"] {
        let answered = |ttl: &str| {
            // -W 2s, not 300 ms: on a loaded machine an answer may come
            // later than 300 ms, and TTL 2's must all be counted.
            let r = sonde_ping(
                "lp5",
                &["-c", "5", "-i", "20ms", "-W", "2s", "-t", ttl, target],
            );
            assert_eq!(r["summary"]["round_trip"]["sent_packets"], 5, "{r}");
            r["summary"]["round_trip"]["received_packets"].clone()
        };
        assert_eq!(answered("1"), 0, "{target}: TTL 1 passed a router");
        assert_eq!(answered("2"), 5, "{target}: TTL 2 did not arrive");
    }
}
