//! Rates and sizes as types, parsed from the spellings engineers use.
//!
//! * [`Rate`]: bits per second with SI prefixes (`1M` = 1,000,000 bit/s), as
//!   iperf3 and every network datasheet write them.
//! * [`ByteSize`]: bytes with binary prefixes (`128K` = 131,072 bytes), as
//!   iperf3's `-l` and `-w` take them.
//!
//! Both parse decimals (`1.5G`) and serialize as plain integers (bits/s,
//! bytes) so that JSON stays unit-explicit through the field name.

use crate::schema::leaf_schema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A value that could not be read as a rate or a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("'{0}' is empty; expected a number such as 10M")]
    Empty(String),
    #[error("'{input}' is not a {what}: expected a number with an optional suffix {suffixes}")]
    Malformed {
        input: String,
        what: &'static str,
        suffixes: &'static str,
    },
    #[error("'{0}' is too large")]
    Overflow(String),
}

fn parse_scaled(
    input: &str,
    base: f64,
    what: &'static str,
    suffixes: &'static str,
    strip: &[&str],
) -> Result<u64, UnitError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(UnitError::Empty(input.to_string()));
    }
    let mut body = trimmed;
    for tail in strip {
        if let Some(stripped) = body
            .strip_suffix(tail)
            .or_else(|| body.strip_suffix(&tail.to_uppercase()))
        {
            body = stripped.trim_end();
            break;
        }
    }
    let malformed = || UnitError::Malformed {
        input: input.to_string(),
        what,
        suffixes,
    };
    let (number, exponent) = match body.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let exp = match c.to_ascii_lowercase() {
                'k' => 1,
                'm' => 2,
                'g' => 3,
                't' => 4,
                _ => return Err(malformed()),
            };
            (&body[..body.len() - 1], exp)
        }
        _ => (body, 0),
    };
    let value: f64 = number.trim().parse().map_err(|_| malformed())?;
    if !value.is_finite() || value < 0.0 {
        return Err(malformed());
    }
    let scaled = value * base.powi(exponent);
    if scaled > u64::MAX as f64 / 2.0 {
        return Err(UnitError::Overflow(input.to_string()));
    }
    Ok(scaled.round() as u64)
}

/// A bit rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate {
    bps: u64,
}

impl Rate {
    pub const fn from_bps(bps: u64) -> Self {
        Self { bps }
    }
    pub const fn bps(self) -> u64 {
        self.bps
    }
    /// Bytes per second (rounded down).
    pub const fn bytes_per_sec(self) -> u64 {
        self.bps / 8
    }
    /// The rate of `bytes` moved in `secs` seconds; zero for a zero interval.
    pub fn from_bytes_over(bytes: u64, secs: f64) -> Self {
        if secs <= 0.0 {
            return Self::from_bps(0);
        }
        Self::from_bps((bytes as f64 * 8.0 / secs).round() as u64)
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_scaled(s, 1000.0, "rate", "k, M, G, T (bit/s)", &["bit/s", "bps"]).map(Self::from_bps)
    }
}

impl fmt::Display for Rate {
    /// SI prefixes with three significant figures: `9.41 Mbit/s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.bps as f64;
        let (scaled, unit) = if v >= 1e12 {
            (v / 1e12, "Tbit/s")
        } else if v >= 1e9 {
            (v / 1e9, "Gbit/s")
        } else if v >= 1e6 {
            (v / 1e6, "Mbit/s")
        } else if v >= 1e3 {
            (v / 1e3, "kbit/s")
        } else {
            (v, "bit/s")
        };
        write!(f, "{} {unit}", three_figures(scaled))
    }
}

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize {
    bytes: u64,
}

impl ByteSize {
    pub const fn from_bytes(bytes: u64) -> Self {
        Self { bytes }
    }
    pub const fn bytes(self) -> u64 {
        self.bytes
    }
}

impl FromStr for ByteSize {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_scaled(
            s,
            1024.0,
            "size",
            "K, M, G, T (binary: 1K = 1024 bytes)",
            &["ib", "b"],
        )
        .map(Self::from_bytes)
    }
}

