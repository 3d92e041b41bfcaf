//! Tests of STAMP's timestamps and Error Estimate.

use super::*;
use proptest::prelude::*;
use std::time::Duration;

// ---- NTP timestamps ----

#[test]
fn the_unix_epoch_is_ntp_second_2208988800() {
    let epoch = NtpTimestamp::from_parts(2_208_988_800, 0);
    assert_eq!(NtpTimestamp::from_unix_nanos(0), epoch);
    assert_eq!(epoch.to_unix_nanos(), 0);
    assert_eq!(
        NtpTimestamp(0).to_unix_nanos(),
        -2_208_988_800 * NANOS_PER_SEC
    );
    // 2000-01-01T00:00:00Z: Unix 946684800, NTP 3155673600.
    let y2k = NtpTimestamp::from_unix_nanos(946_684_800 * NANOS_PER_SEC);
    assert_eq!((y2k.seconds(), y2k.fraction()), (3_155_673_600, 0));
}

#[test]
fn fractions_round_to_the_nearest_unit() {
    let half = NtpTimestamp::from_unix_nanos(500_000_000);
    assert_eq!(
        (half.seconds(), half.fraction()),
        (2_208_988_800, 0x8000_0000)
    );
    // 1 ns = 4.29 units of 2^-32 s; 999_999_999 ns = 2^32 - 4.29 units.
    assert_eq!(NtpTimestamp::from_unix_nanos(1).fraction(), 4);
    assert_eq!(
        NtpTimestamp::from_unix_nanos(999_999_999).fraction(),
        u32::MAX - 3
    );
    // Back to nanoseconds: one unit is 0.23 ns, rounding to 0.
    assert_eq!(
        NtpTimestamp::from_parts(2_208_988_800, 1).to_unix_nanos(),
        0
    );
    assert_eq!(
        NtpTimestamp::from_parts(2_208_988_800, 3).to_unix_nanos(),
        1
    );
}

#[test]
fn timestamps_after_2036_wrap_and_come_back_near_a_reference() {
    // 2036-02-07T06:28:16Z starts NTP era 1.
    let era_1 = 2_085_978_496 * NANOS_PER_SEC;
    assert_eq!(NtpTimestamp::from_unix_nanos(era_1), NtpTimestamp(0));
    let later = era_1 + 1_234 * NANOS_PER_SEC + 5;
    let ts = NtpTimestamp::from_unix_nanos(later);
    assert_eq!(ts.seconds(), 1_234);
    assert_eq!(ts.to_unix_nanos(), later - ERA_NANOS);
    assert_eq!(ts.to_unix_nanos_near(later + 3_600 * NANOS_PER_SEC), later);
    // From 1970 the instant in 2036 is nearer than the one in 1900 ...
    assert_eq!(ts.to_unix_nanos_near(0), later);
    // ... and from 1930 it is the other way round.
    let in_1930 = -40 * 365 * 86_400 * NANOS_PER_SEC;
    assert_eq!(ts.to_unix_nanos_near(in_1930), later - ERA_NANOS);
    let today = 1_700_000_000 * NANOS_PER_SEC;
    let now = NtpTimestamp::from_unix_nanos(today);
    assert_eq!(now.to_unix_nanos_near(today - 1), today);
    // Absurd references saturate instead of overflowing.
    let _ = now.to_unix_nanos_near(i128::MAX);
    let _ = now.to_unix_nanos_near(i128::MIN);
}

#[test]
fn system_times_convert_like_unix_nanos() {
    let after = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
    let nanos = 1_700_000_000_123_456_789;
    assert_eq!(
        NtpTimestamp::from_system_time(after),
        NtpTimestamp::from_unix_nanos(nanos)
    );
    assert_eq!(NtpTimestamp::from_system_time(after).to_unix_nanos(), nanos);
    let before = UNIX_EPOCH - Duration::new(10, 5);
    assert_eq!(
        NtpTimestamp::from_system_time(before).to_unix_nanos(),
        -10_000_000_005
    );
}

proptest! {
    #[test]
    fn nanoseconds_survive_ntp_exactly(
        nanos in -NTP_UNIX_OFFSET_NANOS..ERA_NANOS - NTP_UNIX_OFFSET_NANOS,
    ) {
        prop_assert_eq!(NtpTimestamp::from_unix_nanos(nanos).to_unix_nanos(), nanos);
    }

    #[test]
    fn ntp_bits_survive_nanoseconds_within_three_units(bits in any::<u64>()) {
        let back = NtpTimestamp::from_unix_nanos(NtpTimestamp(bits).to_unix_nanos());
        let units = back.0.wrapping_sub(bits) as i64;
        prop_assert!(units.abs() <= 3, "{bits:#x} came back as {:#x}", back.0);
    }
}

// ---- Error Estimate ----

#[test]
fn error_estimate_bits_sit_where_rfc_4656_says() {
    let none = ErrorEstimate {
        synchronized: false,
        format: TimestampFormat::Ntp,
        scale: 0,
        multiplier: 0,
    };
    assert_eq!(none.to_bits(), 0);
    let s = ErrorEstimate {
        synchronized: true,
        ..none
    };
    assert_eq!(s.to_bits(), 0x8000);
    let z = ErrorEstimate {
        format: TimestampFormat::Ptp,
        ..none
    };
    assert_eq!(z.to_bits(), 0x4000);
    let scale = ErrorEstimate { scale: 63, ..none };
    assert_eq!(scale.to_bits(), 0x3f00);
    let too_big = ErrorEstimate {
        scale: 0xff,
        ..none
    };
    assert_eq!(too_big.to_bits(), 0x3f00);
    let multiplier = ErrorEstimate {
        multiplier: 0xff,
        ..none
    };
    assert_eq!(multiplier.to_bits(), 0x00ff);
    assert_eq!(
        ErrorEstimate::from_bits(0xC1C2),
        ErrorEstimate {
            synchronized: true,
            format: TimestampFormat::Ptp,
            scale: 1,
            multiplier: 0xC2,
        }
    );
}

#[test]
fn error_estimate_in_seconds() {
    let ee = |scale, multiplier| ErrorEstimate {
        synchronized: true,
        format: TimestampFormat::Ntp,
        scale,
        multiplier,
    };
    assert_eq!(ee(32, 1).seconds(), 1.0);
    assert_eq!(ee(0, 1).seconds(), 2f64.powi(-32));
    assert_eq!(ee(22, 5).seconds(), 5.0 / 1024.0);
    assert_eq!(ee(63, 255).seconds(), 255.0 * 2f64.powi(31));
}

proptest! {
    #[test]
    fn error_estimate_bits_round_trip(bits in any::<u16>()) {
        prop_assert_eq!(ErrorEstimate::from_bits(bits).to_bits(), bits);
    }
}
