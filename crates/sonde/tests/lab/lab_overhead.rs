//! `sonde overhead --measure` on lab paths of known encapsulation: a
//! 20 Mbit/s shaper counts 14 (Ethernet header) + 40 + 8 bytes per IPv6
//! UDP packet; through a VXLAN tunnel over IPv4 (made here with `ip`) it
//! also counts 20 + 8 + 8 + 14 of the tunnel. The per-packet bytes found
//! must be within 2 of each, and the stack named. The lab and the
//! measurements are docs/methods.md's walkthrough `ovhm`, run as written.
//! Needs root; `SONDE_LAB=skip` skips elsewhere.
//!
//! The overhead comes from differences of goodput between sizes: h =
//! p·(C/g − 1), so at p = 200 bytes an error of 1 % in one goodput moves h
//! by 2.6 bytes. Each trial lasts 5 s, so that the edges of a receive
//! window (a late wake-up at its start or end on a loaded machine, 20 ms
//! is 0.4 % of 5 s) and TBF's 12 KB start burst (0.1 %) stay well under
//! that.

use crate::common;
use common::lab_cli::{lab_up, num, serve_in, udp_in, KillOnDrop};
use common::walkthrough::Walkthrough;
use common::{lab_allowed, sonde, stderr};
use serde_json::Value;

#[test]
fn measured_overhead_matches_the_known_encapsulation() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    // docs/methods.md's walkthrough `ovhm`: the lab, the tunnel made with
    // `ip`, a server on each path, and a measurement toward each.
    let walked = Walkthrough::named("docs/methods.md", "ovhm").run(&["overhead"]);
    let runs = walked.of("overhead");
    assert_eq!(runs.len(), 2, "toward the plain path and the tunnel");
    for (run, (host, known, stack)) in runs.iter().zip([
        ("2001:2:0:1::2", 14.0 + 40.0 + 8.0, "mac/ipv6/udp"),
        (
            "fd00:99::2",
            14.0 + 20.0 + 8.0 + 8.0 + 14.0 + 40.0 + 8.0,
            "mac/ipv4/udp/vxlan/ipv6/udp",
        ),
    ]) {
        assert!(run.words.iter().any(|w| w == host), "{}", run.at);
        let doc = run.json();
        common::schema::assert_method_v1(&doc);
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

/// A tunnel on a link (the lab's `tunnel` key: IPv6 in IPv6, 40 bytes a
/// packet, MTU 1400, its entrance at 2001:2:0:1::fd and 198.18.1.253)
/// behind a 10 Mbit/s policer: 9.5 Mbit/s of 1000-byte payloads are
/// 9.96 Mbit/s of IPv6 packets, under the policer's rate, but 10.34
/// with the tunnel's bytes, which the policer counts: 1 − 10 / 10.336 =
/// 3.25 % is lost. `sonde trace --mtu` finds the tunnel's 1400, told by
/// its entrance, over IPv6 and IPv4.
#[test]
fn a_tunnel_costs_its_bytes_at_the_policer_and_tells_its_mtu_from_its_entrance() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let _lab = lab_up(
        "ovht",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\n[link.a_to_b]\npolicer = [{ rate = \"10M\" }]\n\
         tunnel = { overhead = 40, mtu = 1400, address = [\"2001:2:0:1::fd\", \"198.18.1.253\"] }\n",
    );
    let b = "2001:2:0:1::2";
    let _server = KillOnDrop(serve_in("ovht", "b", b));
    let r = udp_in("ovht", "a", b, &["-b", "9.5M", "-l", "1000", "-t", "4s"]);
    let loss = num(&r["summary"]["forward"]["loss_pct"]);
    let expected = (1.0 - 10.0 / (9.5 * 1088.0 / 1000.0)) * 100.0;
    eprintln!("through the tunnel's policer: {loss:.2} % lost, expected {expected:.2} %");
    // Without the tunnel's bytes nothing would be lost. About 4,750
    // packets: 4.5 σ of a binomial count at 3.25 % is 1.2 points below;
    // above, a sender stalled on a loaded machine only adds (the bucket
    // fills for 10 ms of a stall and no more: a 50 ms stall costs about a
    // point), so 3 points are allowed.
    assert!(
        (expected - 1.2..=expected + 3.0).contains(&loss),
        "{loss} % lost, expected {expected:.2} %"
    );
    let sonde_exe = env!("CARGO_BIN_EXE_sonde");
    for (target, entrance) in [(b, "2001:2:0:1::fd"), ("198.18.1.2", "198.18.1.253")] {
        let out = sonde()
            .args(["lab", "exec", "--lab", "ovht", "a", "--", sonde_exe])
            .args(["trace", target, "--mtu", "-q", "1", "-J"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let t = &doc["trace"];
        assert_eq!(t["path_mtu"], 1400, "{t}");
        assert_eq!(t["mtu_steps"][0]["from"], entrance, "{t}");
        assert_eq!(t["mtu_steps"][0]["mtu"], 1400, "{t}");
    }
}
