//! Each stack against hand arithmetic from its RFC, and the studies'
//! numbers exactly.

use super::measure::{fit, fit_points};
use super::*;
use sonde_model::method::OverheadPoint;
use sonde_model::{IpFamily, ResultId};

fn stack(s: &str) -> Stack {
    s.parse().unwrap_or_else(|e| panic!("{e}"))
}

fn wire(s: &str, payload: u32) -> u32 {
    stack(s).wire_bytes(payload)
}

#[test]
fn seed_000_openvpn_correction_1230_1302_1358_1414() {
    // 1230 bytes of TCP payload + 32 (TCP with timestamps) + 40 (IPv6);
    // the study's OpenVPN tunnel adds 56, twice where double-tunnelled.
    assert_eq!(wire("ipv6/tcp-ts", 1230), 1302);
    assert_eq!(wire("tunnel:56/ipv6/tcp-ts", 1230), 1358);
    let double = stack("tunnel:56/tunnel:56/ipv6/tcp-ts");
    assert_eq!(double.wire_bytes(1230), 1414);
    let f = correction_factor(&double, 1230);
    assert!((f - 1414.0 / 1302.0).abs() < 1e-12);
    assert_eq!(format!("{:.1}", (f - 1.0) * 100.0), "8.6");
    // Each layer's share, outermost first.
    let parts: Vec<(String, u32)> = double
        .breakdown(1230)
        .into_iter()
        .map(|l| (l.layer.to_string(), l.bytes))
        .collect();
    assert_eq!(
        parts,
        [
            ("tunnel:56".to_string(), 56),
            ("tunnel:56".to_string(), 56),
            ("ipv6".to_string(), 40),
            ("tcp-ts".to_string(), 32)
        ]
    );
}

#[test]
fn seed_002_table_1_efficiency_per_packet_size() {
    // 002 Table 1, to the four decimals it prints (truncated): the sizes
    // are frames without their FCS, plus FCS (4), preamble (8) and gap
    // (12); its 64-byte row counts the FCS inside the 64 bytes.
    let table = [
        (128, 0.8421),
        (256, 0.9142),
        (384, 0.9411),
        (512, 0.9552),
        (640, 0.9638),
        (768, 0.9696),
        (896, 0.9739),
        (1024, 0.9770),
        (1152, 0.9795),
        (1280, 0.9815),
        (1408, 0.9832),
    ];
    let trunc = |v: f64| (v * 10_000.0).floor() / 10_000.0;
    for (size, ratio) in table {
        assert_eq!(trunc(stack("l1/fcs").efficiency(size)), ratio, "{size}");
    }
    assert_eq!(trunc(stack("l1").efficiency(64)), 0.7619);
}

#[test]
fn ethernet_ip_and_transport_headers() {
    assert_eq!(wire("l1/eth/ipv6/udp", 1000), 1000 + 8 + 40 + 18 + 20);
    assert_eq!(wire("eth/ipv4/tcp", 1000), 1000 + 20 + 20 + 18);
    assert_eq!(wire("eth/vlan/ipv4/tcp-ts", 100), 100 + 32 + 20 + 4 + 18);
    // Frames under 64 bytes (FCS included) are padded to 64.
    assert_eq!(wire("eth/ipv4/udp", 10), 64);
    assert_eq!(wire("mac/ipv6/udp", 10), 10 + 8 + 40 + 14);
    // RFC 8200: extension headers in 8-byte units.
    assert_eq!(wire("ipv6:ext=16/udp", 100), 164);
}

