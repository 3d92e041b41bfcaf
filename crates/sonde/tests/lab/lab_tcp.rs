//! Lab test: a link shaped to 20 Mbit/s with TBF must measure as
//! 18–20 Mbit/s of TCP goodput (headers take ~4–6 % of the line rate:
//! 1448 of 1514 bytes per frame over IPv4, 1428 over IPv6), over both
//! address families and both directions. Needs root; set
//! `SONDE_LAB=skip` to skip on a machine without it.

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
    let shaped = Link {
        rate: Some(Rate::from_bps(20_000_000)),
    };
    let pair = Pair::new(20, shaped, shaped).expect("build the lab pair");
    let mut server_cmd = pair.b.command(env!("CARGO_BIN_EXE_sonde"));
    server_cmd.env_remove("SONDE_LOG");
    let server = ServerProc::start_with(server_cmd, &["--bind", &pair.b6, "--bind", &pair.b4], &[]);
    let port = server.port.to_string();
    let mut failures = Vec::new();
    for (host, extra) in [(&pair.b6, None), (&pair.b4, None), (&pair.b6, Some("-R"))] {
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
        eprintln!("{host} {extra:?}: {got:.2} Mbit/s");
        if !(18.0..=20.0).contains(&got) {
            failures.push(format!("{host} {extra:?}: {got:.2} Mbit/s"));
        }
    }
    drop(server);
    assert!(
        failures.is_empty(),
        "outside 18.0–20.0 Mbit/s: {failures:?}"
    );
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
    // 10 Mbit/s for 1 s is ~860 full-size segments each time.
    assert!(
        counts.iter().all(|&c| c > 500),
        "EF, label, AF41 packets seen at the server: {counts:?}"
    );
    // -R: the server marks what it sends.
    run(&pair.b6, &["-S", "EF", "-R"]);
    let back = count_input(&pair.a, &[ef]);
    assert!(back[0] > 500, "EF packets seen at the client: {back:?}");
}
