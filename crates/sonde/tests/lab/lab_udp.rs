//! Lab tests of `sonde udp` against known truths on emulated paths:
//! a router shaping to 9 Mbit/s with TBF, random loss injected with
//! nftables, DSCP rewritten on the path (and which way, by STAMP's Class
//! of Service TLV), and an on/off profile.
//! Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_cli::{lab_up, remarks, serve_in, udp_in, KillOnDrop};
use common::{lab_allowed, lab_json, lab_server, u};
use sonde_lab::{Chain, Link};
use sonde_model::Rate;

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_nine_megabit_shaper_passes_what_it_should() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let shaped = Link {
        rate: Some(Rate::from_bps(9_000_000)),
    };
    let chain = Chain::new(30, shaped, Link::default()).expect("build the lab chain");
    let server = lab_server(&chain.b, &[&chain.b6, &chain.b4]);
    let port = server.port;

    // Below the shaper's rate nothing is lost: TBF, counted at the
    // router, drops nothing, and sonde counts every packet sent as
    // received or lost. What it finds lost beyond TBF's drops is the
    // loaded host's (a packet or two of 1,339).
    let r = lab_json(&chain.a, "udp", &chain.b6, port, &["-t", "3s", "-b", "5M"]);
    let s = &r["summary"]["forward"];
    let (sent, received, lost) = (
        u(&s["sent_packets"]),
        u(&s["received_packets"]),
        u(&s["lost_packets"]),
    );
    let shaper_drops = tbf_dropped(&chain);
    assert_eq!(shaper_drops, 0, "TBF dropped below its rate");
    assert_eq!(received + lost, sent, "{s}");
    assert!(lost <= shaper_drops + 2, "{s}");
    let pdr = f(&s["pdr_pct"]);
    assert!(
        (pdr - 100.0 * received as f64 / sent as f64).abs() < 1e-6 && pdr >= 99.8,
        "PDR {pdr} %: {s}"
    );

    // At twice the rate, the receiver gets what TBF lets through: 9 Mbit/s
    // of frames, of which payload is 1400 / (1400 + 8 UDP + 40 IPv6 + 14
    // Ethernet) bytes.
    let r = lab_json(
        &chain.a,
        "udp",
        &chain.b6,
        port,
        &["-t", "5s", "-b", "18M", "-l", "1400"],
    );
    let s = &r["summary"]["forward"];
    let expected = 9e6 * 1400.0 / 1462.0;
    let got = f(&s["throughput_bps"]);
    eprintln!(
        "18 Mbit/s into 9: received {got:.0} bit/s (expected {expected:.0}), PDR {:.2} %",
        f(&s["pdr_pct"])
    );
    // TBF passes no more than its rate (3 % for its 2 ms burst and the
    // receive window's edges); a loaded host only loses more (5 %).
    assert!(
        got <= expected * 1.03 && got >= expected * 0.95,
        "received {got:.0} bit/s, expected {expected:.0}"
    );
    // The share delivered of what the sender achieved (not of the 18
    // Mbit/s asked: a loaded sender may fall short): 2 pp above, 3 below.
    let expected_pdr = 100.0 * expected / f(&s["sender_throughput_bps"]);
    let pdr = f(&s["pdr_pct"]);
    assert!(
        pdr - expected_pdr < 2.0 && expected_pdr - pdr < 3.0,
        "PDR {pdr:.2} %, expected {expected_pdr:.2} %"
    );

    // On/off: the per-interval series alternates between the rate and zero.
    let r = lab_json(
        &chain.a,
        "udp",
        &chain.b4,
        port,
        &["-t", "4s", "-b", "2M", "--profile", "onoff:1s/1s"],
    );
    let rates: Vec<f64> = r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| f(&i["sums"][0]["throughput_bps"]))
        .collect();
    eprintln!("on/off interval rates: {rates:?}");
    assert_eq!(rates.len(), 4, "{rates:?}");
    // The receiver's intervals start when it does, the profile's phases
    // when the sender does: on a loaded machine tens of milliseconds
    // apart, which moves the end of each burst into the following off
    // interval. A burst's packets are in its on interval or the next, so
    // each on/off pair carries one second at 2 Mbit/s (2 %: 1400-byte
    // packets, 178 or 179 a burst); 150 ms of misalignment is allowed.
    for (k, pair) in rates.chunks(2).enumerate() {
        let [on, off] = pair else { panic!("{rates:?}") };
        assert!(
            ((on + off) / 2e6 - 1.0).abs() < 0.02,
            "on/off pair {k} carries {} bit/s: {rates:?}",
            on + off
        );
        assert!(*on >= 0.85 * 2e6, "on interval {}: {rates:?}", 2 * k);
        assert!(*off <= 0.15 * 2e6, "off interval {}: {rates:?}", 2 * k + 1);
    }
}

