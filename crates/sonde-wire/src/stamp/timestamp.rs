//! STAMP's timestamps (64-bit NTP format, RFC 5905) and the Error
//! Estimate that accompanies each (RFC 8762 §4.2.1, RFC 4656 §4.1.2).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds from the NTP epoch (1900-01-01) to the Unix epoch (1970-01-01).
pub const NTP_UNIX_OFFSET_SECS: u64 = 2_208_988_800;

const NANOS_PER_SEC: i128 = 1_000_000_000;
/// One NTP era (2^32 seconds) in nanoseconds.
const ERA_NANOS: i128 = (1 << 32) * NANOS_PER_SEC;
const NTP_UNIX_OFFSET_NANOS: i128 = NTP_UNIX_OFFSET_SECS as i128 * NANOS_PER_SEC;

/// A 64-bit NTP timestamp (RFC 5905): 32 bits of seconds since
/// 1900-01-01 00:00 UTC, then 32 bits of fraction of a second (one unit is
/// about 233 ps).
///
/// The seconds wrap every 2^32 s (about 136 years); the first wrap, into
/// NTP era 1, is on 2036-02-07 06:28:16 UTC. The timestamp itself does not
/// say which era it is in: see [`NtpTimestamp::to_unix_nanos_near`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NtpTimestamp(pub u64);

impl NtpTimestamp {
    /// Builds a timestamp from its seconds and fraction halves.
    pub const fn from_parts(seconds: u32, fraction: u32) -> Self {
        Self(((seconds as u64) << 32) | fraction as u64)
    }

    /// The seconds since 1900, modulo 2^32.
    pub const fn seconds(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The fraction of a second, in units of 2^-32 s.
    pub const fn fraction(self) -> u32 {
        self.0 as u32
    }

    /// The timestamp of an instant given in nanoseconds since the Unix
    /// epoch (negative before 1970), rounded to the nearest 2^-32 s (half a
    /// unit rounds up). Instants outside era 0 (1900 to 2036) wrap into it,
    /// as on the wire. Converting back with [`NtpTimestamp::to_unix_nanos`]
    /// (era 0) gives exactly the same nanosecond, since one unit is shorter
    /// than half a nanosecond.
    pub fn from_unix_nanos(nanos: i128) -> Self {
        let in_era = (nanos.rem_euclid(ERA_NANOS) + NTP_UNIX_OFFSET_NANOS).rem_euclid(ERA_NANOS);
        let units = (in_era * (1 << 32) + NANOS_PER_SEC / 2) / NANOS_PER_SEC;
        // `units` is at most 2^64, reached when rounding up into the next
        // era: keeping the low 64 bits is exactly that wrap.
        Self(units as u64)
    }

    /// The timestamp of a [`SystemTime`] (see
    /// [`NtpTimestamp::from_unix_nanos`] for rounding and wrapping).
    pub fn from_system_time(time: SystemTime) -> Self {
        let nanos = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
            Err(before) => -i128::try_from(before.duration().as_nanos()).unwrap_or(i128::MAX),
        };
        Self::from_unix_nanos(nanos)
    }

    /// Nanoseconds since the Unix epoch, reading the timestamp as one of
    /// NTP era 0 (1900-01-01 to 2036-02-07), rounded to the nearest
    /// nanosecond (half rounds up). For instants that may lie past 2036 use
    /// [`NtpTimestamp::to_unix_nanos_near`].
    pub fn to_unix_nanos(self) -> i128 {
        let since_1900 = (i128::from(self.0) * NANOS_PER_SEC + (1 << 31)) >> 32;
        since_1900 - NTP_UNIX_OFFSET_NANOS
    }

    /// Nanoseconds since the Unix epoch, choosing the NTP era that puts the
    /// instant within about 68 years of `reference_unix_nanos` (typically
    /// the local clock's reading). Rounded as [`NtpTimestamp::to_unix_nanos`].
    pub fn to_unix_nanos_near(self, reference_unix_nanos: i128) -> i128 {
        let era0 = self.to_unix_nanos();
        let eras = reference_unix_nanos
            .saturating_sub(era0)
            .saturating_add(ERA_NANOS / 2)
            .div_euclid(ERA_NANOS);
        era0.saturating_add(eras.saturating_mul(ERA_NANOS))
    }
}

/// The format of the timestamps an [`ErrorEstimate`] describes: its Z bit
/// (RFC 8762 §4.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampFormat {
    /// Z = 0: 64-bit NTP format.
    Ntp,
    /// Z = 1: truncated PTPv2 format (32-bit seconds, 32-bit nanoseconds).
    Ptp,
}

/// The 16-bit Error Estimate that follows each timestamp (RFC 8762
/// §4.2.1, format of RFC 4656 §4.1.2): `S | Z | Scale (6 bits) |
/// Multiplier (8 bits)`, most significant bit first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorEstimate {
    /// S: the clock that took the timestamp is synchronised to UTC by an
    /// external source.
    pub synchronized: bool,
    /// Z: the format of the timestamp.
    pub format: TimestampFormat,
    /// Scale, 0 to 63; higher bits are dropped when encoding.
    pub scale: u8,
    /// Multiplier. RFC 4656 forbids 0 on transmission; it is still decoded
    /// as sent.
    pub multiplier: u8,
}

impl ErrorEstimate {
    const S_BIT: u16 = 1 << 15;
    const Z_BIT: u16 = 1 << 14;
    const SCALE_MASK: u8 = 0x3f;

    /// The 16 bits as they go on the wire.
    pub fn to_bits(self) -> u16 {
        let s = if self.synchronized { Self::S_BIT } else { 0 };
        let z = match self.format {
            TimestampFormat::Ntp => 0,
            TimestampFormat::Ptp => Self::Z_BIT,
        };
        s | z | (u16::from(self.scale & Self::SCALE_MASK) << 8) | u16::from(self.multiplier)
    }

    /// Reads the 16 bits of the wire field (every value is valid).
    pub fn from_bits(bits: u16) -> Self {
        let [high, low] = bits.to_be_bytes();
        Self {
            synchronized: bits & Self::S_BIT != 0,
            format: if bits & Self::Z_BIT != 0 {
                TimestampFormat::Ptp
            } else {
                TimestampFormat::Ntp
            },
            scale: high & Self::SCALE_MASK,
            multiplier: low,
        }
    }

    /// The estimated error in seconds: Multiplier × 2^-32 × 2^Scale.
    pub fn seconds(self) -> f64 {
        let exponent = i32::from(self.scale & Self::SCALE_MASK) - 32;
        f64::from(self.multiplier) * 2f64.powi(exponent)
    }
}

#[cfg(test)]
#[path = "timestamp_tests.rs"]
mod tests;
