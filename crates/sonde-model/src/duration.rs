//! Durations as engineers write them: `10s`, `500ms`, `5m`, `1h30m`, or a
//! bare number of seconds (`10`, `0.5`), as iperf3's `-t` takes them.
//!
//! The one parser for every flag, campaign file, config file and JSON
//! body: `-t 10`, `--max-duration 10` and `time = "10s"` all mean ten
//! seconds.

use std::time::Duration;

/// A value that could not be read as a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a duration (e.g. 10s, 500ms, 5m, or seconds as a number)")]
pub struct DurationError(pub String);

/// Reads `10s`, `500ms`, `5m`, `1h 30m` (humantime) or bare seconds.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    if let Ok(d) = humantime::parse_duration(s) {
        return Ok(d);
    }
    s.parse::<f64>()
        .ok()
        .and_then(|v| Duration::try_from_secs_f64(v).ok())
        .ok_or_else(|| DurationError(input.to_string()))
}

/// The spelling [`parse_duration`] reads back: `10s`, `1m 30s`, `500ms`.
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds_mean_the_same() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(
            parse_duration(" 1h 30m ").unwrap(),
            Duration::from_secs(5400)
        );
    }

    #[test]
    fn nonsense_is_refused_with_the_input() {
        for bad in ["", "-1", "ten", "10 parsecs", "NaN", "inf"] {
            let e = parse_duration(bad).unwrap_err();
            assert_eq!(e.0, bad);
        }
    }

    #[test]
    fn formatted_durations_read_back() {
        for d in [Duration::from_millis(1500), Duration::from_secs(3600)] {
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }
    }
}
