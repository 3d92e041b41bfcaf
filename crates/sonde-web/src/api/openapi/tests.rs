use serde_json::Value;
use std::path::PathBuf;

fn committed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi.json")
}

/// `crates/sonde-web/openapi.json` is what the route table and the types
/// make; `SONDE_BLESS=1 cargo test -p sonde-web openapi` writes it.
#[test]
fn the_committed_document_is_the_generated_one() {
    let text = serde_json::to_string_pretty(&crate::api::openapi_document()).unwrap() + "\n";
    if std::env::var_os("SONDE_BLESS").is_some() {
        std::fs::write(committed(), &text).unwrap();
        return;
    }
    let old = std::fs::read_to_string(committed()).unwrap_or_default();
    if old != text {
        let line = old
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(old.lines().count().min(text.lines().count()));
        panic!(
            "crates/sonde-web/openapi.json is not what the routes and types generate (first \
             difference at line {}); run SONDE_BLESS=1 cargo test -p sonde-web openapi and \
             commit it",
            line + 1
        );
    }
}

#[test]
fn every_reference_names_a_component_that_is_there() {
    let doc = crate::api::openapi_document();
    let text = doc.to_string();
    assert!(!text.contains("\"#/$defs/"), "a reference left unresolved");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert!(schemas.contains_key("TestResult"));
    for r in text.split("\"$ref\":\"").skip(1) {
        let target = r.split('"').next().unwrap();
        let name = target.strip_prefix("#/components/schemas/").unwrap();
        assert!(schemas.contains_key(name), "{target} is not there");
    }
    assert!(doc["paths"]["/api/v1/tests"]["post"]["security"].is_array());
}

#[test]
fn every_operation_has_a_name_of_its_own_and_says_its_errors() {
    let doc = crate::api::openapi_document();
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap();
            assert!(ids.insert(id.to_string()), "{method} {path}: {id} twice");
            let replies = op["responses"].as_object().unwrap();
            // Every operation may be refused a token (401, 403) and
            // throttled (429): the guard is in front of all of them.
            for status in ["401", "403", "429"] {
                assert!(
                    replies.contains_key(status),
                    "{method} {path} lacks {status}"
                );
            }
            let Value::Array(params) = &op["parameters"] else {
                continue;
            };
            for p in params {
                if p["in"] == "path" {
                    let name = p["name"].as_str().unwrap();
                    assert!(path.contains(&format!("{{{name}}}")), "{path}: {name}");
                }
            }
        }
    }
}
