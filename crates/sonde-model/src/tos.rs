//! `-S` as iperf3 users write it. iperf3's `-S`/`--tos` takes the whole
//! TOS / traffic-class byte (`-S 0xb8` is EF), sonde's takes a DSCP. The
//! flag accepts both: a DSCP name (EF, AF41…) or a number 0–63 is a DSCP;
//! a `0x..` hex number, or a decimal number from 64 to 255, is a TOS byte
//! and stands for the DSCP in its upper six bits. A TOS byte with either
//! ECN bit set (the two low bits) is refused: sonde does not set ECN, and
//! such a byte is no DSCP shifted left by two.

use crate::Dscp;
use std::str::FromStr;

/// What `-S` was given: a DSCP, or a TOS byte and the DSCP it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DscpFlag {
    Dscp(Dscp),
    Tos { tos: u8, dscp: Dscp },
}

impl DscpFlag {
    pub fn dscp(self) -> Dscp {
        match self {
            DscpFlag::Dscp(d) | DscpFlag::Tos { dscp: d, .. } => d,
        }
    }

    /// For a TOS byte, a note saying which DSCP it means.
    pub fn note(self) -> Option<String> {
        match self {
            DscpFlag::Dscp(_) => None,
            DscpFlag::Tos { tos, dscp } => Some(format!(
                "-S {tos:#04x} is a TOS byte (as iperf3 reads -S): DSCP {dscp}"
            )),
        }
    }
}

/// A `-S` value that is neither a DSCP nor a TOS byte without ECN bits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DscpFlagError {
    #[error("'{0}' is not a DSCP (EF, AF11…AF43, CS0…CS7, LE, VOICE-ADMIT, 0–63) or a TOS byte (0x00–0xff, or 64–255)")]
    NotANumber(String),
    #[error("TOS byte {tos:#04x} has its ECN bits set (the two low bits: {ecn:#04b}); sonde sets a DSCP, not ECN: use {clear:#04x} (DSCP {dscp})", ecn = tos & 3, clear = tos & !3, dscp = tos >> 2)]
    EcnBits { tos: u8 },
}

impl FromStr for DscpFlag {
    type Err = DscpFlagError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bad = || DscpFlagError::NotANumber(s.to_string());
        let tos = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            u8::from_str_radix(hex, 16).map_err(|_| bad())?
        } else if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() {
            let n: u16 = t.parse().map_err(|_| bad())?;
            if let Some(d) = u8::try_from(n).ok().and_then(Dscp::new) {
                return Ok(DscpFlag::Dscp(d));
            }
            u8::try_from(n).map_err(|_| bad())?
        } else {
            return Dscp::from_str(t).map(DscpFlag::Dscp).map_err(|_| bad());
        };
        if tos & 3 != 0 {
            return Err(DscpFlagError::EcnBits { tos });
        }
        Ok(DscpFlag::Tos {
            tos,
            dscp: Dscp::from_tos_byte(tos),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dscp(s: &str) -> u8 {
        s.parse::<DscpFlag>().unwrap().dscp().value()
    }

    #[test]
    fn names_and_small_numbers_are_dscps() {
        assert_eq!(dscp("EF"), 46);
        assert_eq!(dscp("af41"), 34);
        assert_eq!(dscp("46"), 46);
        assert_eq!(dscp("63"), 63);
        assert_eq!(dscp("0"), 0);
        assert!("46".parse::<DscpFlag>().unwrap().note().is_none());
    }

    #[test]
    fn hex_and_large_numbers_are_tos_bytes() {
        // iperf3's -S 0xb8 is EF; 184 the same byte in decimal.
        assert_eq!(dscp("0xb8"), 46);
        assert_eq!(dscp("0XB8"), 46);
        assert_eq!(dscp("184"), 46);
        assert_eq!(dscp("0x88"), 34);
        assert_eq!(dscp("0x00"), 0);
        let note = "0xb8".parse::<DscpFlag>().unwrap().note().unwrap();
        assert!(note.contains("0xb8") && note.contains("EF (46)"), "{note}");
    }

    #[test]
    fn ecn_bits_and_nonsense_are_refused_clearly() {
        let e = "0xb9".parse::<DscpFlag>().unwrap_err();
        assert_eq!(e, DscpFlagError::EcnBits { tos: 0xb9 });
        assert!(e.to_string().contains("0xb8"), "{e}");
        assert!(matches!(
            "65".parse::<DscpFlag>(),
            Err(DscpFlagError::EcnBits { tos: 65 })
        ));
        for s in ["256", "0x100", "EX", "-1", ""] {
            assert!(
                matches!(s.parse::<DscpFlag>(), Err(DscpFlagError::NotANumber(_))),
                "{s}"
            );
        }
    }
}
