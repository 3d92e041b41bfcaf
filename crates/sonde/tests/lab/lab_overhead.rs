//! `sonde overhead --measure` on lab paths of known encapsulation: a
//! 20 Mbit/s shaper counts 14 (Ethernet header) + 40 + 8 bytes per IPv6
//! UDP packet; through a VXLAN tunnel over IPv4 (made here with `ip`) it
//! also counts 20 + 8 + 8 + 14 of the tunnel. The per-packet bytes found
//! must be within 2 of each, and the stack named. Needs root;
//! `SONDE_LAB=skip` skips elsewhere.
//!
//! The overhead comes from differences of goodput between sizes: h =
//! p·(C/g − 1), so at p = 200 bytes an error of 1 % in one goodput moves h
//! by 2.6 bytes. Each trial lasts 5 s, so that the edges of a receive
//! window (a late wake-up at its start or end on a loaded machine, 20 ms
//! is 0.4 % of 5 s) and TBF's 12 KB start burst (0.1 %) stay well under
//! that.

use crate::common;
use common::lab_cli::{lab_up, method_in, num, KillOnDrop};
use common::{lab_allowed, sonde, stderr};
use std::process::{Command, Stdio};

const PATH: &str = r#"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
a = "a"
b = "b"
rate = "20M"
"#;

fn ip(ns: &str, args: &str) {
    let out = Command::new("ip")
        .args(["-n", ns])
        .args(args.split_whitespace())
        .output()
        .unwrap();
    assert!(out.status.success(), "ip {args}: {}", stderr(&out));
}

fn serve_on(addr: &str, port: &str) -> KillOnDrop {
    KillOnDrop(
        sonde()
            .args(["lab", "exec", "--lab", "ovhlab", "b", "--"])
            .arg(env!("CARGO_BIN_EXE_sonde"))
            .args(["serve", "--bind", addr, "-p", port, "--no-reflector"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

fn measure(host: &str, port: &str) -> serde_json::Value {
    method_in(
        "ovhlab",
        "a",
        &[
            "overhead",
            "--measure",
            host,
            "-p",
            port,
            "--payloads",
            "200,600,1400",
            "-t",
            "5s",
            "--gap",
            "0.5s",
        ],
    )
}

#[test]
fn measured_overhead_matches_the_known_encapsulation() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let _lab = lab_up("ovhlab", PATH);
    let (a, b) = ("sonde-lab-ovhlab-a", "sonde-lab-ovhlab-b");
    ip(
        a,
        "link add vx0 type vxlan id 42 dstport 4789 local 198.18.1.1 remote 198.18.1.2",
    );
    ip(
        b,
        "link add vx0 type vxlan id 42 dstport 4789 local 198.18.1.2 remote 198.18.1.1",
    );
    ip(a, "addr add fd00:99::1/64 dev vx0 nodad");
    ip(b, "addr add fd00:99::2/64 dev vx0 nodad");
    ip(a, "link set vx0 up");
    ip(b, "link set vx0 up");
    let _plain = serve_on("2001:2:0:1::2", "5201");
    let _tunnel = serve_on("fd00:99::2", "5202");
    common::lab_cli::listening_in("ovhlab", "b", 5201);
    common::lab_cli::listening_in("ovhlab", "b", 5202);

    for (host, port, known, stack) in [
        ("2001:2:0:1::2", "5201", 14.0 + 40.0 + 8.0, "mac/ipv6/udp"),
        (
            "fd00:99::2",
            "5202",
            14.0 + 20.0 + 8.0 + 8.0 + 14.0 + 40.0 + 8.0,
            "mac/ipv4/udp/vxlan/ipv6/udp",
        ),
    ] {
        let doc = measure(host, port);
        let f = &doc["overhead"];
        let bytes = num(&f["per_packet_bytes"]);
        eprintln!(
            "overhead toward {host}: {bytes:.1} bytes per packet (known {known}), \
             bottleneck {:.2} Mbit/s, fits {}",
            num(&f["capacity_bps"]) / 1e6,
            f["fits"]
        );
        // The nearest other stacks lie a few bytes away (4 for a VLAN tag
        // or an FCS), so 2 bytes is about what naming the stack needs.
        assert!((bytes - known).abs() <= 2.0, "{bytes} bytes, known {known}");
        assert_eq!(f["fits"][0]["stack"], stack, "{}", f["fits"]);
        // TBF passes no more than 20 Mbit/s of the bytes it counts (2 %
        // for its burst and the window's edges); a sender short at the
        // smallest size on a loaded machine only lowers the fit (4 %).
        let capacity = num(&f["capacity_bps"]);
        assert!(
            (20e6 * 0.96..=20e6 * 1.02).contains(&capacity),
            "bottleneck {capacity} bit/s, the shaper's is 20e6"
        );
    }
}
