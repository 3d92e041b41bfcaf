//! [`Spec`]: every request sonde runs, a test or a method, in one type,
//! and the one parser of it.
//!
//! A spec file (`sonde run`), a campaign step, a mesh share's step and an
//! HTTP API body are all read here. A mistake is named where it is: by
//! key path and JSON pointer (`/trial/bitrate_bps`) and, in a TOML file,
//! by line and column too.
//!
//! Tests and methods are tagged (`test = "tcp"`, `method = "ndr"`); a
//! tagged enum is read through a buffer that forgets where its fields
//! were, so the parser reads the tag itself and then the variant's own
//! struct, whose errors keep their place.

use crate::method::{
    NdrSpec, OverheadSpec, QosCheckSpec, QosScenarioSpec, RepeatSpec, SweepSpec, TuneLabSpec,
    TuneSpec,
};
use crate::{HttpSpec, MethodSpec, PingSpec, SpecError, TcpSpec, TestSpec, UdpSpec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Any request: one test, or a method that runs many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Spec {
    Test(TestSpec),
    Method(MethodSpec),
}

/// Why a spec did not read, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct ParseError {
    /// The JSON pointer of the value at fault (`/trial/bitrate_bps`; `/`
    /// for the document), or a TOML file's line and column with it.
    pub at: String,
    pub message: String,
}

impl ParseError {
    fn new(at: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            at: at.into(),
            message: message.into(),
        }
    }
}

impl From<SpecError> for ParseError {
    fn from(e: SpecError) -> Self {
        ParseError::new(format!("/{}", e.field.replace('.', "/")), e.reason)
    }
}

/// A JSON pointer of serde's path (`trial.bitrate_bps` → `/trial/bitrate_bps`).
fn pointer(path: &serde_path_to_error::Path) -> String {
    let p = path.to_string();
    if p == "." {
        return "/".into();
    }
    format!("/{}", p.replace(['.', '['], "/").replace(']', ""))
}

/// Reads a variant's own struct from what is left once the tag is out;
/// an error names the pointer of the value at fault.
fn one<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ParseError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut at = pointer(e.path());
        let message = e.into_inner().to_string();
        // An unknown key is named by the table it is in: name the key.
        if let Some(key) = message
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            at = format!("{}/{key}", at.trim_end_matches('/'));
        }
        ParseError::new(at, message)
    })
}

/// The request `tag` / `kind` names, read from `v`.
fn dispatch(tag: &str, kind: &str, v: serde_json::Value) -> Result<Spec, ParseError> {
    use MethodSpec as M;
    use TestSpec as T;
    Ok(match (tag, kind) {
        ("test", "tcp") => Spec::Test(T::Tcp(one::<TcpSpec>(v)?)),
        ("test", "udp") => Spec::Test(T::Udp(one::<UdpSpec>(v)?)),
        ("test", "ping") => Spec::Test(T::Ping(one::<PingSpec>(v)?)),
        ("test", "http") => Spec::Test(T::Http(one::<HttpSpec>(v)?)),
        ("test", "trace") => Spec::Test(T::Trace(one::<crate::TraceSpec>(v)?)),
        ("method", "ndr") => Spec::Method(M::Ndr(one::<NdrSpec>(v)?)),
        ("method", "sweep") => Spec::Method(M::Sweep(one::<SweepSpec>(v)?)),
        ("method", "repeat") => Spec::Method(M::Repeat(one::<RepeatSpec>(v)?)),
        ("method", "qos_check") => Spec::Method(M::QosCheck(one::<QosCheckSpec>(v)?)),
        ("method", "qos_scenario") => Spec::Method(M::QosScenario(one::<QosScenarioSpec>(v)?)),
        ("method", "overhead") => Spec::Method(M::Overhead(one::<OverheadSpec>(v)?)),
        ("method", "tune") => Spec::Method(M::Tune(one::<TuneSpec>(v)?)),
        ("method", "tune_lab") => Spec::Method(M::TuneLab(one::<TuneLabSpec>(v)?)),
        ("test", other) => {
            return Err(ParseError::new(
                "/test",
                format!("'{other}' is not a test: use tcp, udp, ping, http or trace"),
            ))
        }
        (_, other) => {
            return Err(ParseError::new(
                "/method",
                format!(
                    "'{other}' is not a method: use ndr, sweep, repeat, qos_check, \
                     qos_scenario, overhead, tune or tune_lab"
                ),
            ))
        }
    })
}

