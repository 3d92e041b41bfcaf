//! A client's address as the server compares it: IPv4 clients of a
//! dual-stack listener arrive as v4-mapped IPv6 addresses (`::ffff:a.b.c.d`)
//! and are compared, allowed and logged as plain IPv4.

use std::net::IpAddr;

/// The client's address as a plain IPv4 address when it is v4-mapped.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_mapped_addresses_are_plain_v4() {
        let mapped: IpAddr = "::ffff:198.18.0.1".parse().unwrap();
        assert_eq!(canonical(mapped), "198.18.0.1".parse::<IpAddr>().unwrap());
        let v6: IpAddr = "::1".parse().unwrap();
        assert_eq!(canonical(v6), v6);
    }
}
