//! The JSON schemas in docs/schema are the ones the model's types
//! generate (`sonde_model::schema`): a field added, renamed or documented
//! anew changes the committed schema in the same commit, or this fails.
//! `SONDE_BLESS=1 cargo test -p sonde-model --test schema_files` writes
//! them.

use sonde_model::schema;
use std::path::PathBuf;

fn committed(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema")
        .join(file)
}

/// `generated` against docs/schema/`file`, or written there when blessing.
fn check(file: &str, generated: serde_json::Value) {
    let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
    let path = committed(file);
    if std::env::var_os("SONDE_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if old != text {
        let line = old
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .map_or(old.lines().count().min(text.lines().count()), |n| n);
        panic!(
            "docs/schema/{file} is not what the types generate (first difference at line {}); \
             run SONDE_BLESS=1 cargo test -p sonde-model --test schema_files and commit it",
            line + 1
        );
    }
}

#[test]
fn the_result_schema_is_the_types() {
    check("result-v3.schema.json", schema::result_v3().unwrap());
}

#[test]
fn the_method_schema_is_the_types() {
    check("method-v1.schema.json", schema::method_v1().unwrap());
}

#[test]
fn the_failure_schema_is_the_types() {
    check("error-v3.schema.json", schema::error_v3());
}
