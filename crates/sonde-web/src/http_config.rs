//! `[http]` of the agent's configuration: the HTTP API and portal
//! (`sonde serve --http ADDR`), who may use it, and the thresholds that
//! colour paths in the portal. Documented in `docs/api.md`.

use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// The most archive connections `[http] archive_connections` may keep
/// open (PostgreSQL's default `max_connections` is 100).
pub const MAX_ARCHIVE_CONNECTIONS: usize = 64;

/// The HTTP side of the agent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Where to listen; `None`: off (the `--http` flag overrides it).
    pub listen: Option<SocketAddr>,
    /// Whether reading (results, charts, campaigns, `/metrics`) needs no
    /// token. Writing and starting traffic always needs one.
    pub read_public: bool,
    /// The bearer tokens that may use the API.
    pub tokens: Vec<ApiToken>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Largest batch of forwarded results a central agent accepts
    /// (`POST /api/v1/ingest`), in bytes; a forwarder told its batch is
    /// too large sends smaller ones.
    pub max_ingest_bytes: usize,
    /// Archive connections kept open between requests (0: each request
    /// opens its own, as before there was a pool).
    pub archive_connections: usize,
    /// Where the API and portal read from, beside the archive they write
    /// to: a `postgres://` URL of a streaming replica of the archive's
    /// database (`None`: the archive itself). Writes (ingest, readings,
    /// agents, pausing) still go to the archive.
    pub archive_read: Option<String>,
    /// A PEM file with the server's certificate chain: the API is served
    /// over TLS (rustls) when this and `tls_key` are set.
    pub tls_cert: Option<std::path::PathBuf>,
    /// A PEM file with the certificate's private key.
    pub tls_key: Option<std::path::PathBuf>,
    /// How often the agent samples its interfaces' counters into the
    /// archive (link load beside latency); 0: never.
    #[serde(with = "sonde_model::serde_secs")]
    pub interface_interval: Duration,
    /// Interfaces sampled; empty: every one but loopback.
    pub interfaces: Vec<String>,
    pub thresholds: Thresholds,
    /// Longest a client may take to send a request's headers (and the
    /// longest a kept-alive connection waits for its next request).
    #[serde(with = "sonde_model::serde_secs")]
    pub header_timeout: Duration,
    /// A connection that neither sends nor receives a byte for this long
    /// is closed (event streams send a keep-alive every 15 s).
    #[serde(with = "sonde_model::serde_secs")]
    pub idle_timeout: Duration,
    /// Connections open at once, all sources together; the descriptor
    /// limit, less a reserve for the control port and the archive, caps
    /// it further.
    pub max_connections: usize,
    /// Connections open at once from one source (an IPv4 address, an
    /// IPv6 /64 by default).
    pub max_connections_per_source: usize,
    /// The prefix lengths that make one source.
    pub source_prefix_v4: u8,
    pub source_prefix_v6: u8,
    /// Clients following the live event stream at once.
    pub max_event_streams: usize,
    /// The expensive requests (export, run now, create a campaign,
    /// ingest) one token or one source may make per minute.
    pub requests_per_minute: u32,
    /// Wrong tokens one source may present per minute; over it, its
    /// requests get 429 until the minute has passed.
    pub auth_failures_per_minute: u32,
    /// Campaigns written through the API that the agent keeps at once.
    pub max_campaigns: usize,
    /// Ingest requests handled at once (each may be `max_ingest_bytes`).
    pub max_ingest_requests: usize,
    /// Most results in one export page (`limit`); the next page is asked
    /// for with the `cursor` the last one gave.
    pub max_export: usize,
    /// The `Host` names the API answers to, against DNS rebinding: IP
    /// addresses, `localhost` and the machine's own name always; `*`
    /// any.
    pub hosts: Vec<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: None,
            read_public: true,
            tokens: Vec::new(),
            max_body_bytes: 1 << 20,
            max_ingest_bytes: 64 << 20,
            archive_connections: 8,
            archive_read: None,
            tls_cert: None,
            tls_key: None,
            interface_interval: Duration::from_secs(10),
            interfaces: Vec::new(),
            thresholds: Thresholds::default(),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 512,
            max_connections_per_source: 64,
            source_prefix_v4: 32,
            source_prefix_v6: 64,
            max_event_streams: 32,
            requests_per_minute: 120,
            auth_failures_per_minute: 10,
            max_campaigns: 100,
            max_ingest_requests: 2,
            max_export: 10_000,
            hosts: Vec::new(),
        }
    }
}