impl fmt::Display for ByteSize {
    /// Binary prefixes with three significant figures: `1.25 GiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.bytes as f64;
        const K: f64 = 1024.0;
        let (scaled, unit) = if v >= K * K * K * K {
            (v / (K * K * K * K), "TiB")
        } else if v >= K * K * K {
            (v / (K * K * K), "GiB")
        } else if v >= K * K {
            (v / (K * K), "MiB")
        } else if v >= K {
            (v / K, "KiB")
        } else {
            return write!(f, "{} B", self.bytes);
        };
        write!(f, "{} {unit}", three_figures(scaled))
    }
}

/// Three significant figures, the precision a throughput figure carries.
pub fn three_figures(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

macro_rules! int_or_string_serde {
    ($ty:ident, $ctor:ident, $get:ident) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(self.$get())
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                #[derive(Deserialize)]
                #[serde(untagged)]
                enum Raw {
                    Int(u64),
                    Text(String),
                }
                match Raw::deserialize(d)? {
                    Raw::Int(v) => Ok($ty::$ctor(v)),
                    Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
                }
            }
        }
    };
}
leaf_schema!(Rate, "Rate", {
    "type": "integer",
    "minimum": 0,
    "description": "A bit rate in bits per second."
});
leaf_schema!(ByteSize, "ByteSize", {
    "type": "integer",
    "minimum": 0,
    "description": "A size in bytes."
});
int_or_string_serde!(Rate, from_bps, bps);
int_or_string_serde!(ByteSize, from_bytes, bytes);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_use_si_prefixes() {
        assert_eq!("10M".parse::<Rate>().unwrap().bps(), 10_000_000);
        assert_eq!("1.5G".parse::<Rate>().unwrap().bps(), 1_500_000_000);
        assert_eq!("64k".parse::<Rate>().unwrap().bps(), 64_000);
        assert_eq!("100".parse::<Rate>().unwrap().bps(), 100);
        assert_eq!("20Mbit/s".parse::<Rate>().unwrap().bps(), 20_000_000);
    }

    #[test]
    fn sizes_use_binary_prefixes() {
        assert_eq!("128K".parse::<ByteSize>().unwrap().bytes(), 131_072);
        assert_eq!("4M".parse::<ByteSize>().unwrap().bytes(), 4 << 20);
        assert_eq!("256KB".parse::<ByteSize>().unwrap().bytes(), 262_144);
        assert_eq!("1500".parse::<ByteSize>().unwrap().bytes(), 1500);
    }

    #[test]
    fn bad_units_are_named() {
        let err = "10X".parse::<Rate>().unwrap_err().to_string();
        assert!(err.contains("'10X'"), "{err}");
        assert!("".parse::<Rate>().is_err());
        assert!("-5M".parse::<Rate>().is_err());
        assert!("1e30T".parse::<ByteSize>().is_err());
        assert!("nanM".parse::<Rate>().is_err());
    }

    #[test]
    fn display_reads_well() {
        assert_eq!(Rate::from_bps(9_410_000).to_string(), "9.41 Mbit/s");
        assert_eq!(Rate::from_bps(21_500_000_000).to_string(), "21.5 Gbit/s");
        assert_eq!(ByteSize::from_bytes(3 << 20).to_string(), "3.00 MiB");
        assert_eq!(ByteSize::from_bytes(512).to_string(), "512 B");
    }

    #[test]
    fn serde_takes_numbers_and_strings() {
        let r: Rate = serde_json::from_str("\"10M\"").unwrap();
        assert_eq!(r.bps(), 10_000_000);
        let r: Rate = serde_json::from_str("42").unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), "42");
    }

    proptest::proptest! {
        #[test]
        fn any_integer_rate_round_trips(v in 0u64..1u64 << 50) {
            proptest::prop_assert_eq!(v.to_string().parse::<Rate>().unwrap().bps(), v);
        }
        #[test]
        fn parsing_never_panics(s in ".{0,12}") {
            let _ = s.parse::<Rate>();
            let _ = s.parse::<ByteSize>();
        }
    }
}
