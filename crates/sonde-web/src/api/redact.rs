//! What an anonymous reader (`http.read_public`) does not see of a stored
//! request: the user name and password in an HTTP test's URL, and its
//! header values (an `Authorization` or a cookie, as often as not).
//! Readers with a token see results whole.

use crate::tokens::Caller;
use axum::Extension;
use serde_json::Value;

/// `url` without its userinfo (`https://user:pw@host/` →
/// `https://***@host/`).
fn without_userinfo(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (_, host) = authority.rsplit_once('@')?;
    Some(format!("{scheme}://***@{host}{path}"))
}

/// Hides, anywhere in `v`, URLs' userinfo and the values of `headers`
/// lists (`"Name: value"` becomes `"Name: ***"`).
pub fn redact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x) {
                    ("url", Value::String(u)) => {
                        if let Some(clean) = without_userinfo(u) {
                            *u = clean;
                        }
                    }
                    ("headers", Value::Array(hs)) => {
                        for h in hs.iter_mut() {
                            if let Value::String(s) = h {
                                let name = s.split(':').next().unwrap_or_default().trim();
                                *s = format!("{name}: ***");
                            }
                        }
                    }
                    (_, x) => redact(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact),
        _ => {}
    }
}

/// A campaign plan's TOML text as a reader without a token sees it: as
/// written when it holds no secret; else with its steps' URL userinfo
/// and header values hidden (and its comments gone, since it is written
/// again). `None` if it does not read as a plan.
pub fn plan_text(text: &str) -> Option<String> {
    let mut plan = sonde_campaign::WrittenPlan::read(text).ok()?;
    let mut steps = serde_json::to_value(&plan.steps).ok()?;
    let before = steps.clone();
    redact(&mut steps);
    if steps == before {
        return Some(text.to_string());
    }
    plan.steps = serde_json::from_value(steps).ok()?;
    Some(plan.to_toml())
}

/// Whether the request came with a token (and sees results whole).
pub fn has_token(caller: Option<&Extension<Caller>>) -> bool {
    caller.is_some()
}

/// `x` as JSON, redacted unless the reader has a token.
pub fn shown<T: serde::Serialize>(x: &T, token: bool) -> Value {
    let mut v = serde_json::to_value(x).unwrap_or(Value::Null);
    if !token {
        redact(&mut v);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn userinfo_and_header_values_are_hidden_and_the_rest_kept() {
        let mut v = json!({
            "spec": {"http": {
                "url": "https://ops:s3cret@www.example.net:8443/a@b?x=1",
                "headers": ["Authorization: Bearer abc", "X-Trace: 1"],
                "method": "GET"
            }},
            "trials": [{"spec": {"http": {"url": "http://u@h/"}}}],
            "target": "www.example.net"
        });
        redact(&mut v);
        let text = v.to_string();
        assert!(
            !text.contains("s3cret") && !text.contains("abc") && !text.contains("ops"),
            "{text}"
        );
        assert_eq!(
            v["spec"]["http"]["url"],
            "https://***@www.example.net:8443/a@b?x=1"
        );
        assert_eq!(v["spec"]["http"]["headers"][0], "Authorization: ***");
        assert_eq!(v["trials"][0]["spec"]["http"]["url"], "http://***@h/");
        assert_eq!(v["target"], "www.example.net");
        let mut plain = json!({"url": "http://h/p@q"});
        redact(&mut plain);
        assert_eq!(
            plain["url"], "http://h/p@q",
            "an @ in the path is no userinfo"
        );
    }

    #[test]
    fn a_plans_stored_requests_are_hidden_and_its_steps_kept() {
        let plan = "# ops' plan\nname = \"web\"\n[schedule]\nrepeat = \"PT1H\"\n\
                    [[step]]\nname = \"get\"\ntest = \"http\"\n\
                    url = \"https://ops:pw@www.example.net/\"\nheaders = [\"Cookie: s=1\"]\n";
        let shown = plan_text(plan).unwrap();
        assert!(!shown.contains("pw@") && !shown.contains("s=1"), "{shown}");
        assert!(shown.contains("https://***@www.example.net/"), "{shown}");
        assert!(
            shown.contains("Cookie: ***") && shown.contains("name = \"get\""),
            "{shown}"
        );
        assert_eq!(plan_text("not = [toml"), None);
        let clean = "# as written\nname = \"x\"\n[schedule]\nrepeat = \"PT1H\"\n";
        assert_eq!(plan_text(clean).as_deref(), Some(clean));
    }
}
