//! Differentiated Services Code Points by name or number.
//!
//! Names follow RFC 2474 (CS0–CS7), RFC 2597 (AF11–AF43), RFC 3246 (EF),
//! RFC 5865 (VOICE-ADMIT) and RFC 8622 (LE, the lower-effort class that
//! replaced CS1 for scavenger traffic).

use crate::schema::leaf_schema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A 6-bit DSCP value (0–63). The TOS / traffic-class byte is `dscp << 2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dscp(u8);

/// A DSCP spelling that is neither a known name nor a number from 0 to 63.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not a DSCP: use a name (EF, AF11…AF43, CS0…CS7, LE, VOICE-ADMIT) or a number 0–63"
)]
pub struct DscpError(pub String);

const NAMED: &[(&str, u8)] = &[
    ("EF", 46),
    ("VOICE-ADMIT", 44),
    ("LE", 1),
    ("AF11", 10),
    ("AF12", 12),
    ("AF13", 14),
    ("AF21", 18),
    ("AF22", 20),
    ("AF23", 22),
    ("AF31", 26),
    ("AF32", 28),
    ("AF33", 30),
    ("AF41", 34),
    ("AF42", 36),
    ("AF43", 38),
    ("CS0", 0),
    ("CS1", 8),
    ("CS2", 16),
    ("CS3", 24),
    ("CS4", 32),
    ("CS5", 40),
    ("CS6", 48),
    ("CS7", 56),
];

impl Dscp {
    pub const EF: Dscp = Dscp(46);
    pub const BEST_EFFORT: Dscp = Dscp(0);

    /// A DSCP from its 6-bit value; `None` above 63.
    pub const fn new(value: u8) -> Option<Self> {
        if value < 64 {
            Some(Self(value))
        } else {
            None
        }
    }
    pub const fn value(self) -> u8 {
        self.0
    }
    /// The IPv4 TOS / IPv6 traffic-class byte with ECN bits clear.
    pub const fn tos_byte(self) -> u8 {
        self.0 << 2
    }
    /// The DSCP carried in a TOS / traffic-class byte.
    pub const fn from_tos_byte(tos: u8) -> Self {
        Self(tos >> 2)
    }
    /// The standard name of this code point, if it has one.
    pub fn name(self) -> Option<&'static str> {
        NAMED.iter().find(|(_, v)| *v == self.0).map(|(n, _)| *n)
    }
}

impl FromStr for Dscp {
    type Err = DscpError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Some((_, v)) = NAMED.iter().find(|(n, _)| n.eq_ignore_ascii_case(t)) {
            return Ok(Self(*v));
        }
        let parsed = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            u8::from_str_radix(hex, 16).ok()
        } else {
            t.parse::<u8>().ok()
        };
        parsed
            .and_then(Self::new)
            .ok_or_else(|| DscpError(s.to_string()))
    }
}

impl fmt::Display for Dscp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

leaf_schema!(Dscp, "Dscp", {
    "type": "integer",
    "minimum": 0,
    "maximum": 63,
    "description": "A 6-bit DSCP value (0–63). The TOS / traffic-class byte is `dscp << 2`."
});

impl Serialize for Dscp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

impl<'de> Deserialize<'de> for Dscp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(v) => u8::try_from(v)
                .ok()
                .and_then(Dscp::new)
                .ok_or_else(|| serde::de::Error::custom(DscpError(v.to_string()))),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_rfc_values() {
        assert_eq!("EF".parse::<Dscp>().unwrap().value(), 46);
        assert_eq!("af41".parse::<Dscp>().unwrap().value(), 34);
        assert_eq!("AF13".parse::<Dscp>().unwrap().value(), 14);
        assert_eq!("CS7".parse::<Dscp>().unwrap().value(), 56);
        assert_eq!("LE".parse::<Dscp>().unwrap().value(), 1);
        assert_eq!("63".parse::<Dscp>().unwrap().value(), 63);
        assert_eq!("0x2e".parse::<Dscp>().unwrap(), Dscp::EF);
    }

    #[test]
    fn every_af_class_follows_the_formula() {
        for class in 1..=4u8 {
            for drop in 1..=3u8 {
                let d: Dscp = format!("AF{class}{drop}").parse().unwrap();
                assert_eq!(d.value(), 8 * class + 2 * drop);
            }
        }
    }

    #[test]
    fn bad_dscp_is_refused_with_the_input() {
        let e = "EFF".parse::<Dscp>().unwrap_err().to_string();
        assert!(e.contains("'EFF'"), "{e}");
        assert!("64".parse::<Dscp>().is_err());
        assert!("-1".parse::<Dscp>().is_err());
    }

    #[test]
    fn tos_byte_round_trips() {
        assert_eq!(Dscp::EF.tos_byte(), 0xb8);
        assert_eq!(Dscp::from_tos_byte(0xb8 | 0x3), Dscp::EF);
        assert_eq!(Dscp::EF.to_string(), "EF (46)");
    }
}
