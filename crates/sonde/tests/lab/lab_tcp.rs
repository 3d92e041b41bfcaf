//! Lab test: a link shaped with TBF to 20 Mbit/s from a to b and to
//! 8 Mbit/s from b to a must measure as its TCP goodput (headers take
//! ~4–6 % of the line rate: 1448 of 1514 bytes per frame over IPv4, 1428
//! over IPv6, so 19.13 and 18.86 Mbit/s a to b, 7.55 b to a), over both
//! address families and both directions: never more (the shaper's
//! invariant), and no more than 7 % less (a loaded machine's slow
//! recovery after a loss). Then a bidirectional UDP test over it, kept
//! in an archive: `results stats --by direction` gives each direction's
//! own goodput, 20 and 8 Mbit/s of frames (1400 of 1462 bytes payload),
//! within 5 %, never their sum. Needs root; set `SONDE_LAB=skip` to skip
//! on a machine without it.

use crate::common;
use common::{lab_allowed, u, ServerProc};
use sonde_lab::{Link, Pair};
use sonde_model::Rate;

fn mbps(r: &serde_json::Value) -> f64 {
    u(&r["summary"]["total"]["throughput_bps"]) as f64 / 1e6
}

#[test]
fn tbf_shaped_link_measures_its_rate() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let shaped = |mbps: u64| Link {
        rate: Some(Rate::from_bps(mbps * 1_000_000)),
    };
    let pair = Pair::new(20, shaped(20), shaped(8)).expect("build the lab pair");
    let mut server_cmd = pair.b.command(env!("CARGO_BIN_EXE_sonde"));
    server_cmd.env_remove("SONDE_LOG");
    let server = ServerProc::start_with(server_cmd, &["--bind", &pair.b6, "--bind", &pair.b4], &[]);
    let port = server.port.to_string();
    let mut failures = Vec::new();
    let (v6, v4) = (20.0 * 1428.0 / 1514.0, 20.0 * 1448.0 / 1514.0);
    for (host, extra, truth) in [
        (&pair.b6, None, v6),
        (&pair.b4, None, v4),
        (&pair.b6, Some("-R"), 8.0 * 1428.0 / 1514.0),
    ] {
        let mut cmd = pair.a.command(env!("CARGO_BIN_EXE_sonde"));
        cmd.args(["tcp", host, "-p", &port, "-t", "6s", "-O", "2s", "-J"]);
        cmd.args(extra);
        let out = cmd.output().expect("run sonde tcp in the lab");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let got = mbps(&r);
        eprintln!("{host} {extra:?}: {got:.2} Mbit/s (the link's TCP goodput {truth:.2})");
        // 2 % above for the receive window's edges over 6 s.
        if !(truth * 0.93..=truth * 1.02).contains(&got) {
            failures.push(format!(
                "{host} {extra:?}: {got:.2} Mbit/s, the link's {truth:.2}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "outside 93–102 % of the link's TCP goodput: {failures:?}"
    );

    // Both ways at once, 25 Mbit/s offered each way: each direction gets
    // what its shaper passes, and the archive keeps each on its own.
    let dir = common::TempDir::new("lab-bidir");
    let db = dir.join("bidir.db");
    let db = db.to_str().unwrap();
    let mut cmd = pair.a.command(env!("CARGO_BIN_EXE_sonde"));
    cmd.args([
        "udp", &pair.b6, "-p", &port, "--bidir", "-b", "25M", "-l", "1400",
    ]);
    cmd.args(["-t", "5s", "-O", "1s", "--archive-to", db]);
    let out = cmd.output().expect("run sonde udp --bidir in the lab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(server);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sonde"))
        .args([
            "results",
            "--archive-to",
            db,
            "stats",
            "--metric",
            "throughput",
        ])
        .args(["--by", "direction", "-J"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mean = |d: &str| {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["group"] == d)
            .and_then(|g| g["mean"].as_f64())
            .unwrap_or_else(|| panic!("no {d} group: {v}"))
            / 1e6
    };
    let payload = 1400.0 / 1462.0;
    for (d, truth) in [("forward", 20.0 * payload), ("reverse", 8.0 * payload)] {
        let got = mean(d);
        eprintln!("bidir UDP {d}: {got:.2} Mbit/s (the shaper's {truth:.2})");
        assert!(
            (truth * 0.95..=truth * 1.05).contains(&got),
            "{d}: {got:.2} Mbit/s, the shaper passes {truth:.2}: {v}"
        );
    }
    assert_eq!(v["groups"].as_array().unwrap().len(), 2, "{v}");
}

#[test]
fn namespaces_are_removed_even_when_a_test_fails() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let names = std::panic::catch_unwind(|| {
        let pair = Pair::new(21, Link::default(), Link::default()).unwrap();
        let names = (pair.a.name().to_string(), pair.b.name().to_string());
        std::panic::panic_any(names);
    })
    .unwrap_err();
    let (a, b) = names.downcast_ref::<(String, String)>().unwrap().clone();
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        !list.contains(&a) && !list.contains(&b),
        "left behind: {list}"
    );
}