#[test]
fn esp_pads_to_the_cipher_block_with_its_trailer_rfc_4303() {
    // SPI 4 + seq 4 + IV 16 + (1302 + 2 trailer → 1312, a multiple of
    // 16) + HMAC-SHA1-96 12 = 1348: 46 bytes on a 1302-byte packet.
    assert_eq!(wire("esp-tunnel:aes-cbc+sha1/ipv6/tcp-ts", 1230), 1348);
    assert_eq!(wire("ipv4/esp-tunnel:aes-cbc+sha1/ipv6/tcp-ts", 1230), 1368);
    // 3DES (8-byte IV and block) with HMAC-MD5-96: 8 + 8 + 104 + 12.
    assert_eq!(wire("esp-transport:3des+md5", 100), 132);
    // DES with HMAC-SHA-256-128: 8 + 8 + 104 + 16.
    assert_eq!(wire("esp-transport:des+sha256", 100), 136);
    // AES-GCM (RFC 4106): 8-byte IV, 4-byte alignment, 16-byte ICV.
    assert_eq!(wire("esp-transport:aes-gcm", 100), 8 + 8 + 104 + 16);
    assert_eq!(wire("esp-transport:aes-gcm", 102), 8 + 8 + 104 + 16);
    assert_eq!(wire("esp-transport:aes-gcm", 103), 8 + 8 + 108 + 16);
    // NULL encryption with HMAC-SHA-256: no IV, 4-byte alignment.
    assert_eq!(wire("esp-transport:null+sha256", 100), 8 + 104 + 16);
}

#[test]
fn tunnels_add_their_known_bytes() {
    // GRE (RFC 2784) 4, with key and sequence (RFC 2890) 12.
    assert_eq!(wire("gre", 100), 104);
    assert_eq!(wire("gre:key,seq", 100), 112);
    // VXLAN over IPv4: the well-known 50 bytes (20 + 8 + 8 + 14).
    assert_eq!(wire("ipv4/udp/vxlan", 100) - 100, 50);
    // WireGuard over IPv4: 60 bytes on a 16-aligned packet (20 + 8 + 16
    // + 16), plus padding to 16 otherwise.
    assert_eq!(wire("ipv4/udp/wireguard", 1280) - 1280, 60);
    assert_eq!(wire("ipv4/udp/wireguard", 1281) - 1281, 75);
    // 6in4 (RFC 4213): an IPv4 header.
    assert_eq!(wire("6in4/ipv6/udp", 100), 168);
    // OpenVPN AEAD: opcode + peer id 4, packet id 4, tag 16.
    assert_eq!(wire("openvpn:aes-256-gcm", 100), 124);
    // OpenVPN CBC: opcode 1, HMAC-SHA1 20, IV 16, then packet id 4 and
    // the packet, PKCS#7-padded: 104 → 112.
    assert_eq!(wire("openvpn:aes-cbc+sha1", 100), 1 + 20 + 16 + 112);
    // Blowfish (8-byte block): 104 → 112 as well; 100 + 4 = 104 is a
    // whole block, so PKCS#7 adds a whole block.
    assert_eq!(wire("openvpn:bf-cbc+sha1", 100), 1 + 20 + 8 + 112);
}

#[test]
fn bad_stacks_name_the_part() {
    let err = |s: &str| s.parse::<Stack>().unwrap_err();
    let e = err("eth/ipv6/udpp");
    assert_eq!((e.index, e.part.as_str()), (3, "udpp"));
    assert!(e.to_string().contains("'udpp' is not a layer"), "{e}");
    assert!(err("eth//udp").to_string().contains("part 2"));
    assert!(err("esp-tunnel/ipv6").reason.contains("needs its cipher"));
    assert!(err("esp-tunnel:aes-cbc+sha1/tcp")
        .reason
        .contains("tunnel mode carries an inner IP packet"));
    assert!(err("esp-transport:aes-cbc+sha1/ipv4")
        .reason
        .contains("transport mode"));
    assert!(err("esp-tunnel:aes-gcm+sha1/ipv6")
        .reason
        .contains("authenticates itself"));
    assert!(err("openvpn:rot13").reason.contains("not a cipher"));
    assert!(err("ipv6:ext=5").reason.contains("multiples of 8"));
    assert!(err("tunnel:x").reason.contains("tunnel:BYTES"));
    assert!(err("udp:x").reason.contains("takes no option"));
    // Written back as read.
    let s = "l1/eth/ipv4/esp-tunnel:aes-cbc+sha1/ipv6:ext=8/tcp-ts";
    assert_eq!(stack(s).to_string(), s);
}

