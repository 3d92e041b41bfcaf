//! The wall clock as sonde keeps times: nanoseconds since the Unix epoch
//! in an `i64` (the archive's column type), and RFC 3339 in UTC for
//! people. One place for both, so every crate reads and writes times the
//! same way.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in nanoseconds since the Unix epoch (0 before it, `i64::MAX`
/// after 2262).
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Sleeps until `until`, or until `stop` is set (looked at every 200 ms):
/// a sampler's wait between two samples that a stop does not outlast.
pub fn sleep_until_or(until: std::time::Instant, stop: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    while !stop.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(200)));
    }
}

/// `at_ns` (ns since the epoch) as RFC 3339 in UTC, to the second
/// (truncated): `2026-11-26T09:00:00Z`. Times before the epoch are
/// written as the epoch.
pub fn rfc3339(at_ns: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_nanos(u64::try_from(at_ns).unwrap_or(0));
    humantime::format_rfc3339_seconds(at).to_string()
}

/// `at_ns` as RFC 3339 in UTC to the microsecond, for log lines:
/// `2026-11-26T09:00:00.999999Z`.
pub fn rfc3339_micros(at_ns: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_nanos(u64::try_from(at_ns).unwrap_or(0));
    humantime::format_rfc3339_micros(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_to_the_second_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_683_600_999_999_999), "2026-11-26T09:00:00Z");
        assert_eq!(rfc3339(-5), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_micros(1_795_683_600_999_999_999),
            "2026-11-26T09:00:00.999999Z"
        );
    }

    #[test]
    fn now_is_after_this_code_was_written() {
        assert!(now_ns() > 1_795_683_600_000_000_000);
    }
}
