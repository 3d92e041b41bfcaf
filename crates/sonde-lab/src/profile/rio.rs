//! `rio = { green = { min = 11, max = 18, max_p = 0.001 }, …, weight = 0.008 }`:
//! RED with In and Out on the line's queue. A colour or key not given
//! keeps seed 004 Table 8's value.

use super::read::{opt, path, read_probability, unknown_key, wrong_type};
use super::ProfileError;
use crate::emulator::{RedThresholds, Rio};
use toml::Value;

const RIO_KEYS: [&str; 4] = ["green", "yellow", "red", "weight"];
const RIO_KNOWN: &str = "green, yellow, red, weight";
const COLOUR_KEYS: [&str; 3] = ["min", "max", "max_p"];
const COLOUR_KNOWN: &str = "min, max, max_p";

pub(super) fn read_rio(key: &str, v: &Value) -> Result<Rio, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(key, "a table { green, yellow, red, weight }", v));
    };
    unknown_key(key, t, &RIO_KEYS, RIO_KNOWN)?;
    let mut rio = Rio::default();
    for (name, colour) in [
        ("green", &mut rio.green),
        ("yellow", &mut rio.yellow),
        ("red", &mut rio.red),
    ] {
        if let Some(c) = t.get(name) {
            *colour = read_colour(&path(key, name), c, *colour)?;
        }
    }
    if let Some(w) = opt(t, key, "weight", read_probability)? {
        if w <= 0.0 {
            return Err(ProfileError::BadLineQueue {
                key: path(key, "weight"),
                why: "the averages' weight must be above 0 (seed 004: 0.008)",
            });
        }
        rio.weight = w;
    }
    Ok(rio)
}

/// A packet count of average queue: a number of 0 or more.
fn read_packets(key: &str, v: &Value) -> Result<f64, ProfileError> {
    match v {
        Value::Integer(i) if *i >= 0 => Ok(*i as f64),
        Value::Float(f) if f.is_finite() && *f >= 0.0 => Ok(*f),
        _ => Err(ProfileError::BadLineQueue {
            key: key.to_string(),
            why: "a number of packets, 0 or more",
        }),
    }
}

fn read_colour(key: &str, v: &Value, base: RedThresholds) -> Result<RedThresholds, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(key, "a table { min, max, max_p }", v));
    };
    unknown_key(key, t, &COLOUR_KEYS, COLOUR_KNOWN)?;
    let c = RedThresholds {
        min: opt(t, key, "min", read_packets)?.unwrap_or(base.min),
        max: opt(t, key, "max", read_packets)?.unwrap_or(base.max),
        max_p: opt(t, key, "max_p", read_probability)?.unwrap_or(base.max_p),
    };
    if c.min >= c.max {
        return Err(ProfileError::BadLineQueue {
            key: key.to_string(),
            why: "min must be below max",
        });
    }
    Ok(c)
}