/// The packets TBF dropped on the router's egress towards b
/// (`tc -s qdisc`: each qdisc's "dropped N").
fn tbf_dropped(chain: &Chain) -> u64 {
    let out = chain
        .r
        .run("tc", &["-s", "qdisc", "show", "dev", "to_b"])
        .expect("tc -s qdisc");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let drops: Vec<u64> = text
        .split("(dropped ")
        .skip(1)
        .filter_map(|rest| rest.split(',').next()?.trim().parse().ok())
        .collect();
    assert!(!drops.is_empty(), "no drop count in {text}");
    drops.iter().sum()
}

#[test]
fn injected_random_loss_is_measured() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let chain = Chain::new(32, Link::default(), Link::default()).expect("build the lab chain");
    router_pass_chain(&chain);
    // The data packets only (108-byte UDP datagrams; a test's 30-byte
    // hellos pass), each drop counted.
    chain
        .router_nft(
            "add rule inet lab pass meta l4proto udp udp length > 64 \
             numgen random mod 1000 < 50 counter drop",
        )
        .unwrap();
    let server = lab_server(&chain.b, &[&chain.b6]);
    // 100-byte payloads at 20 Mbit/s for 5 s: 125,000 packets.
    let r = lab_json(
        &chain.a,
        "udp",
        &chain.b6,
        server.port,
        &["-t", "5s", "-b", "20M", "-l", "100"],
    );
    let s = &r["summary"]["forward"];
    let (sent, received, lost) = (
        u(&s["sent_packets"]),
        u(&s["received_packets"]),
        u(&s["lost_packets"]),
    );
    assert!(sent >= 100_000, "{s}");
    let loss = f(&s["loss_pct"]);
    let dropped = router_counted(&chain);
    eprintln!("injected 5 %: measured {loss:.3} % over {sent} packets; the rule dropped {dropped}");
    // The truth is what the rule dropped: every one of those is lost, and
    // at most 0.2 % of the run more (a loaded host's own drops, which only
    // add). Each packet sent is received or lost.
    assert_eq!(received + lost, sent, "{s}");
    assert!(
        lost >= dropped && lost - dropped <= sent / 500,
        "{lost} lost, {dropped} dropped by the rule: {s}"
    );
    assert!(
        (loss - 100.0 * lost as f64 / sent as f64).abs() < 1e-6,
        "{s}"
    );
    assert!((f(&s["pdr_pct"]) + loss - 100.0).abs() < 1e-6);
    // The rule's own draw: binomial, σ = √(n · 0.05 · 0.95) = 77 packets
    // at n = 125,000 (0.062 pp); 4.5 σ.
    let n = sent as f64;
    let tol = 4.5 * (n * 0.05 * 0.95).sqrt();
    assert!(
        (dropped as f64 - 0.05 * n).abs() <= tol,
        "{dropped} dropped of {sent}, 5 % ± {tol:.0}"
    );
    // So the measured loss is the injected 5 % to within 0.3 + 0.2 pp.
    assert!(
        (loss - 5.0).abs() <= 0.5,
        "measured loss {loss:.3} %, injected 5 %"
    );
}

/// The router's `inet lab pass` chain, on the forward hook: where each
/// test puts its rules.
fn router_pass_chain(chain: &Chain) {
    chain.router_nft("add table inet lab").unwrap();
    chain
        .router_nft("add chain inet lab pass { type filter hook forward priority 0; }")
        .unwrap();
}

