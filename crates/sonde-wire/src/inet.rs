//! The Internet checksum (RFC 1071), of ICMP, ICMPv6 (over its
//! pseudo-header), IPv4 headers and RFC 4884's ICMP extensions.

/// The Internet checksum of `data` (odd length: a zero pad). Bytes that
/// hold their own correct checksum give 0.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_1071_example_sums_as_the_rfc_says() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded);
        // the checksum is its complement.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&data), !0xddf2);
        let mut with = data.to_vec();
        with.extend(checksum(&data).to_be_bytes());
        assert_eq!(checksum(&with), 0, "with its checksum: 0");
        assert_eq!(checksum(&[0xab]), !0xab00, "odd length: zero pad");
    }
}
