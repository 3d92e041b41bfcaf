//! [`HttpSpec`]: a web service benchmark (`sonde http URL`): closed loop
//! (`connections` each sending the next request when the last answer is
//! in, as ab and wrk), or open loop at a constant `rate` with latency
//! counted from each request's intended send time (as wrk2); and a ramp
//! of steps that finds the knee.

use crate::spec::{bad, check_title};
use crate::{IpFamily, SpecError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Which HTTP the requests speak.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
pub enum HttpVersion {
    /// HTTP/1.1.
    #[default]
    #[serde(rename = "1.1")]
    Http1,
    /// HTTP/2 (over TLS by ALPN; over plain TCP with prior knowledge).
    #[serde(rename = "2")]
    Http2,
}

/// What a ramp steps through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum RampSteps {
    /// Connections per step (closed loop).
    Connections(Vec<u32>),
    /// Requests per second per step (open loop).
    Rates(Vec<f64>),
}

/// `--ramp`: run each step for `step_time`, and name the knee: the first
/// step whose median latency is more than `rise_pct` over the first
/// step's, or that has errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpRamp {
    pub steps: RampSteps,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "step_time_s")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub step_time: Duration,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub rise_pct: f64,
}

/// An HTTP benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSpec {
    /// The URL's host (what the path is measured to).
    #[schemars(length(min = 1, max = 253))]
    pub host: String,
    /// `http://` or `https://`, host, port, path and query.
    #[schemars(regex(pattern = r"^https?://"))]
    pub url: String,
    #[schemars(regex(pattern = r"^[A-Z]+$"))]
    pub method: String,
    /// Extra request headers, `Name: value` each.
    pub headers: Vec<String>,
    /// A file whose bytes are each request's body.
    pub body_file: Option<PathBuf>,
    /// Connections kept at once (closed loop: requests in flight).
    #[schemars(range(min = 1, max = 100000))]
    pub connections: u32,
    /// Stop after this many requests (ab's `-n`); else after `time`.
    #[schemars(range(min = 1))]
    pub requests: Option<u64>,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "time_s")]
    #[schemars(range(min = 0))]
    pub time: Duration,
    /// Open loop: requests per second, sent on schedule whatever the
    /// answers do.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub rate: Option<f64>,
    /// Sender threads (each its own event loop); 0: one per core; at most
    /// [`MAX_HTTP_THREADS`].
    pub threads: u16,
    /// Reuse connections (HTTP/1.1 keep-alive); false: one connection per
    /// request, as ab without `-k`.
    pub keep_alive: bool,
    pub version: HttpVersion,
    /// Accept any TLS certificate.
    pub insecure: bool,
    pub family: IpFamily,
    /// A request not answered within this is an error (`timeout`).
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "timeout_s")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeout: Duration,
    pub ramp: Option<HttpRamp>,
    #[schemars(length(max = 200))]
    pub title: Option<String>,
}

impl Default for HttpSpec {
    fn default() -> Self {
        Self {
            host: String::new(),
            url: String::new(),
            method: "GET".into(),
            headers: Vec::new(),
            body_file: None,
            connections: 10,
            requests: None,
            time: Duration::from_secs(10),
            rate: None,
            threads: 0,
            keep_alive: true,
            version: HttpVersion::Http1,
            insecure: false,
            family: IpFamily::Any,
            timeout: Duration::from_secs(10),
            ramp: None,
            title: None,
        }
    }
}

/// Most connections one test may hold.
pub const MAX_HTTP_CONNECTIONS: u32 = 100_000;

/// The most sender threads: each has a live-progress slot of its own.
pub const MAX_HTTP_THREADS: u16 = 64;