/// One bearer token and whom it belongs to (the name is what logs show,
/// never the token).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiToken {
    /// Whom the token belongs to; for an agent of a mesh, the agent's
    /// name (what it may register, and the only agent its forwarded
    /// results may speak for).
    pub name: String,
    /// The token itself, 16 characters at least; or
    #[serde(default)]
    pub token: String,
    /// its Argon2 hash (`sonde token hash`), so that the configuration
    /// does not hold it.
    #[serde(default)]
    pub hash: Option<String>,
    /// What the token may do beyond reading; absent: nothing (read only).
    /// An agent of a mesh needs only `["ingest", "mesh"]`.
    #[serde(default)]
    pub may: Option<Vec<ApiPermission>>,
}

/// What a bearer token may do on the API beyond reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiPermission {
    /// Run a test now (`POST /api/v1/tests`).
    RunNow,
    /// Create, pause, resume and delete campaigns.
    Campaigns,
    /// Deliver forwarded results (`POST /api/v1/ingest`).
    Ingest,
    /// Register with the mesh and take a share of its plans.
    Mesh,
    /// Post probes' readings (`POST /api/v1/readings`).
    Readings,
    /// Write incidents, constituencies and mail templates.
    Incidents,
}

impl ApiPermission {
    pub fn name(self) -> &'static str {
        match self {
            ApiPermission::RunNow => "run_now",
            ApiPermission::Campaigns => "campaigns",
            ApiPermission::Ingest => "ingest",
            ApiPermission::Mesh => "mesh",
            ApiPermission::Readings => "readings",
            ApiPermission::Incidents => "incidents",
        }
    }
}

impl ApiToken {
    /// Whether the token may do `what`: only what its `may` lists.
    pub fn may(&self, what: ApiPermission) -> bool {
        self.may.as_ref().is_some_and(|m| m.contains(&what))
    }
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiToken({})", self.name)
    }
}

/// A warning and a critical level of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Levels {
    pub warn: f64,
    pub crit: f64,
}

/// When a path's latest result is ok, warn or crit: each metric's levels
/// (loss, jitter and RTT are bad above theirs; throughput and PDR below
/// theirs), and how old a latest result may be before the path is
/// unknown.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    pub loss_pct: Option<Levels>,
    pub rtt_ms: Option<Levels>,
    pub jitter_ms: Option<Levels>,
    pub throughput_bps: Option<Levels>,
    pub pdr_pct: Option<Levels>,
    /// A path whose latest result is older than this is unknown.
    #[serde(with = "sonde_model::serde_secs")]
    #[schemars(with = "f64")]
    pub stale: Duration,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            loss_pct: Some(Levels {
                warn: 0.1,
                crit: 1.0,
            }),
            rtt_ms: Some(Levels {
                warn: 50.0,
                crit: 150.0,
            }),
            jitter_ms: Some(Levels {
                warn: 5.0,
                crit: 20.0,
            }),
            throughput_bps: None,
            pdr_pct: Some(Levels {
                warn: 99.9,
                crit: 99.0,
            }),
            stale: Duration::from_secs(2 * 3600),
        }
    }
}

