//! `-f/--format`: the unit the text output's rates are shown in, as
//! iperf3's `-f`: `k`, `m`, `g`, `t` bits per second (powers of 1000),
//! `K`, `M`, `G`, `T` bytes per second (powers of 1024); without it, the
//! unit that fits each figure. Transfer columns keep their own unit, as
//! iperf3's do.
//!
//! The text functions read the format in force on the calling thread, set
//! for a scope by [`with_rate_format`], so every table and live line of
//! one output agrees without each function taking a parameter.

use std::cell::Cell;
use std::str::FromStr;

/// A fixed unit for rates, or the one that fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateFormat {
    /// Whichever of bit/s … Tbit/s gives the figure 1–999 (sonde's default).
    #[default]
    Auto,
    /// Bits per second in a fixed power of 1000: 1 = k … 4 = T.
    Bits(u8),
    /// Bytes per second in a fixed power of 1024: 1 = KiB … 4 = TiB.
    Bytes(u8),
}

const BIT_UNITS: [&str; 5] = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
const BYTE_UNITS: [&str; 5] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];

impl FromStr for RateFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let power = |c: char| "kmgt".find(c.to_ascii_lowercase()).map(|i| i as u8 + 1);
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if power(c).is_some() => {
                let p = power(c).unwrap_or(1);
                Ok(if c.is_ascii_lowercase() {
                    RateFormat::Bits(p)
                } else {
                    RateFormat::Bytes(p)
                })
            }
            _ => Err(format!(
                "'{s}': use k, m, g, t (bits per second) or K, M, G, T (bytes per second)"
            )),
        }
    }
}

impl RateFormat {
    /// `bps` in this format: `941 Mbit/s`, `112 MiB/s`, `0.94 Gbit/s`.
    pub fn show(self, bps: u64) -> String {
        let (value, unit) = match self {
            RateFormat::Auto => return sonde_model::Rate::from_bps(bps).to_string(),
            RateFormat::Bits(p) => (
                bps as f64 / 1000f64.powi(i32::from(p)),
                BIT_UNITS[usize::from(p.min(4))],
            ),
            RateFormat::Bytes(p) => (
                bps as f64 / 8.0 / 1024f64.powi(i32::from(p)),
                BYTE_UNITS[usize::from(p.min(4))],
            ),
        };
        // iperf3's precision: fewer decimals as the figure grows.
        let digits = if value >= 99.95 {
            0
        } else if value >= 9.995 {
            1
        } else {
            2
        };
        format!("{value:.digits$} {unit}")
    }
}

thread_local! {
    static IN_FORCE: Cell<RateFormat> = const { Cell::new(RateFormat::Auto) };
}

/// Runs `body` with rates shown in `format` on this thread, then puts
/// back the format that was in force.
pub fn with_rate_format<T>(format: RateFormat, body: impl FnOnce() -> T) -> T {
    let before = IN_FORCE.with(|c| c.replace(format));
    let out = body();
    IN_FORCE.with(|c| c.set(before));
    out
}

/// `bps` in the format in force on this thread.
pub(crate) fn show_rate(bps: u64) -> String {
    IN_FORCE.with(Cell::get).show(bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_are_iperf3_s_lowercase_bits_uppercase_bytes() {
        assert_eq!("m".parse(), Ok(RateFormat::Bits(2)));
        assert_eq!("G".parse(), Ok(RateFormat::Bytes(3)));
        assert!("x".parse::<RateFormat>().is_err());
        assert!("mm".parse::<RateFormat>().is_err());
        assert!("".parse::<RateFormat>().is_err());
    }

    #[test]
    fn a_fixed_unit_scales_the_figure() {
        assert_eq!(RateFormat::Bits(2).show(941_000_000), "941 Mbit/s");
        assert_eq!(RateFormat::Bits(1).show(941_000_000), "941000 kbit/s");
        assert_eq!(RateFormat::Bits(3).show(941_000_000), "0.94 Gbit/s");
        // 8 Mbit/s is 1 000 000 bytes/s: 0.95 MiB/s, 977 KiB/s.
        assert_eq!(RateFormat::Bytes(2).show(8_000_000), "0.95 MiB/s");
        assert_eq!(RateFormat::Bytes(1).show(8_000_000), "977 KiB/s");
        assert_eq!(RateFormat::Auto.show(941_000_000), "941 Mbit/s");
    }

    #[test]
    fn the_format_holds_for_its_scope_only() {
        assert_eq!(show_rate(10_000_000), "10.0 Mbit/s");
        let inside = with_rate_format(RateFormat::Bits(1), || show_rate(10_000_000));
        assert_eq!(inside, "10000 kbit/s");
        assert_eq!(show_rate(10_000_000), "10.0 Mbit/s");
    }
}