/// The tag of a request object: `("test", kind)` or `("method", kind)`.
/// A test's tag comes first: an HTTP test has a `method` of its own
/// ("GET"), and a method's `test` is a table, not a name.
fn tag_of(
    obj: &serde_json::Map<String, serde_json::Value>,
) -> Result<(&'static str, String), ParseError> {
    if let Some(serde_json::Value::String(k)) = obj.get("test") {
        return Ok(("test", k.clone()));
    }
    match obj.get("method") {
        Some(serde_json::Value::String(k)) => Ok(("method", k.clone())),
        Some(_) => Err(ParseError::new("/method", "must be text")),
        None if obj.contains_key("test") => Err(ParseError::new(
            "/test",
            "must be text (tcp, udp, ping, http or trace), or give a method",
        )),
        None => Err(ParseError::new(
            "/",
            "say what it runs: \"test\": \"tcp\"|\"udp\"|\"ping\"|\"http\"|\"trace\", or \"method\": …",
        )),
    }
}

impl Spec {
    /// Reads a spec from a JSON value (an API body, a converted TOML
    /// table): errors carry the JSON pointer of the value at fault.
    pub fn from_value(value: serde_json::Value) -> Result<Spec, ParseError> {
        let serde_json::Value::Object(mut obj) = value else {
            return Err(ParseError::new("/", "a spec is an object"));
        };
        let (tag, kind) = tag_of(&obj)?;
        obj.remove(tag);
        // An HTTP test's host is its URL's, unless given.
        if kind == "http" && !obj.contains_key("host") {
            if let Some(host) = obj
                .get("url")
                .and_then(serde_json::Value::as_str)
                .and_then(|u| HttpSpec::host_of(u).ok())
            {
                obj.insert("host".into(), serde_json::Value::String(host));
            }
        }
        let spec = dispatch(tag, &kind, serde_json::Value::Object(obj))?;
        spec.validate().map_err(ParseError::from)?;
        Ok(spec)
    }

    /// Reads a JSON document.
    pub fn from_json(bytes: &[u8]) -> Result<Spec, ParseError> {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            ParseError::new(
                format!("line {}, column {}", e.line(), e.column()),
                e.to_string(),
            )
        })?;
        Spec::from_value(value)
    }

    /// Reads a TOML document: a mistake in a value is named by its
    /// pointer and by the line it is on.
    pub fn from_toml(text: &str) -> Result<Spec, ParseError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            ParseError::new(line_of(text, e.span()), e.message().trim_end().to_string())
        })?;
        let value =
            serde_json::to_value(&table).map_err(|e| ParseError::new("/", e.to_string()))?;
        Spec::from_value(value).map_err(|e| {
            // A TOML file names the key (`step.repeat.min_runs`) and its
            // line, not a pointer.
            let key = e.at.trim_start_matches('/').replace('/', ".");
            match key_line(text, &key) {
                Some(line) if !key.is_empty() => {
                    ParseError::new(format!("line {line}, {key}"), e.message)
                }
                _ if key.is_empty() => e,
                _ => ParseError::new(key, e.message),
            }
        })
    }

    /// JSON when `text` starts with `{`, TOML otherwise.
    pub fn parse(text: &str) -> Result<Spec, ParseError> {
        if text.trim_start().starts_with('{') {
            Spec::from_json(text.as_bytes())
        } else {
            Spec::from_toml(text)
        }
    }

    /// The spec's own rules.
    pub fn validate(&self) -> Result<(), SpecError> {
        match self {
            Spec::Test(t) => t.validate(),
            Spec::Method(m) => m.validate(),
        }
    }

    /// What it runs: a test's kind or a method's name.
    pub fn name(&self) -> &'static str {
        match self {
            Spec::Test(t) => t.kind().name(),
            Spec::Method(m) => m.kind().name(),
        }
    }
}

