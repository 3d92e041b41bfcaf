//! The 8 bytes that open every native connection.
//!
//! `S O N D | version (u16 BE) | reserved (2 bytes, zero)`. The magic is
//! upper-case ASCII, which an iperf3 cookie (lower-case base32) never
//! starts with, so one port can tell the two apart from the first byte.

use crate::WireError;

pub const MAGIC: [u8; 4] = *b"SOND";
pub const PREAMBLE_LEN: usize = 8;
/// The protocol version this build speaks. Version 2: the test request
/// is the flat `TestSpec` (`{"test": "tcp", "host": …}`) and the ends'
/// reports say unknown figures as `null` (result format 2).
pub const PROTOCOL_VERSION: u16 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preamble {
    pub version: u16,
    /// The two reserved bytes, as they came: zero in every version so
    /// far ([`Preamble::check_reserved`]).
    pub reserved: [u8; 2],
}

impl Preamble {
    pub const CURRENT: Preamble = Preamble {
        version: PROTOCOL_VERSION,
        reserved: [0, 0],
    };

    pub fn encode(self) -> [u8; PREAMBLE_LEN] {
        let v = self.version.to_be_bytes();
        let r = self.reserved;
        [
            MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], v[0], v[1], r[0], r[1],
        ]
    }

    /// Reads a preamble; any version and reserved bytes are returned so
    /// the caller can refuse them by name (version first: a newer
    /// version may give the reserved bytes a meaning).
    pub fn decode(bytes: &[u8; PREAMBLE_LEN]) -> Result<Self, WireError> {
        let found = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if found != MAGIC {
            return Err(WireError::BadMagic { found });
        }
        Ok(Self {
            version: u16::from_be_bytes([bytes[4], bytes[5]]),
            reserved: [bytes[6], bytes[7]],
        })
    }

    /// The reserved bytes are zero, as this version requires.
    pub fn check_reserved(&self) -> Result<(), WireError> {
        match self.reserved {
            [0, 0] => Ok(()),
            found => Err(WireError::Reserved { found }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let p = Preamble {
            version: 7,
            reserved: [0, 0],
        };
        assert_eq!(Preamble::decode(&p.encode()).unwrap(), p);
        assert_eq!(p.check_reserved(), Ok(()));
    }

    #[test]
    fn reserved_bytes_are_kept_and_checked() {
        let mut bytes = Preamble::CURRENT.encode();
        bytes[6..].copy_from_slice(&[0xff, 0xff]);
        let p = Preamble::decode(&bytes).unwrap();
        assert_eq!(p.version, PROTOCOL_VERSION);
        assert_eq!(
            p.check_reserved(),
            Err(WireError::Reserved {
                found: [0xff, 0xff]
            })
        );
    }

    #[test]
    fn an_iperf3_cookie_is_not_a_preamble() {
        let cookie = b"abcdefghijklmnopqrstuvwxyz2345670000";
        let mut first = [0u8; 8];
        first.copy_from_slice(&cookie[..8]);
        assert!(matches!(
            Preamble::decode(&first),
            Err(WireError::BadMagic { .. })
        ));
    }
}