/// The packets the router's rules counted (`counter`), summed.
fn router_counted(chain: &Chain) -> u64 {
    let out = chain
        .r
        .run("nft", &["list", "chain", "inet", "lab", "pass"])
        .expect("nft list chain");
    common::lab_cli::nft_counted(&String::from_utf8_lossy(&out.stdout))
}

/// The sender's live lines show the loss its receiver counted in each
/// interval, while the test runs: 5 % dropped on the router.
#[test]
fn a_sender_sees_each_interval_s_loss_live() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let chain = Chain::new(74, Link::default(), Link::default()).expect("build the lab chain");
    router_pass_chain(&chain);
    chain
        .router_nft("add rule inet lab pass meta l4proto udp numgen random mod 1000 < 50 drop")
        .unwrap();
    let server = lab_server(&chain.b, &[&chain.b6]);
    // 100-byte payloads at 4 Mbit/s: 5,000 packets a second, so each
    // interval's loss has a σ of 0.3 points around 5 %.
    let out = chain
        .a
        .command(env!("CARGO_BIN_EXE_sonde"))
        .args(["udp", &chain.b6, "-p", &server.port.to_string()])
        .args(["-t", "3s", "-b", "4M", "-l", "100"])
        .output()
        .expect("run sonde in the lab");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The live lines, before the summary.
    let live = text
        .split("Received by the server")
        .next()
        .unwrap_or_default();
    let losses: Vec<(f64, f64)> = live
        .lines()
        .filter_map(|l| l.split(", lost ").nth(1))
        .map(|rest| {
            let (lost, rest) = rest.split_once('/').expect("lost/total");
            let total = rest.split(' ').next().expect("total");
            let (lost, total): (f64, f64) = (lost.parse().unwrap(), total.parse().unwrap());
            (lost * 100.0 / total, total)
        })
        .collect();
    eprintln!("injected 5 %: live interval loss {losses:.2?}");
    assert_eq!(losses.len(), 3, "{text}");
    // Each interval's loss is binomial over its own count (5,000 due):
    // σ = √(0.05 · 0.95 / n) = 0.31 pp; 4.5 σ (1.4 pp), and 0.6 pp (30
    // packets, 6 ms) for packets a loaded receiver counts in the
    // neighbouring interval, which move single intervals either way.
    for &(loss, total) in &losses {
        let tol = 4.5 * (0.05 * 0.95 / total).sqrt() * 100.0 + 0.6;
        assert!(
            (loss - 5.0).abs() <= tol,
            "{loss:.2} % of {total} lost, 5 % ± {tol:.2}: {text}"
        );
    }
}