/// Packets counted by an nftables rule `matcher` on `ns`'s input.
fn count_input(ns: &sonde_lab::Netns, matchers: &[&str]) -> Vec<u64> {
    let out = ns
        .run("nft", &["list", "chain", "inet", "sonde_t", "in"])
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    matchers
        .iter()
        .map(|m| {
            let line = text
                .lines()
                .find(|l| l.contains(m))
                .unwrap_or_else(|| panic!("no rule {m}: {text}"));
            let after = line.split("packets ").nth(1).unwrap();
            after.split_whitespace().next().unwrap().parse().unwrap()
        })
        .collect()
}

fn add_counters(ns: &sonde_lab::Netns, rules: &[&str]) {
    ns.run("nft", &["add", "table", "inet", "sonde_t"]).unwrap();
    ns.run(
        "nft",
        &["add chain inet sonde_t in { type filter hook input priority 0; }"],
    )
    .unwrap();
    for r in rules {
        ns.run("nft", &[&format!("add rule inet sonde_t in {r} counter")])
            .unwrap();
    }
}

#[test]
fn dscp_and_flow_label_are_on_the_wire() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let pair = Pair::new(22, Link::default(), Link::default()).expect("build the lab pair");
    let ef = "ip6 dscp ef";
    let label = "ip6 flowlabel 74565";
    let af41 = "ip dscp af41";
    add_counters(&pair.b, &[ef, label, af41]);
    add_counters(&pair.a, &[ef]);
    let mut server_cmd = pair.b.command(env!("CARGO_BIN_EXE_sonde"));
    server_cmd.env_remove("SONDE_LOG");
    let server = ServerProc::start_with(server_cmd, &["--bind", &pair.b6, "--bind", &pair.b4], &[]);
    let port = server.port.to_string();
    let run = |host: &str, args: &[&str]| {
        let mut cmd = pair.a.command(env!("CARGO_BIN_EXE_sonde"));
        cmd.args(["tcp", host, "-p", &port, "-t", "1s", "-b", "10M", "-J"])
            .args(args);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let r = run(&pair.b6, &["-S", "EF", "--flowlabel", "74565"]);
    assert_eq!(r["streams"][0]["client_socket"]["flowlabel"], 74565);
    let r4 = run(&pair.b4, &["-S", "AF41"]);
    assert_eq!(r4["streams"][0]["client_socket"]["dscp"], 34);
    let counts = count_input(&pair.b, &[ef, label, af41]);
    // Every byte the receiver got came in a marked segment, and with
    // offloads off each segment carries at most an MSS (1440 bytes over
    // IPv6, 1460 over IPv4, without options): at least received / MSS
    // marked packets, however fast the machine sent them. 10 Mbit/s for
    // 1 s is ~860 full-size segments; more than 100 even if slow start
    // and a loaded machine left most of the second unused.
    let segments =
        |r: &serde_json::Value, mss: u64| u(&r["summary"]["total"]["received_bytes"]).div_ceil(mss);
    let least = [segments(&r, 1440), segments(&r, 1440), segments(&r4, 1460)];
    assert!(
        counts.iter().zip(least).all(|(&c, l)| c >= l && c > 100),
        "EF, label, AF41 packets seen at the server: {counts:?}, at least {least:?}"
    );
    // -R: the server marks what it sends.
    let back_run = run(&pair.b6, &["-S", "EF", "-R"]);
    let back = count_input(&pair.a, &[ef]);
    let least = segments(&back_run, 1440);
    assert!(
        back[0] >= least && back[0] > 100,
        "EF packets seen at the client: {back:?}, at least {least}"
    );
}
