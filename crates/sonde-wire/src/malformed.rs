//! Naming what is wrong in a client message that does not decode: which
//! field, and what about it, so the server's refusal can say so
//! (`invalid_spec{field, detail}`, docs/protocol.md).
//!
//! serde's own error for an internally tagged message says what was
//! wrong but not where. This takes the payload apart as JSON and tries
//! each field alone on a known-good message of the same kind: the first
//! field that fails there is the one named. The spec's fields are named
//! by their keys (`parallel`, `time_s`), as `TestSpec::validate` names
//! them; the message's own fields by theirs (`type`, `test_id`, `env.os`).

use crate::auth::{Mac, Nonce};
use crate::message::{StreamAck, TestId};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use sonde_model::{HostEnv, PingSpec, SideReport, TcpSpec, TestSpec, UdpSideReport, UdpSpec};

/// Longest field name or reason a fault keeps: a refusal stays small
/// whatever a client sent.
const MAX_TEXT: usize = 200;

/// What a malformed message got wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The field, e.g. `parallel`, `type`, `env.os`; `message` for the
    /// whole payload.
    pub field: String,
    /// What was wrong with it.
    pub reason: String,
}

impl Fault {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: clip(field.into()),
            reason: clip(reason.into()),
        }
    }
}

fn clip(mut s: String) -> String {
    if s.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The client message types, as `type` spells them.
const CLIENT_TYPES: &[&str] = &[
    "auth_hello",
    "auth_proof",
    "test_request",
    "stream_hello",
    "report",
    "udp_report",
    "stop",
    "progress",
    "abort",
];

/// What is wrong with `payload`, a client message that did not decode
/// (`error` is serde's reason, the fallback).
pub(crate) fn client_fault(payload: &[u8], error: &serde_json::Error) -> Fault {
    let value: Value = match serde_json::from_slice(payload) {
        Ok(v) => v,
        Err(e) => return Fault::new("message", format!("not JSON: {e}")),
    };
    let Some(obj) = value.as_object() else {
        return Fault::new(
            "message",
            format!("must be a JSON object, found {}", kind(&value)),
        );
    };
    let ty = match obj.get("type") {
        None => return Fault::new("type", "missing"),
        Some(Value::String(t)) => t.as_str(),
        Some(other) => {
            return Fault::new("type", format!("must be a string, found {}", kind(other)))
        }
    };
    let found = match ty {
        "test_request" => required(obj, "request")
            .or_else(|| required(obj, "env"))
            .or_else(|| spec_fault(&obj["request"]))
            .or_else(|| struct_fault::<HostEnv>(&obj["env"], "env"))
            .or_else(|| typed::<Option<bool>>(obj, "live_intervals"))
            .or_else(|| typed::<Option<bool>>(obj, "accepts_cuts")),
        "auth_hello" => required(obj, "token_name")
            .or_else(|| required(obj, "client_nonce"))
            .or_else(|| typed::<String>(obj, "token_name"))
            .or_else(|| typed::<Nonce>(obj, "client_nonce")),
        "auth_proof" => required(obj, "mac").or_else(|| typed::<Mac>(obj, "mac")),
        "stream_hello" => required(obj, "test_id")
            .or_else(|| required(obj, "stream"))
            .or_else(|| typed::<TestId>(obj, "test_id"))
            .or_else(|| typed::<u16>(obj, "stream")),
        "report" => required(obj, "report").or_else(|| typed::<SideReport>(obj, "report")),
        "udp_report" => required(obj, "report").or_else(|| typed::<UdpSideReport>(obj, "report")),
        "progress" => required(obj, "acks").or_else(|| typed::<Vec<StreamAck>>(obj, "acks")),
        "abort" => required(obj, "reason").or_else(|| typed::<String>(obj, "reason")),
        "stop" => None,
        other => Some(Fault::new(
            "type",
            format!(
                "unknown message type \"{other}\" (a client sends one of: {})",
                CLIENT_TYPES.join(", ")
            ),
        )),
    };
    found.unwrap_or_else(|| Fault::new("message", error.to_string()))
}

fn required(obj: &Map<String, Value>, key: &str) -> Option<Fault> {
    (!obj.contains_key(key)).then(|| Fault::new(key, "missing"))
}

/// `obj[key]` as a `T`, if present, or what is wrong with it.
fn typed<T: DeserializeOwned>(obj: &Map<String, Value>, key: &str) -> Option<Fault> {
    let v = obj.get(key)?;
    serde_json::from_value::<T>(v.clone())
        .err()
        .map(|e| Fault::new(key, e.to_string()))
}

/// What is wrong with a test request's spec.
fn spec_fault(request: &Value) -> Option<Fault> {
    let Some(obj) = request.as_object() else {
        return Some(Fault::new(
            "request",
            format!("must be a JSON object, found {}", kind(request)),
        ));
    };
    let base = match obj.get("test") {
        None => return Some(Fault::new("test", "missing")),
        Some(Value::String(t)) => match t.as_str() {
            "tcp" => TestSpec::Tcp(TcpSpec::default()),
            "udp" => TestSpec::Udp(UdpSpec::default()),
            "ping" => TestSpec::Ping(PingSpec::default()),
            other => {
                return Some(Fault::new(
                    "test",
                    format!("unknown test \"{other}\" (one of: tcp, udp, ping)"),
                ))
            }
        },
        Some(other) => {
            return Some(Fault::new(
                "test",
                format!("must be a string, found {}", kind(other)),
            ))
        }
    };
    field_fault::<TestSpec>(obj, &base, "")
}

/// What is wrong with `value`, which should be a `T` (named `name`).
fn struct_fault<T: Default + Serialize + DeserializeOwned>(
    value: &Value,
    name: &str,
) -> Option<Fault> {
    let Some(obj) = value.as_object() else {
        return Some(Fault::new(
            name,
            format!("must be a JSON object, found {}", kind(value)),
        ));
    };
    field_fault::<T>(obj, &T::default(), &format!("{name}."))
}

/// The first field of `obj` that does not fit on `base` (a good `T`),
/// named `prefix` + its key; or the whole object's fault, if only the
/// whole fails.
fn field_fault<T: Serialize + DeserializeOwned>(
    obj: &Map<String, Value>,
    base: &T,
    prefix: &str,
) -> Option<Fault> {
    let whole = serde_json::from_value::<T>(Value::Object(obj.clone())).err()?;
    let Ok(Value::Object(good)) = serde_json::to_value(base) else {
        return Some(Fault::new(prefix.trim_end_matches('.'), whole.to_string()));
    };
    for (key, v) in obj {
        let mut one = good.clone();
        one.insert(key.clone(), v.clone());
        if let Err(e) = serde_json::from_value::<T>(Value::Object(one)) {
            let reason = e.to_string();
            let reason = if reason.starts_with("unknown field") {
                "unknown field".to_string()
            } else {
                reason
            };
            return Some(Fault::new(format!("{prefix}{key}"), reason));
        }
    }
    // Missing required keys fail only the whole.
    let name = prefix.trim_end_matches('.');
    Some(Fault::new(
        if name.is_empty() { "request" } else { name },
        whole.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ClientMessage;

    fn fault(json: &str) -> Fault {
        let e = serde_json::from_str::<ClientMessage>(json).unwrap_err();
        client_fault(json.as_bytes(), &e)
    }

    const ENV: &str = r#"{"sonde_version":"0","os":"linux","kernel":"6","hostname":"h","cpus":2,"default_congestion":null}"#;

    fn request(spec: &str) -> String {
        format!(r#"{{"type":"test_request","request":{spec},"env":{ENV}}}"#)
    }

    #[test]
    fn the_env_used_here_is_valid() {
        let ok = request(r#"{"test":"tcp","host":"::1"}"#);
        serde_json::from_str::<ClientMessage>(&ok).unwrap();
    }

    #[test]
    fn each_fault_names_its_field() {
        let cases = [
            (request(r#"{"test":"tcp","parallel":"two"}"#), "parallel"),
            (request(r#"{"test":"tcp","parallel":70000}"#), "parallel"),
            (request(r#"{"test":"udp","time_s":"long"}"#), "time_s"),
            (request(r#"{"test":"tcp","colour":"red"}"#), "colour"),
            (request(r#"{"test":"quic"}"#), "test"),
            (request(r#"{"host":"::1"}"#), "test"),
            (request("[1,2]"), "request"),
            (
                r#"{"type":"test_request","request":{"test":"tcp"}}"#.into(),
                "env",
            ),
            (
                format!(
                    r#"{{"type":"test_request","request":{{"test":"tcp"}},"env":{}}}"#,
                    ENV.replace("\"cpus\":2", "\"cpus\":-1")
                ),
                "env.cpus",
            ),
            (
                r#"{"type":"stream_hello","test_id":"zz","stream":1}"#.into(),
                "test_id",
            ),
            (
                r#"{"type":"stream_hello","test_id":"00000000000000000000000000000000","stream":-1}"#
                    .into(),
                "stream",
            ),
            (r#"{"type":"hello"}"#.into(), "type"),
            (r#"{"type":"auth_hello","client_nonce":"00"}"#.into(), "token_name"),
            (
                r#"{"type":"auth_hello","token_name":"a","client_nonce":"00"}"#.into(),
                "client_nonce",
            ),
            (
                r#"{"type":"auth_hello","token_name":5,"client_nonce":"00"}"#.into(),
                "token_name",
            ),
            (r#"{"type":"auth_proof"}"#.into(), "mac"),
            (r#"{"type":"auth_proof","mac":"xyz"}"#.into(), "mac"),
            (r#"{"type":7}"#.into(), "type"),
            (r#"{"request":{}}"#.into(), "type"),
            (r#"[]"#.into(), "message"),
            (r#"{"type":"#.into(), "message"),
        ];
        for (json, field) in cases {
            let f = fault(&json);
            assert_eq!(f.field, field, "{json}: {f:?}");
            assert!(!f.reason.is_empty(), "{json}");
        }
    }

    #[test]
    fn a_huge_field_is_clipped() {
        let key = "k".repeat(10_000);
        let f = fault(&request(&format!(r#"{{"test":"tcp","{key}":1}}"#)));
        assert!(f.field.len() <= MAX_TEXT + 3, "{}", f.field.len());
        assert_eq!(f.reason, "unknown field");
    }
}
