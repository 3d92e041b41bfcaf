//! A reading: one value of one metric of one probe at one time, with its
//! unit and, optionally, a companion value (`with`: the wind's direction
//! with its speed, say), which the aggregates keep beside the maximum.
//!
//! The rules, checked in one place ([`ReadingInput::validate`]):
//! - `probe` and `metric`: 1 to 64 of `A-Z a-z 0-9 . _ - :` (safe as an
//!   MQTT topic level, a URL query value and a file name);
//! - `unit`: 1 to 32 printable characters (`m/s`, `°C`, `octets`);
//! - `value` and `with`: finite numbers within ±1e100;
//! - `at`: an RFC 3339 time with its offset (`2026-11-26T06:00:00Z`), not
//!   before 1970 and at most [`MAX_AHEAD_NS`] ahead of the receiver's
//!   clock; absent, the time it is received.

use serde::{Deserialize, Serialize};

/// How far ahead of the receiver's clock a reading's time may be (a
/// probe's clock a little fast is accepted; a year ahead is refused).
pub const MAX_AHEAD_NS: i64 = 3_600_000_000_000;

/// The longest probe or metric name.
pub const MAX_NAME: usize = 64;
/// The longest unit.
pub const MAX_UNIT: usize = 32;

/// A valid reading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reading {
    pub probe: String,
    pub metric: String,
    pub unit: String,
    pub value: f64,
    /// When it was read, ns since the epoch (UTC).
    pub at_ns: i64,
    /// The companion value, if any.
    pub with: Option<f64>,
}

/// A reading as it is posted to the API (every field) or published over
/// MQTT (the topic gives `probe` and `metric`), before it is checked.
// The API's schema says what a post needs (every field but `at` and
// `with`); over MQTT the topic gives the probe and the metric.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "Reading",
    extend("required" = ["probe", "metric", "unit", "value"]),
    description = "A reading (docs/readings.md)."
)]
pub struct ReadingInput {
    /// What read it: 1 to 64 letters, digits, `.`, `_`, `-` or `:`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9._:-]{1,64}$"))]
    pub probe: Option<String>,
    /// What it read, named as `probe` is.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9._:-]{1,64}$"))]
    pub metric: Option<String>,
    /// Its unit, as written (1 to 32 characters).
    #[serde(default)]
    #[schemars(length(min = 1, max = 32))]
    pub unit: Option<String>,
    #[serde(default)]
    pub value: Option<f64>,
    /// When it was read: RFC 3339 with its offset (absent: when it was
    /// received).
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub at: Option<String>,
    /// A companion value, kept beside the maximum.
    #[serde(default)]
    pub with: Option<f64>,
}

