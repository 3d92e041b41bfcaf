//! A result as `-J` prints it: sonde's own document (format 2, the
//! archive's shape), or iperf3's `-J` layout for scripts written for
//! iperf3. The command line and every other writer of JSON call this.

use crate::iperf3_json::system_info;
use crate::to_iperf3;
use serde_json::{json, Value};
use sonde_model::{FailureDocument, HostEnv, TestResult, TestSpec, SONDE_VERSION};

/// The layouts a result can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonLayout {
    /// sonde's result document (docs/schema/result-v3.schema.json).
    Sonde,
    /// iperf3 3.21's `-J` layout; ping, which has none, is written in
    /// sonde's.
    Iperf3,
}

/// `result` as pretty-printed JSON in `layout`.
pub fn result_json(result: &TestResult, layout: JsonLayout) -> Result<String, serde_json::Error> {
    match (layout, to_iperf3(result)) {
        (JsonLayout::Iperf3, Some(doc)) => serde_json::to_string_pretty(&doc),
        _ => serde_json::to_string_pretty(result),
    }
}

/// Why a test gave no result, as `-J` prints it in place of a result.
#[derive(Debug, Clone, Copy)]
pub struct Failed<'a> {
    /// One word for the kind of failure (`sonde_run::RunError::kind`).
    pub kind: &'a str,
    /// The error in words, as the command line prints it.
    pub message: &'a str,
    /// What was asked, when the spec could be read.
    pub spec: Option<&'a TestSpec>,
    /// This host, for iperf3's `system_info`.
    pub host: &'a HostEnv,
}

/// A failure as one pretty-printed JSON document in `layout`. sonde's:
/// the result's header (`format_version`, `sonde_version`, `test`,
/// `title`, `spec` when known) and `error: {kind, message}`
/// (docs/schema/error-v3.schema.json). iperf3's: what `iperf3 -J` prints
/// when a test fails — `start` with no connection, empty `intervals` and
/// `end`, `error` as a string, and `title` when the spec has one.
pub fn error_json(failed: &Failed<'_>, layout: JsonLayout) -> String {
    let doc = match layout {
        JsonLayout::Iperf3 => {
            let mut doc = json!({
                "start": {
                    "connected": [],
                    "version": format!("sonde {SONDE_VERSION}"),
                    "system_info": system_info(failed.host),
                },
                "intervals": [],
                "end": {},
                "error": failed.message,
            });
            // iperf3 writes the title on a failure's document too.
            if let Some(title) = failed.spec.and_then(TestSpec::title) {
                doc["title"] = json!(title);
            }
            doc
        }
        JsonLayout::Sonde => serde_json::to_value(FailureDocument::new(
            failed.kind,
            failed.message,
            failed.spec,
            SONDE_VERSION,
        ))
        .unwrap_or(Value::Null),
    };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|_| doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> TestResult {
        let path = format!(
            "{}/../sonde-model/tests/fixtures/v1/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        sonde_model::load_result(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn sonde_s_layout_reads_back_as_the_same_result() {
        let r = fixture("udp_bidir");
        let text = result_json(&r, JsonLayout::Sonde).unwrap();
        assert_eq!(sonde_model::load_result(&text).unwrap(), r);
    }

    #[test]
    fn iperf3_s_layout_is_iperf3_s_and_ping_falls_back() {
        let tcp = result_json(&fixture("tcp_forward"), JsonLayout::Iperf3).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&tcp).unwrap();
        assert!(doc["end"]["sum_received"]["bytes"].is_number(), "{doc}");
        let ping = fixture("ping_icmp");
        let text = result_json(&ping, JsonLayout::Iperf3).unwrap();
        assert_eq!(sonde_model::load_result(&text).unwrap(), ping);
    }
}

#[cfg(test)]
mod error_tests {
    use super::*;

    fn host() -> HostEnv {
        HostEnv {
            os: "linux".into(),
            hostname: "box".into(),
            kernel: "6.1.0".into(),
            ..HostEnv::default()
        }
    }

    #[test]
    fn a_failure_in_iperf3_s_layout_is_what_iperf3_prints() {
        let host = host();
        let text = error_json(
            &Failed {
                kind: "unreachable",
                message: "connect to [::1]:5201: connection refused",
                spec: None,
                host: &host,
            },
            JsonLayout::Iperf3,
        );
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["error"], "connect to [::1]:5201: connection refused");
        assert_eq!(doc["start"]["connected"], json!([]));
        assert_eq!(doc["start"]["system_info"], "Linux box 6.1.0");
        assert_eq!(doc["intervals"], json!([]));
        assert_eq!(doc["end"], json!({}));
        assert!(doc.get("title").is_none(), "{doc}");
        let spec: TestSpec =
            serde_json::from_str(r#"{"test": "tcp", "host": "::1", "title": "home"}"#).unwrap();
        let failed = Failed {
            kind: "refused",
            message: "no",
            spec: Some(&spec),
            host: &host,
        };
        let doc: Value = serde_json::from_str(&error_json(&failed, JsonLayout::Iperf3)).unwrap();
        assert_eq!(doc["title"], "home");
    }

    #[test]
    fn a_failure_in_sonde_s_layout_has_a_kind_and_the_spec() {
        let host = host();
        let spec: TestSpec =
            serde_json::from_str(r#"{"test": "udp", "host": "::1", "title": "t1"}"#).unwrap();
        let text = error_json(
            &Failed {
                kind: "refused",
                message: "the server refused the test",
                spec: Some(&spec),
                host: &host,
            },
            JsonLayout::Sonde,
        );
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["error"]["kind"], "refused");
        assert_eq!(doc["error"]["message"], "the server refused the test");
        assert_eq!(doc["test"], "udp");
        assert_eq!(doc["title"], "t1");
        assert_eq!(doc["spec"]["host"], "::1");
        assert_eq!(doc["format_version"], sonde_model::RESULT_FORMAT_VERSION);
    }
}