impl HttpConfig {
    /// The key that is wrong, and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.max_body_bytes == 0 {
            return Err(("http.max_body_bytes", "must be at least 1".into()));
        }
        if self.max_ingest_bytes == 0 {
            return Err(("http.max_ingest_bytes", "must be at least 1".into()));
        }
        if self.archive_connections > MAX_ARCHIVE_CONNECTIONS {
            return Err((
                "http.archive_connections",
                format!(
                    "{} is more than {MAX_ARCHIVE_CONNECTIONS}",
                    self.archive_connections
                ),
            ));
        }
        if let Some(url) = &self.archive_read {
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err((
                    "http.archive_read",
                    format!(
                        "'{}' is not a postgres:// URL: a read replica is PostgreSQL's",
                        sonde_archive::redacted(url)
                    ),
                ));
            }
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err((
                "http.tls_cert",
                "tls_cert and tls_key go together: give both, or neither".into(),
            ));
        }
        for t in &self.tokens {
            match (&t.hash, t.token.is_empty()) {
                (Some(_), false) => {
                    return Err((
                        "http.tokens",
                        format!("'{}' has both token and hash: give one", t.name),
                    ))
                }
                (Some(h), true) if !h.starts_with("$argon2") => {
                    return Err((
                        "http.tokens",
                        format!(
                        "the hash of '{}' is not an Argon2 hash (make one with sonde token hash)",
                        t.name
                    ),
                    ))
                }
                (None, _) if t.token.len() < 16 => {
                    return Err((
                        "http.tokens",
                        format!("the token of '{}' is shorter than 16 characters", t.name),
                    ))
                }
                _ => {}
            }
        }
        for (key, zero) in [
            ("http.header_timeout", self.header_timeout.is_zero()),
            ("http.idle_timeout", self.idle_timeout.is_zero()),
            ("http.max_connections", self.max_connections == 0),
            (
                "http.max_connections_per_source",
                self.max_connections_per_source == 0,
            ),
            ("http.max_event_streams", self.max_event_streams == 0),
            ("http.requests_per_minute", self.requests_per_minute == 0),
            (
                "http.auth_failures_per_minute",
                self.auth_failures_per_minute == 0,
            ),
            ("http.max_ingest_requests", self.max_ingest_requests == 0),
            ("http.max_export", self.max_export == 0),
        ] {
            if zero {
                return Err((key, "must be more than 0".into()));
            }
        }
        if self.source_prefix_v4 > 32 {
            return Err(("http.source_prefix_v4", "at most 32".into()));
        }
        if self.source_prefix_v6 > 128 {
            return Err(("http.source_prefix_v6", "at most 128".into()));
        }
        if let Some(h) = self
            .hosts
            .iter()
            .find(|h| h.is_empty() || h.contains(|c: char| c.is_whitespace() || c == '/'))
        {
            return Err(("http.hosts", format!("{h:?} is not a host name")));
        }
        let t = &self.thresholds;
        let higher_is_worse = [
            ("http.thresholds.loss_pct", t.loss_pct),
            ("http.thresholds.rtt_ms", t.rtt_ms),
            ("http.thresholds.jitter_ms", t.jitter_ms),
        ];
        for (key, l) in higher_is_worse {
            if l.is_some_and(|l| {
                l.warn.partial_cmp(&l.crit) == Some(std::cmp::Ordering::Greater)
                    || l.warn.is_nan()
                    || l.crit.is_nan()
            }) {
                return Err((key, "warn must be at most crit".into()));
            }
        }
        for (key, l) in [
            ("http.thresholds.throughput_bps", t.throughput_bps),
            ("http.thresholds.pdr_pct", t.pdr_pct),
        ] {
            if l.is_some_and(|l| {
                l.warn.partial_cmp(&l.crit) == Some(std::cmp::Ordering::Less)
                    || l.warn.is_nan()
                    || l.crit.is_nan()
            }) {
                return Err((key, "warn must be at least crit (lower is worse)".into()));
            }
        }
        if t.stale.is_zero() {
            return Err(("http.thresholds.stale", "must be more than 0".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(text: &str) -> Result<HttpConfig, (&'static str, String)> {
        let c: HttpConfig = toml::from_str(text).map_err(|e| ("toml", e.to_string()))?;
        c.check().map(|()| c)
    }

    #[test]
    fn archive_connections_default_to_8_and_are_capped() {
        assert_eq!(from("").unwrap().archive_connections, 8);
        assert_eq!(
            from("archive_connections = 0").unwrap().archive_connections,
            0
        );
        let (key, why) = from("archive_connections = 65").unwrap_err();
        assert_eq!(key, "http.archive_connections");
        assert!(why.contains("more than 64"), "{why}");
    }
}