/// `line N` of a byte span's start.
fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(s) => {
            let before = &text[..s.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}")
        }
        None => "/".into(),
    }
}

/// The line a dotted key is on: `trial.bitrate_bps` in the `[trial]`
/// table, else the table's own line, else a top-level `key =`.
fn key_line(text: &str, key: &str) -> Option<usize> {
    let parts: Vec<&str> = key.split('.').collect();
    let lines: Vec<&str> = text.lines().map(str::trim_start).collect();
    let assigns = |l: &str, k: &str| {
        l.strip_prefix(k)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    for depth in (1..parts.len()).rev() {
        let header = format!("[{}]", parts[..depth].join("."));
        if let Some(h) = lines.iter().position(|l| l.starts_with(&header)) {
            let leaf = parts[depth];
            let within = lines[h + 1..]
                .iter()
                .take_while(|l| !l.starts_with('['))
                .position(|l| assigns(l, leaf));
            return Some(within.map_or(h + 1, |w| h + 2 + w));
        }
    }
    lines
        .iter()
        .take_while(|l| !l.starts_with('['))
        .position(|l| assigns(l, parts[0]))
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_spell_the_same_request() {
        let t = Spec::parse("test = \"udp\"\nhost = \"::1\"\ntime_s = \"5m\"\n").unwrap();
        let j = Spec::parse(r#"{"test": "udp", "host": "::1", "time_s": 300}"#).unwrap();
        assert_eq!(t, j);
        assert!(matches!(t, Spec::Test(TestSpec::Udp(_))));
        let m = Spec::parse(r#"{"method": "ndr", "trial": {"host": "::1"}}"#).unwrap();
        assert_eq!(m.name(), "ndr");
    }

    #[test]
    fn a_mistake_is_named_by_pointer_and_line() {
        let e =
            Spec::parse(r#"{"method": "ndr", "trial": {"host": "::1", "bitrate_bps": "fast"}}"#)
                .unwrap_err();
        assert_eq!(e.at, "/trial/bitrate_bps", "{e}");
        let e = Spec::parse("test = \"tcp\"\nhost = \"::1\"\nparalel = 4\n").unwrap_err();
        assert!(e.message.contains("paralel"), "{e}");
        let e = Spec::parse("test = \"tcp\"\nhost = \"::1\"\ntime_s = \"soon\"\n").unwrap_err();
        assert_eq!(e.at, "line 3, time_s", "{e}");
        let e = Spec::parse("method = \"ndr\"\n[trial]\nhost = \"::1\"\nbitrate_bps = \"x\"\n")
            .unwrap_err();
        assert_eq!(e.at, "line 4, trial.bitrate_bps", "{e}");
        let e = Spec::parse("test = \"tcp\"\nhost = [\n").unwrap_err();
        assert!(e.at.starts_with("line 2"), "{e}");
        let e = Spec::parse(r#"{"test": "icmp", "host": "::1"}"#).unwrap_err();
        assert_eq!(e.at, "/test");
        let e = Spec::parse(r#"{"test": "tcp", "host": "::1", "parallel": 0}"#).unwrap_err();
        assert_eq!(e.at, "/parallel", "validated too: {e}");
        let e = Spec::parse(r#"{"host": "::1"}"#).unwrap_err();
        assert!(e.message.contains("say what it runs"), "{e}");
    }
}
