//! A result as `-J` prints it: sonde's own document (format 2, the
//! archive's shape), or iperf3's `-J` layout for scripts written for
//! iperf3. The command line and every other writer of JSON call this.

use crate::to_iperf3;
use sonde_model::TestResult;

/// The layouts a result can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonLayout {
    /// sonde's result document (docs/schema/result-v2.schema.json).
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
