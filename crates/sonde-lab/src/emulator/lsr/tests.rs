use super::*;

const A_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const R_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x1];

fn lsr() -> Lsr {
    Lsr {
        labels: vec![16005, 299_776],
        v4: Some(Ipv4Addr::new(10, 255, 0, 1)),
        v6: Some("2001:db8:ff::1".parse().unwrap()),
    }
}

/// A frame from A to R carrying `ip`.
fn frame(kind: [u8; 2], ip: &[u8]) -> Vec<u8> {
    let mut f = R_MAC.to_vec();
    f.extend(A_MAC);
    f.extend(kind);
    f.extend(ip);
    f
}

/// A UDP probe over IPv4 from 10.0.0.2 to 10.0.0.9 with `ttl` and TOS
/// 0xb8 (EF: precedence 5), its header checksum right.
fn udp_v4(ttl: u8) -> Vec<u8> {
    let mut ip = vec![
        0x45, 0xb8, 0, 36, 0, 1, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 9,
    ];
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    ip.extend([0x82, 0x9a, 0x82, 0x9b, 0, 16, 0xab, 0xcd]);
    ip.extend([0u8; 8]);
    ip
}

fn udp_v6(hops: u8, src: &str, dst: &str) -> Vec<u8> {
    let mut ip = vec![0x6b, 0x80, 0, 0, 0, 16, 17, hops];
    ip.extend(src.parse::<Ipv6Addr>().unwrap().octets());
    ip.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
    ip.extend([0x82, 0x9a, 0x82, 0x9b, 0, 16, 0xab, 0xcd]);
    ip.extend([0u8; 8]);
    ip
}

#[test]
fn a_packet_with_ttl_to_spare_loses_one_and_keeps_a_valid_checksum() {
    let mut f = frame(IPV4, &udp_v4(9));
    let mut answer = Vec::new();
    assert_eq!(lsr().hop(&mut f, &mut answer), LsrFate::Forward);
    assert_eq!(f[ETH + 8], 8);
    assert_eq!(checksum(&f[ETH..ETH + 20]), 0, "header checksum");
    let mut f = frame(IPV6, &udp_v6(2, "2001:db8:1::2", "2001:db8:2::9"));
    assert_eq!(lsr().hop(&mut f, &mut answer), LsrFate::Forward);
    assert_eq!(f[ETH + 7], 1);
    assert!(answer.is_empty());
}

#[test]
fn an_expiring_ipv4_probe_is_answered_with_its_quotation_and_labels() {
    let probe = udp_v4(1);
    let mut f = frame(IPV4, &probe);
    let mut a = Vec::new();
    assert_eq!(lsr().hop(&mut f, &mut a), LsrFate::Answered);
    // Back to A, from R's side, as an IPv4 packet from the hop.
    assert_eq!(
        (&a[..6], &a[6..12], &a[12..14]),
        (&A_MAC[..], &R_MAC[..], &IPV4[..])
    );
    let ip = &a[ETH..];
    assert_eq!(checksum(&ip[..20]), 0, "IP header checksum");
    assert_eq!(
        (&ip[12..16], &ip[16..20]),
        (&[10, 255, 0, 1][..], &[10, 0, 0, 2][..])
    );
    assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), ip.len());
    let icmp = &ip[20..];
    assert_eq!(checksum(icmp), 0, "ICMP checksum");
    // Time Exceeded, the quotation 32 words long, the probe as it came.
    assert_eq!((icmp[0], icmp[1], icmp[5]), (11, 0, 32));
    assert_eq!(&icmp[8..8 + probe.len()], &probe[..]);
    assert!(icmp[8 + probe.len()..136].iter().all(|b| *b == 0));
    // Extension: version 2, valid checksum, one object, two entries,
    // the probe's precedence (5) as TC, its TTL (1), S on the last.
    let ext = &icmp[136..];
    assert_eq!(ext[0], 0x20);
    assert_eq!(checksum(ext), 0, "extension checksum");
    assert_eq!(&ext[4..8], &[0, 12, 1, 1]);
    let entry = |i: usize| {
        u32::from_be_bytes([
            ext[8 + 4 * i],
            ext[9 + 4 * i],
            ext[10 + 4 * i],
            ext[11 + 4 * i],
        ])
    };
    assert_eq!(entry(0), 16005 << 12 | 5 << 9 | 1);
    assert_eq!(entry(1), 299_776 << 12 | 5 << 9 | 1 << 8 | 1);
    assert_eq!(ext.len(), 16);
}

#[test]
fn an_expiring_ipv6_probe_is_answered_with_a_valid_icmpv6_checksum() {
    let probe = udp_v6(1, "2001:db8:1::2", "2001:db8:2::9");
    let mut f = frame(IPV6, &probe);
    let mut a = Vec::new();
    assert_eq!(lsr().hop(&mut f, &mut a), LsrFate::Answered);
    let ip = &a[ETH..];
    assert_eq!((ip[0] >> 4, ip[6]), (6, 58));
    assert_eq!(&ip[8..24], &lsr().v6.unwrap().octets());
    assert_eq!(&ip[24..40], &probe[8..24], "to the probe's source");
    let icmp = &ip[40..];
    assert_eq!(usize::from(u16::from_be_bytes([ip[4], ip[5]])), icmp.len());
    let mut pseudo = ip[8..40].to_vec();
    pseudo.extend((icmp.len() as u32).to_be_bytes());
    pseudo.extend([0, 0, 0, 58]);
    assert_eq!(
        checksum(&[pseudo, icmp.to_vec()].concat()),
        0,
        "ICMPv6 checksum"
    );
    assert_eq!((icmp[0], icmp[1], icmp[4]), (3, 0, 16));
    assert_eq!(&icmp[8..8 + probe.len()], &probe[..]);
    assert_eq!(icmp[136], 0x20);
}

#[test]
fn link_scoped_errors_and_addressless_families_are_left_alone_or_dropped() {
    let mut a = Vec::new();
    // Neighbour discovery keeps its 255; link-local passes as it came.
    let mut ns = udp_v6(255, "2001:db8:1::2", "ff02::1:ff00:9");
    ns[6] = 58;
    ns[40] = 135;
    let mut f = frame(IPV6, &ns);
    assert_eq!(lsr().hop(&mut f, &mut a), LsrFate::Forward);
    assert_eq!(f[ETH + 7], 255);
    let mut f = frame(IPV6, &udp_v6(1, "fe80::2", "fe80::9"));
    assert_eq!(lsr().hop(&mut f, &mut a), LsrFate::Forward);
    // An expiring ICMP error is not answered (RFC 1812).
    let mut err = udp_v4(1);
    err[9] = 1;
    err[20] = 11;
    let mut f = frame(IPV4, &err);
    assert_eq!(lsr().hop(&mut f, &mut a), LsrFate::Dropped);
    // A hop with no IPv4 address is silent to IPv4.
    let v6_only = Lsr { v4: None, ..lsr() };
    let mut f = frame(IPV4, &udp_v4(1));
    assert_eq!(v6_only.hop(&mut f, &mut a), LsrFate::Dropped);
    assert!(a.is_empty());
    // Not IP, or too short: through untouched.
    let mut arp = frame([0x08, 0x06], &[0u8; 28]);
    let before = arp.clone();
    assert_eq!(lsr().hop(&mut arp, &mut a), LsrFate::Forward);
    assert_eq!(arp, before);
    let mut short = frame(IPV4, &[0x45, 0, 0]);
    assert_eq!(lsr().hop(&mut short, &mut a), LsrFate::Forward);
}