#[test]
fn dscp_rewritten_on_the_path_is_reported() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let chain = Chain::new(34, Link::default(), Link::default()).expect("build the lab chain");
    let server = lab_server(&chain.b, &[&chain.b6]);
    let port = server.port;
    let args = ["-t", "2s", "-b", "1M", "-S", "EF"];
    let clean = lab_json(&chain.a, "udp", &chain.b6, port, &args);
    let s = &clean["summary"]["forward"];
    assert!(remarks(s).is_empty(), "{s}");
    assert_eq!(u(&s["dscp_received"]["46"]), u(&s["received_packets"]));

    router_pass_chain(&chain);
    chain
        .router_nft("add rule inet lab pass ip6 dscp ef ip6 dscp set cs0")
        .unwrap();
    let remarked = lab_json(&chain.a, "udp", &chain.b6, port, &args);
    let s = &remarked["summary"]["forward"];
    let remarks = remarks(s);
    assert_eq!(remarks.len(), 1, "{s}");
    assert_eq!(remarks[0]["sent"], 46);
    assert_eq!(remarks[0]["received"], 0);
    assert_eq!(
        u(&remarks[0]["packets"]),
        u(&s["received_packets"]),
        "every EF packet remarked"
    );
    // EF (46) arrived as CS0 (0) in 100.0 % of the EF packets received.
    let ef = s["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["dscp"] == 46)
        .unwrap_or_else(|| panic!("no EF class: {s}"));
    let share = f(&remarks[0]["packets"]) * 100.0 / f(&ef["received_packets"]);
    assert_eq!(format!("{share:.1}"), "100.0", "{s}");

    // STAMP with RFC 8972's Class of Service TLV tells which way was
    // remarked: the reflector says what each request arrived with, the
    // replies (asked to carry EF) arrive back with what the way back left.
    let stamp = |rule: &str| -> serde_json::Value {
        chain.router_nft("flush chain inet lab pass").unwrap();
        chain
            .router_nft(&format!("add rule inet lab pass {rule}"))
            .unwrap();
        let args = [
            "--proto", "udp", "--cos", "-S", "EF", "-c", "5", "-i", "50ms",
        ];
        let r = lab_json(&chain.a, "ping", &chain.b6, 862, &args);
        assert_eq!(r["summary"]["round_trip"]["received_packets"], 5, "{r}");
        r["series"][0]["cos"].clone()
    };
    let forward = stamp(&format!(
        "ip6 daddr {} ip6 dscp ef ip6 dscp set cs0",
        chain.b6
    ));
    assert_eq!(
        forward["at_reflector"],
        serde_json::json!({"0": 5}),
        "{forward}"
    );
    assert_eq!(
        forward["returned"],
        serde_json::json!({"46": 5}),
        "{forward}"
    );
    let back = stamp(&format!(
        "ip6 saddr {} ip6 dscp ef ip6 dscp set af11",
        chain.b6
    ));
    assert_eq!(back["at_reflector"], serde_json::json!({"46": 5}), "{back}");
    assert_eq!(back["returned"], serde_json::json!({"10": 5}), "{back}");
}

