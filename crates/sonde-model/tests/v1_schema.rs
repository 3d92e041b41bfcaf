//! The archived format-1 documents (crates/sonde-model/tests/fixtures/v1)
//! are real format 1: each validates against the format-1 schema of its
//! test (docs/schema/{tcp,udp,ping}-result-v1.schema.json) and not against
//! the current (format-3) one; and what the loader makes of each is a valid
//! format-3 document.

// The schema helpers of sonde's integration tests, shared rather than
// written twice; this test uses a part of them.
#[allow(dead_code)]
#[path = "../../sonde/tests/common/schema.rs"]
mod schema;
use schema::{errors, result_v3, validator};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Every format-1 fixture: its file name and its parsed document.
fn fixtures() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
    let mut docs: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let doc = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, doc)
        })
        .collect();
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    docs
}

#[test]
fn every_v1_fixture_is_valid_format_1() {
    let docs = fixtures();
    let kinds: BTreeSet<&str> = docs
        .iter()
        .map(|(name, doc)| {
            doc["test"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: no test"))
        })
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["ping", "tcp", "udp"]),
        "fixtures of every test"
    );
    let new = result_v3();
    let mut failures = Vec::new();
    for (name, doc) in &docs {
        assert_eq!(doc["format_version"], 1, "{name}");
        let test = doc["test"].as_str().unwrap();
        let old = validator(&format!("{test}-result-v1.schema.json"));
        let errs = errors(&old, doc);
        if !errs.is_empty() {
            failures.push(format!("{name} against the {test} v1 schema: {errs:#?}"));
        }
        if new.is_valid(doc) {
            failures.push(format!("{name} is valid format 3"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_v1_fixture_loads_into_a_valid_format_3_document() {
    let new = result_v3();
    let docs = fixtures();
    assert!(!docs.is_empty(), "no format-1 fixtures");
    let mut failures = Vec::new();
    for (name, doc) in docs {
        let loaded = sonde_model::load_value(doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        let written = serde_json::to_value(&loaded).expect("a result serializes");
        assert_eq!(written["format_version"], 3, "{name}");
        let errs = errors(&new, &written);
        if !errs.is_empty() {
            failures.push(format!("{name}, upgraded: {errs:#?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
