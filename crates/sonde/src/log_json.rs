//! `--log-format json`: the log as one JSON object a line, for log
//! shippers (docs/serve.md, "The log"). Each line has `time` (RFC 3339,
//! UTC, to the microsecond), `level`, `message`, the event's fields (`peer`, `test`, `limit`,
//! `reason`, …) and, for the events whose meaning is stable, `event`: the
//! name the code gives them (`tracing::warn!(name: "test_refused", …)`).
//!
//! Written here rather than with tracing-subscriber's own JSON format:
//! that one has no place for an event's name, which is what a shipper
//! filters on.

use serde_json::{Map, Value};
use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON lines format.
pub struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert(
            "time".into(),
            sonde_model::clock::rfc3339_micros(sonde_model::clock::now_ns()).into(),
        );
        line.insert("level".into(), meta.level().as_str().to_lowercase().into());
        // An event without a name of its own is called "event FILE:LINE":
        // no name a shipper could rely on.
        if !meta.name().starts_with("event ") {
            line.insert("event".into(), meta.name().into());
        }
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        for (k, v) in fields.0 {
            line.entry(k).or_insert(v);
        }
        writeln!(w, "{}", Value::Object(line))
    }
}

/// An event's fields as JSON values: numbers and booleans as such, the
/// rest as the text the text format shows.
struct Fields(Map<String, Value>);

impl Fields {
    fn put(&mut self, field: &Field, v: Value) {
        self.0.insert(field.name().to_string(), v);
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}").into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, value.to_string().into());
    }
}
