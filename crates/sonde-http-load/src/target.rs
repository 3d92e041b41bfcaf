//! The one request every connection sends, built once from the spec and
//! where it goes (its URL's parts: [`Target`], `sonde_model::HttpTarget`).

use sonde_model::HttpSpec;
pub use sonde_model::HttpTarget as Target;

/// The request's headers beyond Host and framing, in order: the spec's
/// (`Name: value`), after sonde's `User-Agent` and `Accept: */*` where the
/// spec gives none. HTTP/1.1 writes them as they are; HTTP/2 lowercases
/// the names.
pub fn headers(spec: &HttpSpec) -> Vec<(String, String)> {
    let given: Vec<(String, String)> = spec
        .headers
        .iter()
        .filter_map(|h| h.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let has = |name: &str| given.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut out = Vec::with_capacity(given.len() + 2);
    if !has("user-agent") {
        out.push((
            "User-Agent".to_string(),
            format!("sonde/{}", sonde_model::SONDE_VERSION),
        ));
    }
    if !has("accept") {
        out.push(("Accept".to_string(), "*/*".to_string()));
    }
    out.extend(given);
    out
}

/// Whether the request carries a `Content-Length` (a body, or a method
/// that expects one).
pub fn has_length(spec: &HttpSpec, body: &[u8]) -> bool {
    !body.is_empty() || spec.method == "POST" || spec.method == "PUT"
}

/// The bytes of the request every connection sends: request line, Host,
/// the spec's headers, Content-Length and the body.
pub fn request_bytes(spec: &HttpSpec, target: &Target, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\n",
        spec.method, target.path, target.authority
    );
    for (name, value) in headers(spec) {
        out += &format!("{name}: {value}\r\n");
    }
    if has_length(spec, body) {
        out += &format!("Content-Length: {}\r\n", body.len());
    }
    if !spec.keep_alive {
        out += "Connection: close\r\n";
    }
    out += "\r\n";
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_host_headers_and_body() {
        let spec = HttpSpec {
            method: "POST".into(),
            headers: vec!["X-Test: 1".into(), "accept: text/plain".into()],
            keep_alive: false,
            ..HttpSpec::default()
        };
        let t = Target::parse("http://[::1]:81/p").unwrap();
        let r = String::from_utf8(request_bytes(&spec, &t, b"abc")).unwrap();
        assert!(
            r.starts_with("POST /p HTTP/1.1\r\nHost: [::1]:81\r\n"),
            "{r}"
        );
        assert!(r.contains("X-Test: 1\r\n") && r.contains("accept: text/plain\r\n"));
        assert!(!r.contains("Accept: */*"));
        assert!(
            r.contains("Content-Length: 3\r\nConnection: close\r\n\r\nabc"),
            "{r}"
        );
    }
}