#[test]
fn the_fit_recovers_capacity_and_overhead_and_names_the_stack() {
    // A Linux shaper at 50 Mbit/s counts 14 + 40 + 8 bytes beyond the
    // payload of IPv6 UDP.
    let g = |p: f64| 50e6 * p / (p + 62.0);
    let (c, h) = fit(&[(200.0, g(200.0)), (600.0, g(600.0)), (1400.0, g(1400.0))]).unwrap();
    assert!((c - 50e6).abs() < 1.0 && (h - 62.0).abs() < 1e-6, "{c} {h}");
    let points = [200, 600, 1400]
        .into_iter()
        .map(|p| OverheadPoint {
            payload_bytes: p,
            goodput_bps: g(f64::from(p)),
            trial: ResultId::random(),
        })
        .collect();
    let f = fit_points(points, IpFamily::V6).unwrap();
    assert!((f.beyond_ip_bytes - 14.0).abs() < 1e-6);
    assert_eq!(f.fits[0].stack, "mac/ipv6/udp");
    assert!(f.residual_pct < 1e-9);
    // One size gives no fit.
    assert!(fit(&[(200.0, 1e6)]).is_none());
}

#[test]
fn run_overhead_measures_each_size_through_the_runner() {
    use crate::scripted::{Limit, PathDir, ScriptedPath};
    use sonde_model::method::OverheadSpec;
    use sonde_model::UdpSpec;
    use sonde_run::{Events, Stop};
    let mut dir = PathDir::new(Limit::Policer, 50e6);
    dir.l2_bytes = 14;
    dir.sender_max_bps = 1e9;
    let path = ScriptedPath::symmetric(dir);
    let spec = OverheadSpec {
        probe: UdpSpec {
            host: "2001:db8::2".into(),
            bitrate: sonde_model::Rate::from_bps(0),
            ..UdpSpec::default()
        },
        payloads: vec![200, 600, 1400],
        gap: std::time::Duration::ZERO,
    };
    let (r, heard) =
        crate::scripted::method_events(|events| run_overhead(&path, &spec, &Stop::new(), events));
    let r = r.unwrap();
    assert_eq!((heard.len(), r.trials.len(), path.trials()), (3, 3, 3));
    let sizes: Vec<u32> = heard
        .iter()
        .map(|m| match m {
            sonde_model::MethodEvent::OverheadPoint(p) => p.payload_bytes,
            other => panic!("not a point: {other:?}"),
        })
        .collect();
    assert_eq!(sizes, [200, 600, 1400]);
    let f = r.overhead.unwrap();
    // IPv6 (40) + UDP (8) + the 14 bytes the limiter counts below IP.
    assert!(
        (f.per_packet_bytes - 62.0).abs() < 0.5,
        "{}",
        f.per_packet_bytes
    );
    assert!((f.capacity_bps / 50e6 - 1.0).abs() < 0.01);
    assert_eq!(f.fits[0].stack, "mac/ipv6/udp");
    let lengths: Vec<u32> = path
        .asked()
        .iter()
        .map(|s| match s {
            sonde_model::TestSpec::Udp(u) => u.length,
            _ => 0,
        })
        .collect();
    assert_eq!(lengths, [200, 600, 1400]);
    // A single size is refused before any trial.
    let one = OverheadSpec {
        payloads: vec![200, 200],
        ..spec
    };
    let e = run_overhead(&path, &one, &Stop::new(), &Events::new()).unwrap_err();
    assert!(e.to_string().contains("payloads"), "{e}");
}

#[test]
fn the_packet_a_link_carries_is_the_stack_without_the_links_own_layers() {
    // 1230 B of TCP payload double-tunnelled (000 §3.3): 1414 B of IP
    // packet, 1432 B on Ethernet with its header and FCS, 1452 with the
    // preamble and gap; the link's MTU limits the 1414.
    let s: Stack = "l1/eth/tunnel:56/tunnel:56/ipv6/tcp-ts".parse().unwrap();
    assert_eq!(s.wire_bytes(1230), 1452);
    assert_eq!(s.packet_bytes(1230), 1414);
    let bare: Stack = "ipv6/udp".parse().unwrap();
    assert_eq!(bare.packet_bytes(1452), 1500);
}