impl HttpSpec {
    /// The host of an `http://` or `https://` URL (brackets removed from
    /// an IPv6 address), or why the URL is not one.
    pub fn host_of(url: &str) -> Result<String, SpecError> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| bad("url", format!("'{url}': give http:// or https://")))?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if let Some(v6) = authority.strip_prefix('[') {
            v6.split_once(']')
                .map(|(h, _)| h)
                .ok_or_else(|| bad("url", format!("'{url}': an IPv6 address needs its ']'")))?
        } else {
            authority.split(':').next().unwrap_or("")
        };
        if host.is_empty() {
            return Err(bad("url", format!("'{url}' has no host")));
        }
        Ok(host.to_string())
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        let host = Self::host_of(&self.url)?;
        if host != self.host {
            return Err(bad(
                "host",
                format!("'{}' is not the URL's host ({host})", self.host),
            ));
        }
        check_title(self.title.as_deref())?;
        if self.method.is_empty() || !self.method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(bad(
                "method",
                format!(
                    "'{}': an HTTP method in capitals (GET, POST, …)",
                    self.method
                ),
            ));
        }
        if let Some(h) = self.headers.iter().find(|h| {
            let Some((name, value)) = h.split_once(':') else {
                return true;
            };
            name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
                || value.contains(['\r', '\n'])
        }) {
            return Err(bad("headers", format!("'{h}': write Name: value")));
        }
        if !(1..=MAX_HTTP_CONNECTIONS).contains(&self.connections) {
            return Err(bad(
                "connections",
                format!("{}: 1 to {MAX_HTTP_CONNECTIONS}", self.connections),
            ));
        }
        if self.threads > MAX_HTTP_THREADS {
            return Err(bad(
                "threads",
                format!("{}: 0 (one per core) to {MAX_HTTP_THREADS}", self.threads),
            ));
        }
        if self.requests == Some(0) {
            return Err(bad("requests", "at least 1"));
        }
        if self.requests.is_none() && self.time.is_zero() && self.ramp.is_none() {
            return Err(bad("time_s", "more than 0, or give a number of requests"));
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0 && r <= 10_000_000.0) {
                return Err(bad(
                    "rate",
                    format!("{r}: more than 0, up to 10M per second"),
                ));
            }
        }
        if self.timeout.is_zero() {
            return Err(bad("timeout_s", "more than 0"));
        }
        if let Some(ramp) = &self.ramp {
            let empty = match &ramp.steps {
                RampSteps::Connections(c) => c.is_empty() || c.contains(&0),
                RampSteps::Rates(r) => r.is_empty() || r.iter().any(|r| r.is_nan() || *r <= 0.0),
            };
            if empty {
                return Err(bad("ramp", "steps of at least 1 (connections or req/s)"));
            }
            if ramp.step_time.is_zero() {
                return Err(bad("ramp", "step_time_s more than 0"));
            }
            if !(ramp.rise_pct.is_finite() && ramp.rise_pct > 0.0) {
                return Err(bad("ramp", "rise_pct more than 0"));
            }
        }
        Ok(())
    }

    /// The connections of the busiest step.
    pub fn most_connections(&self) -> u32 {
        match &self.ramp {
            Some(HttpRamp {
                steps: RampSteps::Connections(c),
                ..
            }) => c.iter().copied().max().unwrap_or(self.connections),
            _ => self.connections,
        }
    }

    /// How long the test sends, all steps together (a count of requests:
    /// up to `time`, its cap).
    pub fn send_duration(&self) -> Duration {
        match &self.ramp {
            Some(r) => {
                let n = match &r.steps {
                    RampSteps::Connections(c) => c.len(),
                    RampSteps::Rates(x) => x.len(),
                };
                r.step_time.saturating_mul(n as u32)
            }
            None => self.time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str) -> HttpSpec {
        HttpSpec {
            host: HttpSpec::host_of(url).unwrap_or_default(),
            url: url.into(),
            ..HttpSpec::default()
        }
    }

    #[test]
    fn the_host_is_read_from_the_url() {
        assert_eq!(HttpSpec::host_of("http://[::1]:8080/x?y").unwrap(), "::1");
        assert_eq!(
            HttpSpec::host_of("https://a.example/").unwrap(),
            "a.example"
        );
        assert_eq!(
            HttpSpec::host_of("http://u:p@10.0.0.1:81").unwrap(),
            "10.0.0.1"
        );
        assert!(HttpSpec::host_of("ftp://a")
            .unwrap_err()
            .reason
            .contains("http://"));
        assert!(HttpSpec::host_of("http://[::1/").is_err());
        assert!(HttpSpec::host_of("http:///x").is_err());
    }

    #[test]
    fn bad_fields_are_named() {
        spec("http://[::1]:80/").validate().unwrap();
        let mut s = spec("http://[::1]:80/");
        s.method = "get".into();
        assert_eq!(s.validate().unwrap_err().field, "method");
        let mut s = spec("http://[::1]:80/");
        s.headers = vec!["X-Evil: a\r\nHost: b".into()];
        assert_eq!(s.validate().unwrap_err().field, "headers");
        let mut s = spec("http://[::1]:80/");
        s.connections = 0;
        assert_eq!(s.validate().unwrap_err().field, "connections");
        let mut s = spec("http://[::1]:80/");
        s.rate = Some(f64::NAN);
        assert_eq!(s.validate().unwrap_err().field, "rate");
        let mut s = spec("http://[::1]:80/");
        s.host = "elsewhere".into();
        assert_eq!(s.validate().unwrap_err().field, "host");
    }

    #[test]
    fn it_reads_from_json_with_defaults() {
        let s: HttpSpec =
            serde_json::from_str(r#"{"host": "::1", "url": "http://[::1]/", "rate": 2000}"#)
                .unwrap();
        assert_eq!(s.connections, 10);
        assert_eq!(s.rate, Some(2000.0));
        assert!(s.keep_alive);
        assert_eq!(
            serde_json::to_value(HttpVersion::Http2).unwrap(),
            serde_json::json!("2")
        );
    }
}
