//! Fields that name a file on the agent. A request from elsewhere than
//! the command line may name none: the rule is by field name, not a list
//! of fields. Every path field of a spec ends in `_file`, `_dir` or
//! `_path` (a unit test holds sonde-model to it), so a field added later
//! is refused without a line here.

use serde_json::Value;

/// How a field that names a file is spelled.
pub const PATH_SUFFIXES: [&str; 3] = ["_file", "_dir", "_path"];

/// Every field in `spec` (serialized) that names a file, with a value:
/// (JSON pointer, the path asked).
pub fn named_files(spec: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(spec, String::new(), &mut out);
    out
}

fn walk(v: &Value, at: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let here = format!("{at}/{k}");
                let names_file = PATH_SUFFIXES.iter().any(|s| k.ends_with(s));
                if names_file && !x.is_null() {
                    let shown = x.as_str().map_or_else(|| x.to_string(), str::to_string);
                    out.push((here.clone(), shown));
                }
                walk(x, here, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_field_is_found_however_deep() {
        let spec = serde_json::json!({
            "method": "repeat",
            "test": {"test": "http", "url": "http://[::1]/", "body_file": "/etc/shadow"},
            "trials": [{"key_file": "/k"}, {"key_file": null}],
        });
        let found = named_files(&spec);
        assert_eq!(
            found,
            vec![
                ("/test/body_file".to_string(), "/etc/shadow".to_string()),
                ("/trials/0/key_file".to_string(), "/k".to_string()),
            ]
        );
    }

    /// The rule holds only while every path field is spelled so: each
    /// field of a path type in sonde-model's specs ends in a suffix.
    #[test]
    fn every_path_field_of_the_model_is_spelled_as_one() {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../sonde-model/src");
        let mut seen = 0;
        for path in rs_files(std::path::Path::new(src)) {
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                let l = line.trim();
                let Some((name, ty)) = l.strip_prefix("pub ").and_then(|r| r.split_once(':'))
                else {
                    continue;
                };
                if !(ty.contains("PathBuf") || ty.contains("Path>")) {
                    continue;
                }
                seen += 1;
                let name = name.trim();
                assert!(
                    PATH_SUFFIXES.iter().any(|s| name.ends_with(s)),
                    "{}: field '{name}' holds a path: name it *_file, *_dir or *_path \
                     so the gate refuses it from remote requests",
                    path.display()
                );
            }
        }
        assert!(seen >= 2, "the scan found the path fields ({seen})");
    }

    fn rs_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                out.extend(rs_files(&p));
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
        out
    }
}
