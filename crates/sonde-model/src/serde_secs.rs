//! Durations written as seconds (`f64`) in JSON, with the unit in the
//! field name (`time_s`, `interval_s`), read from seconds or from any
//! spelling [`crate::duration::parse_duration`] takes (`"5m"`), so TOML
//! files can say what they mean.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Secs(f64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Secs(v) => Duration::try_from_secs_f64(v).map_err(|_| {
            serde::de::Error::custom(format!("{v} is not a duration in seconds (at least 0)"))
        }),
        Raw::Text(t) => crate::duration::parse_duration(&t).map_err(serde::de::Error::custom),
    }
}

/// An optional duration, as seconds or `null` (`#[serde(with =
/// "crate::serde_secs::option", default)]`).
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Secs(#[serde(deserialize_with = "super::deserialize")] Duration);
        Ok(Option::<Secs>::deserialize(d)?.map(|s| s.0))
    }
}

/// A list of durations, each as seconds (`#[serde(with =
/// "crate::serde_secs::vec")]`).
pub mod vec {
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for d in v {
            seq.serialize_element(&d.as_secs_f64())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Secs(#[serde(deserialize_with = "super::deserialize")] Duration);
        Ok(Vec::<Secs>::deserialize(d)?
            .into_iter()
            .map(|s| s.0)
            .collect())
    }
}
