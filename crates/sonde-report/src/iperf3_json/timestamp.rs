//! `start.timestamp` as iperf3 writes it: RFC 1123 in GMT, seconds and
//! milliseconds since the Unix epoch.

use serde_json::{json, Value};
use sonde_model::Timestamp;
use std::time::UNIX_EPOCH;

/// `start.timestamp` of a test that started at `t`.
pub(crate) fn timestamp(t: Timestamp) -> Value {
    let since_epoch = t.0.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since_epoch.as_secs();
    json!({
        "time": rfc1123(secs),
        "timesecs": secs,
        "timemillisecs": u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX),
    })
}

const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Seconds since the Unix epoch as iperf3 writes `timestamp.time`:
/// `Sun, 22 Nov 2026 13:42:24 GMT`.
pub(crate) fn rfc1123(secs: u64) -> String {
    let days = secs / 86_400;
    let day_secs = secs % 86_400;
    let (year, month, day) = civil_date(days);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        day_secs / 3600,
        day_secs % 3600 / 60,
        day_secs % 60
    )
}

/// Year, month (1–12) and day of the `days`-th day after 1970-01-01, in
/// the proleptic Gregorian calendar (H. Hinnant's days-to-civil).
fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}
