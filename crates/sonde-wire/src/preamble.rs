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
}

impl Preamble {
    pub const CURRENT: Preamble = Preamble {
        version: PROTOCOL_VERSION,
    };

    pub fn encode(self) -> [u8; PREAMBLE_LEN] {
        let v = self.version.to_be_bytes();
        [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], v[0], v[1], 0, 0]
    }

    /// Reads a preamble; any version is returned so the caller can refuse
    /// it by name. Reserved bytes are ignored (for future flags).
    pub fn decode(bytes: &[u8; PREAMBLE_LEN]) -> Result<Self, WireError> {
        let found = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if found != MAGIC {
            return Err(WireError::BadMagic { found });
        }
        Ok(Self {
            version: u16::from_be_bytes([bytes[4], bytes[5]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let p = Preamble { version: 7 };
        assert_eq!(Preamble::decode(&p.encode()).unwrap(), p);
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
