//! What the emulator reads and changes in an Ethernet frame: the DSCP of
//! its IPv4 or IPv6 packet, and the packet's length.

const ETH_HEADER: usize = 14;
const IPV4: [u8; 2] = [0x08, 0x00];
const IPV6: [u8; 2] = [0x86, 0xdd];

/// The DSCP of the IP packet in `frame`; `None` for anything else or a
/// frame too short to hold an IP header.
pub fn dscp(frame: &[u8]) -> Option<u8> {
    match (frame.get(12..14)?, frame.get(14..16)?) {
        (t, ip) if t == IPV4 && ip[0] >> 4 == 4 => Some(ip[1] >> 2),
        (t, ip) if t == IPV6 && ip[0] >> 4 == 6 => Some(((ip[0] & 0x0f) << 2) | (ip[1] >> 6)),
        _ => None,
    }
}

/// The transport protocol of the IP packet in `frame` (IPv4 protocol,
/// IPv6 next header, extension headers not followed).
pub fn protocol(frame: &[u8]) -> Option<u8> {
    match (frame.get(12..14)?, frame.get(14)? >> 4) {
        (t, 4) if t == IPV4 => frame.get(14 + 9).copied(),
        (t, 6) if t == IPV6 => frame.get(14 + 6).copied(),
        _ => None,
    }
}

/// The IP packet in `frame` and the next header that says what it is (4
/// for IPv4, 41 for IPv6, as ESP's trailer in tunnel mode).
pub fn ip_packet(frame: &[u8]) -> Option<(&[u8], u8)> {
    let ip = frame.get(ETH_HEADER..)?;
    match (frame.get(12..14)?, ip.first()? >> 4) {
        (t, 4) if t == IPV4 => Some((ip, 4)),
        (t, 6) if t == IPV6 => Some((ip, 41)),
        _ => None,
    }
}

/// Rewrites the DSCP of the IP packet in `frame` (ECN bits kept). An IPv4
/// header checksum is updated incrementally (RFC 1624), so the packet stays
/// valid; IPv6 has no header checksum, and neither TCP's nor UDP's covers
/// the traffic class. Returns false (frame untouched) when it is not IP.
pub fn set_dscp(frame: &mut [u8], dscp: u8) -> bool {
    let dscp = dscp & 0x3f;
    let Some(kind) = frame.get(12..14).map(|t| [t[0], t[1]]) else {
        return false;
    };
    if kind == IPV4 && frame.len() >= ETH_HEADER + 20 && frame[14] >> 4 == 4 {
        let old_word = u16::from_be_bytes([frame[14], frame[15]]);
        frame[15] = (dscp << 2) | (frame[15] & 0x03);
        let new_word = u16::from_be_bytes([frame[14], frame[15]]);
        let sum = u16::from_be_bytes([frame[24], frame[25]]);
        // HC' = ~(~HC + ~m + m'), in ones' complement arithmetic.
        let mut acc = u32::from(!sum) + u32::from(!old_word) + u32::from(new_word);
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        let [hi, lo] = (!(acc as u16)).to_be_bytes();
        frame[24] = hi;
        frame[25] = lo;
        true
    } else if kind == IPV6 && frame.len() >= ETH_HEADER + 40 && frame[14] >> 4 == 6 {
        frame[14] = (frame[14] & 0xf0) | (dscp >> 2);
        frame[15] = ((dscp & 0x03) << 6) | (frame[15] & 0x3f);
        true
    } else {
        false
    }
}

/// Bytes of the IP packet: the frame without its Ethernet header. This is
/// what a router's policer counts.
pub fn ip_len(frame: &[u8]) -> usize {
    frame.len().saturating_sub(ETH_HEADER)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full IPv4 header checksum, to check the incremental update.
    fn ipv4_checksum(header: &[u8]) -> u16 {
        let mut sum: u32 = header
            .chunks(2)
            .enumerate()
            .filter(|(i, _)| *i != 5)
            .map(|(_, w)| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn v4_frame(tos: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&IPV4);
        let mut ip = vec![
            0x45, tos, 0, 48, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 198, 18, 1, 1, 198, 18, 2, 2,
        ];
        let c = ipv4_checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend(ip);
        f.extend([0u8; 28]);
        f
    }

    #[test]
    fn ipv4_remarking_keeps_ecn_and_a_valid_checksum() {
        for tos in [0xb8u8, 0xb9, 0x00, 0x03, 0xfe] {
            for to in [0u8, 8, 46, 63] {
                let mut f = v4_frame(tos);
                assert_eq!(dscp(&f), Some(tos >> 2));
                assert_eq!(protocol(&f), Some(17));
                assert!(set_dscp(&mut f, to));
                assert_eq!(dscp(&f), Some(to));
                assert_eq!(f[15] & 3, tos & 3, "ECN bits kept");
                let stored = u16::from_be_bytes([f[24], f[25]]);
                assert_eq!(stored, ipv4_checksum(&f[14..34]), "tos {tos:#x} -> {to}");
            }
        }
    }

    #[test]
    fn ipv6_traffic_class_straddles_two_bytes() {
        let mut f = vec![0u8; 14 + 40];
        f[12..14].copy_from_slice(&IPV6);
        // Version 6, traffic class 0xb9 (EF, ECN 01), flow label 0xabcde.
        f[14] = 0x6b;
        f[15] = 0x9a;
        f[16] = 0xbc;
        f[17] = 0xde;
        f[20] = 6;
        assert_eq!(dscp(&f), Some(46));
        assert_eq!(protocol(&f), Some(6));
        assert!(set_dscp(&mut f, 8));
        assert_eq!(dscp(&f), Some(8));
        assert_eq!(f[14], 0x62, "version kept");
        assert_eq!(f[15], 0x1a, "ECN and flow label kept");
        assert_eq!(&f[16..18], &[0xbc, 0xde]);
    }

    #[test]
    fn other_frames_are_left_alone() {
        let mut arp = vec![0u8; 60];
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert_eq!(dscp(&arp), None);
        assert_eq!(protocol(&arp), None);
        assert!(!set_dscp(&mut arp, 46));
        assert!(arp[14..].iter().all(|&b| b == 0));
        assert_eq!(dscp(&[0u8; 10]), None);
        assert!(!set_dscp(&mut [0u8; 15], 46));
    }
}