/// Why a reading is refused: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadingError {
    #[error("not a reading: {0}")]
    Json(String),
    #[error("{field}: missing")]
    Missing { field: &'static str },
    #[error("{field} {value:?}: 1 to {MAX_NAME} letters, digits, '.', '_', '-' or ':'")]
    Name { field: &'static str, value: String },
    #[error("unit {0:?}: 1 to {MAX_UNIT} printable characters")]
    Unit(String),
    #[error("{field}: {value} is not a number within ±1e100")]
    NotFinite { field: &'static str, value: f64 },
    #[error("at {value:?}: {reason}")]
    Time { value: String, reason: String },
}

/// Whether `s` is a valid probe or metric name.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'))
}

fn name(field: &'static str, v: Option<String>) -> Result<String, ReadingError> {
    let v = v.ok_or(ReadingError::Missing { field })?;
    if valid_name(&v) {
        Ok(v)
    } else {
        Err(ReadingError::Name { field, value: v })
    }
}

/// The largest magnitude of a value: far above any sensor's or counter's
/// (a 64-bit counter is below 2e19), and far enough below f64's limit
/// that a 15-minute sum of many of them stays finite.
pub const MAX_MAGNITUDE: f64 = 1e100;

fn finite(field: &'static str, v: f64) -> Result<f64, ReadingError> {
    if v.is_finite() && v.abs() <= MAX_MAGNITUDE {
        Ok(v)
    } else {
        Err(ReadingError::NotFinite { field, value: v })
    }
}

/// Parses an RFC 3339 time (with its offset) into ns since the epoch.
pub fn parse_time(s: &str) -> Result<i64, ReadingError> {
    let bad = |reason: String| ReadingError::Time {
        value: s.to_string(),
        reason,
    };
    let t: jiff::Timestamp = s
        .parse()
        .map_err(|e: jiff::Error| bad(format!("not an RFC 3339 time with an offset ({e})")))?;
    i64::try_from(t.as_nanosecond()).map_err(|_| bad("out of range".into()))
}

/// A time (ns since the epoch) as RFC 3339, UTC.
pub fn format_time(at_ns: i64) -> String {
    jiff::Timestamp::from_nanosecond(i128::from(at_ns))
        .map(|t| t.to_string())
        .unwrap_or_else(|_| at_ns.to_string())
}

impl ReadingInput {
    /// The reading, if it keeps to the rules, received at `now_ns`.
    pub fn validate(self, now_ns: i64) -> Result<Reading, ReadingError> {
        let probe = name("probe", self.probe)?;
        let metric = name("metric", self.metric)?;
        let unit = self.unit.ok_or(ReadingError::Missing { field: "unit" })?;
        if unit.is_empty() || unit.chars().count() > MAX_UNIT || unit.chars().any(char::is_control)
        {
            return Err(ReadingError::Unit(unit));
        }
        let value = finite(
            "value",
            self.value.ok_or(ReadingError::Missing { field: "value" })?,
        )?;
        let with = self.with.map(|w| finite("with", w)).transpose()?;
        let at_ns = match &self.at {
            None => now_ns,
            Some(s) => {
                let t = parse_time(s)?;
                let bad = |reason: &str| ReadingError::Time {
                    value: s.clone(),
                    reason: reason.to_string(),
                };
                if t < 0 {
                    return Err(bad("before 1970"));
                }
                if t > now_ns.saturating_add(MAX_AHEAD_NS) {
                    return Err(bad("more than an hour ahead of this agent's clock"));
                }
                t
            }
        };
        Ok(Reading {
            probe,
            metric,
            unit,
            value,
            at_ns,
            with,
        })
    }
}

impl Reading {
    /// Parses one reading from a JSON object and checks it.
    pub fn from_json(v: serde_json::Value, now_ns: i64) -> Result<Reading, ReadingError> {
        let input: ReadingInput =
            serde_json::from_value(v).map_err(|e| ReadingError::Json(e.to_string()))?;
        input.validate(now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_764_136_800_000_000_000; // 2025-11-26T06:00:00Z

    fn ok() -> serde_json::Value {
        json!({"probe": "mast-1", "metric": "wind_speed", "unit": "m/s", "value": 7.5,
               "at": "2025-11-26T05:00:00+01:00", "with": 270})
    }

    #[test]
    fn a_good_reading_is_read_with_its_time_in_utc() {
        let r = Reading::from_json(ok(), NOW).unwrap();
        assert_eq!(r.probe, "mast-1");
        assert_eq!(r.at_ns, NOW - 2 * 3_600_000_000_000);
        assert_eq!(r.with, Some(270.0));
        assert_eq!(format_time(r.at_ns), "2025-11-26T04:00:00Z");
    }

    #[test]
    fn a_reading_without_a_time_is_taken_as_received() {
        let mut v = ok();
        v.as_object_mut().unwrap().remove("at");
        assert_eq!(Reading::from_json(v, NOW).unwrap().at_ns, NOW);
    }

    #[test]
    fn bad_readings_are_refused_naming_the_field() {
        let cases = [
            ("probe", json!("a b"), "probe \"a b\""),
            ("probe", json!("x/y"), "probe \"x/y\""),
            ("metric", json!("#"), "metric \"#\""),
            ("metric", json!("m".repeat(65)), "metric"),
            ("unit", json!(""), "unit \"\""),
            ("value", json!("7"), "not a reading"),
            ("with", json!("north"), "not a reading"),
            ("at", json!("2025-11-26 06:00"), "at \"2025-11-26 06:00\""),
            ("at", json!("2025-11-26T06:00:00"), "offset"),
            ("at", json!("2099-01-01T00:00:00Z"), "ahead"),
            ("at", json!("1969-12-31T23:59:59Z"), "before 1970"),
            ("extra", json!(1), "unknown field `extra`"),
        ];
        for (field, value, expected) in cases {
            let mut v = ok();
            v[field] = value;
            let e = Reading::from_json(v, NOW).unwrap_err().to_string();
            assert!(e.contains(expected), "{field}: {e}");
        }
        let mut v = ok();
        v.as_object_mut().unwrap().remove("value");
        assert_eq!(
            Reading::from_json(v, NOW).unwrap_err().to_string(),
            "value: missing"
        );
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        let input = ReadingInput {
            probe: Some("p".into()),
            metric: Some("m".into()),
            unit: Some("u".into()),
            value: Some(f64::NAN),
            ..Default::default()
        };
        let huge = ReadingInput {
            value: Some(1.7e308),
            ..input.clone()
        };
        assert!(matches!(
            huge.validate(NOW),
            Err(ReadingError::NotFinite { field: "value", .. })
        ));
        assert!(matches!(
            input.clone().validate(NOW),
            Err(ReadingError::NotFinite { field: "value", .. })
        ));
        let input = ReadingInput {
            value: Some(1.0),
            with: Some(f64::INFINITY),
            ..input
        };
        assert!(matches!(
            input.validate(NOW),
            Err(ReadingError::NotFinite { field: "with", .. })
        ));
    }
}
