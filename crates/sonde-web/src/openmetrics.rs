//! The OpenMetrics text format's one rule sonde's pages share: label
//! values escaped, and a series' labels written `k="v",…`.

/// A label value escaped as the format asks (backslash, quote, newline).
pub(crate) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub(crate) fn label_text(l: &[(&str, String)]) -> String {
    let parts: Vec<String> = l
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    parts.join(",")
}
