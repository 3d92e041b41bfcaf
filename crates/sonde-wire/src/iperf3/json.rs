//! Reading iperf3's JSON leniently and with errors that name the key.
//!
//! iperf3 builds its JSON with cJSON, which stores every number as a
//! double: an integer may come as `5` or `5.0` or `1e7`, and iperf3 3.12
//! to 3.13 print negative integers as unsigned 64-bit ones (`-1` becomes
//! `18446744073709551615`). Flags come as `true` or as a number. The
//! readers here accept all of that, treat `null` as absent, and refuse
//! anything else with an error naming the key.

use super::Iperf3Error;
use serde_json::{Map, Number, Value};

/// Parses a payload into a JSON object.
pub(super) fn parse_object(
    payload: &[u8],
    what: &'static str,
) -> Result<Map<String, Value>, Iperf3Error> {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(Iperf3Error::NotAnObject {
            what,
            found: kind(&other),
        }),
        Err(e) => Err(Iperf3Error::NotJson(e.to_string())),
    }
}

/// An array element that must be an object; `path` names it in errors.
pub(super) fn object_at<'a>(
    value: &'a Value,
    path: &str,
) -> Result<&'a Map<String, Value>, Iperf3Error> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Iperf3Error::WrongType {
            key: path.to_string(),
            expected: "an object",
            found: describe(other),
        }),
    }
}

/// The keys of one JSON object, with the path used to name them in
/// errors (`""` at the top, `"streams[2]."` inside an array element).
pub(super) struct Fields<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
}

impl<'a> Fields<'a> {
    pub(super) fn new(map: &'a Map<String, Value>, prefix: String) -> Self {
        Self { map, prefix }
    }

    /// The full name of `key`, for errors.
    pub(super) fn path(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The value under `key`, `None` when absent or `null`.
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn wrong_type(&self, key: &str, expected: &'static str, found: &Value) -> Iperf3Error {
        Iperf3Error::WrongType {
            key: self.path(key),
            expected,
            found: describe(found),
        }
    }

    fn out_of_range(&self, key: &str, value: &Number, expected: &'static str) -> Iperf3Error {
        Iperf3Error::OutOfRange {
            key: self.path(key),
            value: value.to_string(),
            expected,
        }
    }

    /// A value that must be present.
    pub(super) fn required<T>(&self, key: &str, value: Option<T>) -> Result<T, Iperf3Error> {
        value.ok_or_else(|| Iperf3Error::MissingKey {
            key: self.path(key),
        })
    }

    fn number(&self, key: &str) -> Result<Option<&'a Number>, Iperf3Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(Some(n)),
            Some(other) => Err(self.wrong_type(key, "a number", other)),
        }
    }

    /// An unsigned integer; an integral float is accepted.
    pub(super) fn u64(&self, key: &str) -> Result<Option<u64>, Iperf3Error> {
        let Some(n) = self.number(key)? else {
            return Ok(None);
        };
        if let Some(v) = n.as_u64() {
            return Ok(Some(v));
        }
        match n.as_f64() {
            Some(f) if is_integral(f) && (0.0..TWO_POW_64).contains(&f) => Ok(Some(f as u64)),
            _ => Err(self.out_of_range(key, n, "a non-negative integer")),
        }
    }

    /// An unsigned integer that must fit a `u32`.
    pub(super) fn u32(&self, key: &str) -> Result<Option<u32>, Iperf3Error> {
        self.narrow(key, self.u64(key)?, "an integer from 0 to 4294967295")
    }

    /// An unsigned integer that must fit a `u8`.
    pub(super) fn u8(&self, key: &str) -> Result<Option<u8>, Iperf3Error> {
        self.narrow(key, self.u64(key)?, "an integer from 0 to 255")
    }

    fn narrow<T: TryFrom<u64>>(
        &self,
        key: &str,
        value: Option<u64>,
        expected: &'static str,
    ) -> Result<Option<T>, Iperf3Error> {
        value
            .map(|v| {
                T::try_from(v).map_err(|_| Iperf3Error::OutOfRange {
                    key: self.path(key),
                    value: v.to_string(),
                    expected,
                })
            })
            .transpose()
    }

    /// A signed integer. Integers from 2^63 to 2^64 − 1 are read as the
    /// negative numbers iperf3 3.12 meant (two's complement).
    pub(super) fn i64(&self, key: &str) -> Result<Option<i64>, Iperf3Error> {
        let Some(n) = self.number(key)? else {
            return Ok(None);
        };
        if let Some(v) = n.as_i64() {
            return Ok(Some(v));
        }
        if let Some(v) = n.as_u64() {
            return Ok(Some(v as i64));
        }
        match n.as_f64() {
            Some(f) if is_integral(f) && (-TWO_POW_63..TWO_POW_63).contains(&f) => {
                Ok(Some(f as i64))
            }
            _ => Err(self.out_of_range(key, n, "an integer")),
        }
    }

    /// A finite number, integer or not.
    pub(super) fn f64(&self, key: &str) -> Result<Option<f64>, Iperf3Error> {
        let Some(n) = self.number(key)? else {
            return Ok(None);
        };
        match n.as_f64() {
            Some(f) if f.is_finite() => Ok(Some(f)),
            _ => Err(self.out_of_range(key, n, "a finite number")),
        }
    }

    /// A flag: `true`/`false`, or a number (non-zero is set). Absent or
    /// `null` is not set.
    pub(super) fn flag(&self, key: &str) -> Result<bool, Iperf3Error> {
        Ok(self.opt_flag(key)?.unwrap_or(false))
    }

    /// A flag whose absence is worth telling from `false`.
    pub(super) fn opt_flag(&self, key: &str) -> Result<Option<bool>, Iperf3Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::Number(n)) => Ok(Some(n.as_f64().is_some_and(|f| f != 0.0))),
            Some(other) => Err(self.wrong_type(key, "true, false or a number", other)),
        }
    }

    /// A string.
    pub(super) fn string(&self, key: &str) -> Result<Option<String>, Iperf3Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.wrong_type(key, "a string", other)),
        }
    }

    /// An array.
    pub(super) fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, Iperf3Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(other) => Err(self.wrong_type(key, "an array", other)),
        }
    }
}

const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

fn is_integral(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0
}

/// The JSON type of a value, with an article, for error messages.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The type and (shortened) text of a value, for error messages.
fn describe(value: &Value) -> String {
    const SHOWN: usize = 40;
    if matches!(value, Value::Array(_) | Value::Object(_)) {
        return kind(value).to_string();
    }
    let text = value.to_string();
    let short: String = text.chars().take(SHOWN).collect();
    let more = if short.len() < text.len() { "…" } else { "" };
    format!("{} ({short}{more})", kind(value))
}
