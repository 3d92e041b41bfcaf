//! Readings from probes (sensor values, router interface counters, any
//! metric with a unit): what a valid reading is, and how readings fold
//! into 15-minute aggregates and each day's highs and lows
//! (docs/readings.md).
//!
//! - [`reading`]: the [`Reading`] and its rules (names, units, finite
//!   numbers, a time not in the future), parsed from the API's JSON or
//!   from an MQTT message;
//! - [`aggregate`]: 15-minute buckets, days, months (UTC), and the
//!   [`Summary`] of a span: count, mean, min, max, and the companion value
//!   that goes with the max;
//! - [`mqtt`]: the topic layout and the subscriber.

pub mod aggregate;
pub mod mqtt;
mod mqtt_tls;
pub mod reading;
pub mod readings_config;

pub use aggregate::{Interval, Sample, Summary, BUCKET_NS, DAY_NS};
pub use mqtt::{MqttSubscriber, SubscriberOptions, SubscriberStats};
pub use reading::{Reading, ReadingError, ReadingInput};
pub use readings_config::ReadingsConfig;
