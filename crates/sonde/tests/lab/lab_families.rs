//! `--families 6,4` against the header arithmetic: a router shaping to
//! 10 Mbit/s with TBF, which counts each IP packet plus its 14-byte
//! Ethernet header. Offered 20 Mbit/s of 64-byte payloads, IPv6 gets
//! 64/(64+8+40+14) of the rate as goodput and IPv4 64/(64+8+20+14), so
//! the IPv6/IPv4 goodput ratio must be 106/126 = 0.8413. The runs must
//! alternate 6, 4, 6, 4. Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::{lab_allowed, lab_server};
use sonde_lab::{Chain, Link};
use sonde_model::Rate;
use std::path::PathBuf;

/// `/etc/netns/NS/hosts`: `ip netns exec NS` shows it as `/etc/hosts`,
/// so a name can carry both of a lab node's addresses (as a real host
/// name has AAAA and A records). Removed on drop.
struct NetnsHosts(PathBuf);

impl NetnsHosts {
    fn write(ns: &str, body: &str) -> Self {
        let dir = PathBuf::from("/etc/netns").join(ns);
        std::fs::create_dir_all(&dir).expect("create /etc/netns/NS");
        std::fs::write(dir.join("hosts"), body).expect("write the namespace's hosts");
        Self(dir)
    }
}

impl Drop for NetnsHosts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn the_ipv6_over_ipv4_ratio_follows_the_headers() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let shaped = Link {
        rate: Some(Rate::from_bps(10_000_000)),
    };
    let chain = Chain::new(46, shaped, Link::default()).expect("build the lab chain");
    let server = lab_server(&chain.b, &[&chain.b6, &chain.b4]);
    let _hosts = NetnsHosts::write(
        chain.a.name(),
        &format!(
            "127.0.0.1 localhost\n::1 localhost\n{} fam-b\n{} fam-b\n",
            chain.b6, chain.b4
        ),
    );
    let out = chain
        .a
        .command(env!("CARGO_BIN_EXE_sonde"))
        .args(["udp", "fam-b", "-p", &server.port.to_string(), "-J"])
        .args(["-t", "4", "-b", "20M", "-l", "64"])
        .args(["--families", "6,4", "--repeat", "2"])
        .output()
        .expect("run sonde udp in the lab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    common::schema::assert_valid(&common::schema::method_v1(), &doc);

    let order: Vec<&str> = doc["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["spec"]["family"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["v6", "v4", "v6", "v4"], "runs alternate");
    // The arithmetic below holds while the shaper, not the sender, sets
    // the rate: each run's sender past 1.2 times its family's share of
    // the shaper (20 Mbit/s asked of 64-byte payloads, 39 kpps; the
    // shaper passes 9.9 kpps of IPv6, 11.8 of IPv4), or the run says
    // nothing of the headers.
    for t in doc["trials"].as_array().unwrap() {
        let per_packet = if t["spec"]["family"] == "v6" {
            126.0
        } else {
            106.0
        };
        let share = 10e6 * 64.0 / per_packet;
        let offered = f(&t["summary"]["forward"]["sender_throughput_bps"]);
        assert!(
            offered >= 1.2 * share,
            "{} run: the sender reached {offered:.0} bit/s, not past the shaper's {share:.0}",
            t["spec"]["family"]
        );
    }

    let goodput = |fam: &str| {
        let s = doc["runs"]["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["family"] == fam)
            .unwrap_or_else(|| panic!("no {fam} stats"));
        f(&s["stats"]["throughput_bps"]["mean"])
    };
    let (v6, v4) = (goodput("v6"), goodput("v4"));
    let ratio = doc["family_ratios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "throughput_bps" && r.get("at").is_none())
        .map(|r| f(&r["ratio"]))
        .expect("a goodput ratio");
    let expected = (64.0 + 8.0 + 20.0 + 14.0) / (64.0 + 8.0 + 40.0 + 14.0);
    eprintln!(
        "TBF 10 Mbit/s, 20M of 64-byte payloads: IPv6 {v6:.0} bit/s (expected {:.0}), \
         IPv4 {v4:.0} bit/s (expected {:.0}), ratio {ratio:.4} (expected {expected:.4})",
        10e6 * 64.0 / 126.0,
        10e6 * 64.0 / 106.0
    );
    assert!((ratio - v6 / v4).abs() < 1e-9, "the ratio is of the means");
    // Both families meet the same shaper under the same load, so what
    // the machine does to one it does to the other: 1 %.
    assert!(
        (ratio - expected).abs() / expected < 0.01,
        "ratio {ratio:.4}, expected {expected:.4}"
    );
    // Each family's goodput is the shaper's rate at its header share:
    // never more (3 % for TBF's start burst and the receive window), and
    // no more than 5 % less (drops on a loaded host only lower it).
    for (got, per_packet) in [(v6, 126.0), (v4, 106.0)] {
        let want = 10e6 * 64.0 / per_packet;
        assert!(
            got <= want * 1.03 && got >= want * 0.95,
            "{got:.0} bit/s, expected {want:.0}"
        );
    }
}
