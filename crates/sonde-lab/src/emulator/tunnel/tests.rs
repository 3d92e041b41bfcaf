use super::*;
use sonde_wire::inet::checksum;

const A_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const R_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x1];

fn tunnel() -> Tunnel {
    Tunnel {
        overhead: 60,
        mtu: Some(1400),
        v4: Some(Ipv4Addr::new(198, 18, 1, 253)),
        v6: Some("2001:2:0:1::fd".parse().unwrap()),
        cipher: None,
    }
}

/// A frame from A to R holding an IP packet of `len` bytes: IPv4 with
/// Don't Fragment as `df` says, or IPv6.
fn frame(v6: bool, len: usize, df: bool) -> Vec<u8> {
    let mut f = R_MAC.to_vec();
    f.extend(A_MAC);
    if v6 {
        f.extend(IPV6);
        let mut ip = vec![0x60, 0, 0, 0];
        ip.extend(u16::try_from(len - 40).unwrap().to_be_bytes());
        ip.extend([17, 64]);
        ip.extend("2001:2:0:1::1".parse::<Ipv6Addr>().unwrap().octets());
        ip.extend("2001:2:0:2::2".parse::<Ipv6Addr>().unwrap().octets());
        f.extend(ip);
    } else {
        f.extend(IPV4);
        let mut ip = vec![0x45, 0];
        ip.extend(u16::try_from(len).unwrap().to_be_bytes());
        ip.extend([0, 1, if df { 0x40 } else { 0 }, 0, 64, 17, 0, 0]);
        ip.extend([198, 18, 1, 1, 198, 18, 2, 2]);
        f.extend(ip);
    }
    f.resize(ETH + len, 0xab);
    f
}

#[test]
fn packets_up_to_the_mtu_are_carried() {
    let mut a = Vec::new();
    for v6 in [true, false] {
        assert_eq!(
            tunnel().enter(&frame(v6, 1400, true), &mut a),
            TunnelFate::Carried
        );
    }
    let no_mtu = Tunnel {
        mtu: None,
        ..tunnel()
    };
    assert_eq!(
        no_mtu.enter(&frame(true, 9000, true), &mut a),
        TunnelFate::Carried
    );
    assert!(a.is_empty());
}

#[test]
fn an_ipv6_packet_too_big_is_answered_with_the_tunnel_mtu() {
    let f = frame(true, 1500, true);
    let mut a = Vec::new();
    assert_eq!(tunnel().enter(&f, &mut a), TunnelFate::Answered);
    assert_eq!(
        (&a[..6], &a[6..12], &a[12..14]),
        (&A_MAC[..], &R_MAC[..], &IPV6[..])
    );
    let ip = &a[ETH..];
    assert_eq!(
        &ip[8..24],
        &tunnel().v6.unwrap().octets(),
        "from the entrance"
    );
    assert_eq!(&ip[24..40], &f[ETH + 8..ETH + 24], "to the packet's source");
    let icmp = &ip[40..];
    assert_eq!((icmp[0], icmp[1]), (2, 0), "Packet Too Big");
    assert_eq!(
        u32::from_be_bytes([icmp[4], icmp[5], icmp[6], icmp[7]]),
        1400
    );
    // As much of the packet as fits in 1280 bytes.
    assert_eq!(ip.len(), 1280);
    assert_eq!(&icmp[8..], &f[ETH..ETH + 1232]);
    let mut pseudo = ip[8..40].to_vec();
    pseudo.extend((icmp.len() as u32).to_be_bytes());
    pseudo.extend([0, 0, 0, 58]);
    pseudo.extend(icmp);
    assert_eq!(checksum(&pseudo), 0, "ICMPv6 checksum");
}

#[test]
fn an_ipv4_packet_too_big_needs_fragmentation_only_with_dont_fragment() {
    let f = frame(false, 1500, true);
    let mut a = Vec::new();
    assert_eq!(tunnel().enter(&f, &mut a), TunnelFate::Answered);
    let ip = &a[ETH..];
    assert_eq!(checksum(&ip[..20]), 0, "IP header checksum");
    assert_eq!(
        (&ip[12..16], &ip[16..20]),
        (&[198, 18, 1, 253][..], &[198, 18, 1, 1][..])
    );
    let icmp = &ip[20..];
    assert_eq!(checksum(icmp), 0, "ICMP checksum");
    assert_eq!((icmp[0], icmp[1]), (3, 4), "Fragmentation Needed");
    assert_eq!(u16::from_be_bytes([icmp[6], icmp[7]]), 1400);
    assert_eq!(ip.len(), 576);
    assert_eq!(&icmp[8..], &f[ETH..ETH + 548]);
    // May be fragmented: the emulator does not, and drops it.
    let mut a = Vec::new();
    assert_eq!(
        tunnel().enter(&frame(false, 1500, false), &mut a),
        TunnelFate::Dropped
    );
    assert!(a.is_empty());
}

#[test]
fn an_entrance_without_an_address_is_a_black_hole_and_errors_get_no_error() {
    let mut a = Vec::new();
    let hole = Tunnel {
        v4: None,
        v6: None,
        cipher: None,
        ..tunnel()
    };
    for v6 in [true, false] {
        assert_eq!(
            hole.enter(&frame(v6, 1500, true), &mut a),
            TunnelFate::Dropped
        );
    }
    let mut err = frame(true, 1500, true);
    err[ETH + 6] = 58;
    err[ETH + 40] = 1;
    assert_eq!(tunnel().enter(&err, &mut a), TunnelFate::Dropped);
    assert!(a.is_empty());
    // Not IP, or cut short: dropped when over the MTU, never a panic.
    let mut arp = frame(true, 1500, true);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(tunnel().enter(&arp, &mut a), TunnelFate::Dropped);
    assert_eq!(tunnel().enter(&[0u8; 3], &mut a), TunnelFate::Carried);
}
