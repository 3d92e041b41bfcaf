//! Validating results against the published JSON schemas (docs/schema/).

use serde_json::Value;

/// The compiled schema `docs/schema/FILE`.
pub fn validator(file: &str) -> jsonschema::Validator {
    let path = format!("{}/../../docs/schema/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// Every violation of `doc`, with where it is.
pub fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

pub fn assert_valid(v: &jsonschema::Validator, doc: &Value) {
    let errors = errors(v, doc);
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}
