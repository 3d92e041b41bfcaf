//! Validating results against the published JSON schemas (docs/schema/).

use serde_json::Value;

/// The schema of every result sonde writes now (format 3).
pub const RESULT_V3: &str = "result-v3.schema.json";

/// The compiled schema `docs/schema/FILE`; `format` keywords (date-time,
/// ipv4, ipv6) are checked, not only annotated.
pub fn validator(file: &str) -> jsonschema::Validator {
    let path = format!("{}/../../docs/schema/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{path} does not compile: {e}"))
}

/// The schema of a method's document (format 1).
pub const METHOD_V1: &str = "method-v1.schema.json";

/// The compiled method schema, with the result schema its `trials`
/// refer to loaded beside it (no network).
pub fn method_v1() -> jsonschema::Validator {
    let read = |file: &str| -> Value {
        let path = format!("{}/../../docs/schema/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).expect("schema is JSON")
    };
    let result = read(RESULT_V3);
    let id = result["$id"]
        .as_str()
        .expect("result schema has an $id")
        .to_string();
    let resource = jsonschema::Resource::from_contents(result).expect("result schema resource");
    jsonschema::options()
        .should_validate_formats(true)
        .with_resource(id, resource)
        .build(&read(METHOD_V1))
        .unwrap_or_else(|e| panic!("{METHOD_V1} does not compile: {e}"))
}

/// Panics, naming the first error, unless `doc` is a method-v1 document.
pub fn assert_method_v1(doc: &Value) {
    if let Err(e) = method_v1().validate(doc) {
        panic!("not a method-v1 document: {e}\n{doc}");
    }
}

/// The compiled format-3 result schema.
pub fn result_v3() -> jsonschema::Validator {
    validator(RESULT_V3)
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

/// `mutate` applied to a copy of `doc` must make it invalid.
pub fn assert_rejects(
    v: &jsonschema::Validator,
    doc: &Value,
    why: &str,
    mutate: impl FnOnce(&mut Value),
) {
    let mut broken = doc.clone();
    mutate(&mut broken);
    assert_ne!(&broken, doc, "{why}: the mutation changed nothing");
    assert!(
        v.iter_errors(&broken).next().is_some(),
        "{why}: the schema accepted it"
    );
}

/// Removes `key` from the object `v`, which must have it.
pub fn remove(v: &mut Value, key: &str) {
    let shown = v.to_string();
    let obj = v
        .as_object_mut()
        .unwrap_or_else(|| panic!("not an object: {shown}"));
    assert!(obj.remove(key).is_some(), "no {key} to remove in {shown}");
}