/// The video profile's loss per frame type behind a policer: I frames
/// (32 packets of 1200 bytes in a 40 ms frame time: 8 Mbit/s while they
/// last) overrun a 2.4 Mbit/s policer with a 6 KB bucket; P frames (3
/// Mbit/s, within bucket and rate) and B frames (1 Mbit/s) pass.
#[test]
fn a_policer_hits_the_large_i_frames_most() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let _lab = lab_up(
        "lvf",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
         [link.a_to_b]\npolicer = [{ rate = \"2.4M\", burst = \"6K\" }]\n",
    );
    let _server = KillOnDrop(serve_in("lvf", "b", "::"));
    let r = udp_in(
        "lvf",
        "a",
        "2001:2:0:1::2",
        &["-t", "4s", "--profile", "video", "-b", "2M", "-l", "1200"],
    );
    let frames = r["summary"]["forward"]["frames"]
        .as_array()
        .expect("frames");
    let loss: Vec<(&str, f64)> = frames
        .iter()
        .map(|x| (x["frame"].as_str().unwrap(), f(&x["loss_pct"])))
        .collect();
    eprintln!("policed at 2.4 Mbit/s: loss per frame type {loss:?}");
    let [("I", i), ("P", p), ("B", b)] = loss[..] else {
        panic!("{loss:?}");
    };
    // An I frame is 32 × 1248 = 39,936 bytes at the IP layer over 40 ms;
    // the policer passes its 6,000-byte bucket and 40 ms of 2.4 Mbit/s
    // (12,000 bytes): 1 − 18,000 / 39,936 = 55 % lost (measured 57–61 %:
    // the emulator's bucket and the sender's timing are not exact). 10
    // points below that; above, up to 80 %: a sender catching up after a
    // stall on a loaded machine bunches its packets, which only loses
    // more. A P frame (14,976 bytes) and a B frame (4,992) fit; the B
    // frame right after an I frame finds the bucket nearly empty and may
    // lose a packet or two of its 4 (about 8 such frames of ~270 B
    // packets: 3–6 %), more after a stall: P under 5 %, B under 10 %.
    assert!((45.0..=80.0).contains(&i), "{loss:?}");
    assert!(p < 5.0 && b < 10.0, "{loss:?}");
    // Whatever the machine, the policer hits I frames most.
    assert!(i > 5.0 * p.max(b), "{loss:?}");
    // The classes say the same per DSCP.
    let classes = &r["summary"]["forward"]["classes"];
    assert_eq!(classes[0]["loss_pct"], frames[0]["loss_pct"]);
}

/// `sonde ARGS…` outside the lab (on the archive the lab's tests kept):
/// what it printed.
fn sonde_ok(args: &[&str]) -> String {
    let out = common::sonde().args(args).output().expect("run sonde");
    assert!(
        out.status.success(),
        "sonde {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The longest loss burst (RFC 3357's loss period), measured against a
/// router that drops two runs of known length (50 and 10 packets, by the
/// sequence number in each test packet's header), then kept, summarised
/// and compared through the metric registry like any other figure.
#[test]
fn a_loss_burst_is_measured_as_its_length_kept_and_compared() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let chain = Chain::new(32, Link::default(), Link::default()).expect("build the lab chain");
    router_pass_chain(&chain);
    // A test packet: magic "SU" at payload byte 0, the sequence number's
    // low 32 bits at payload bytes 12..16 (after the 8-byte UDP header).
    for run in ["1000-1049", "3000-3009"] {
        chain
            .router_nft(&format!(
                "add rule inet lab pass meta l4proto udp @th,64,16 0x5355 @th,160,32 {run} \
                 counter drop"
            ))
            .unwrap();
    }
    let server = lab_server(&chain.b, &[&chain.b6]);
    let dir = common::TempDir::new("burst");
    let db = dir.join("bursts.db");
    let db = db.to_str().unwrap();
    let run = |label: &str| {
        let r = lab_json(
            &chain.a,
            "udp",
            &chain.b6,
            server.port,
            &[
                "-t",
                "2s",
                "-b",
                "5M",
                "-l",
                "100",
                "--archive-to",
                db,
                "--label",
                label,
            ],
        );
        r["summary"]["forward"].clone()
    };
    let s = run("path=bursty");
    let (burst, lost) = (u(&s["loss_burst_max"]), u(&s["lost_packets"]));
    let dropped = router_counted(&chain);
    eprintln!("loss burst: {burst} packets, {lost} lost, {dropped} dropped by the router");
    // The truth: 60 dropped in runs of 50 and 10. A loaded host may lose
    // more (never fewer), which can only lengthen a run by as many.
    assert_eq!(dropped, 60, "{s}");
    assert!(u(&s["sent_packets"]) > 3_010, "{s}");
    assert!(
        burst >= 50 && burst - 50 <= lost - 60,
        "longest burst {burst}, {lost} lost: {s}"
    );
    chain.router_nft("flush chain inet lab pass").unwrap();
    let clean = run("path=clean");
    let clean_burst = u(&clean["loss_burst_max"]);
    assert!(
        clean_burst <= u(&clean["lost_packets"]),
        "no run dropped, yet {clean_burst}: {clean}"
    );

    // Kept and summarised by the registry's name and short name.
    let archive = format!("--archive={db}");
    let stats: serde_json::Value = serde_json::from_str(&sonde_ok(&[
        "results",
        &archive,
        "stats",
        "--metric",
        "burst",
        "--by",
        "label:path",
        "-J",
    ]))
    .unwrap();
    assert_eq!(stats["metric"], "loss_burst_max", "{stats}");
    let mean_of = |group: &str| {
        stats["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["group"] == group)
            .map(|g| f(&g["mean"]))
    };
    assert_eq!(mean_of("bursty"), Some(burst as f64), "{stats}");
    assert_eq!(mean_of("clean"), Some(clean_burst as f64), "{stats}");
    // Compared: clean against bursty.
    let cmp: serde_json::Value = serde_json::from_str(&sonde_ok(&[
        "compare",
        &archive,
        "path=clean",
        "path=bursty",
        "--metric",
        "burst",
        "--format",
        "json",
    ]))
    .unwrap();
    let row = cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "burst")
        .unwrap_or_else(|| panic!("a burst row: {cmp}"));
    assert_eq!(row["unit"], "packets", "{row}");
    assert_eq!(f(&row["a"]["mean"]), clean_burst as f64, "{row}");
    assert_eq!(f(&row["b"]["mean"]), burst as f64, "{row}");
}
