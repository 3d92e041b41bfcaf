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
            tls_cert: None,
            tls_key: None,
            interface_interval: Duration::from_secs(10),
            interfaces: Vec::new(),
            thresholds: Thresholds::default(),
        }
    }
}

/// One bearer token and whom it belongs to (the name is what logs show,
/// never the token).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiToken {
    pub name: String,
    pub token: String,
    /// What the token may do beyond reading; absent: everything. An
    /// agent of a mesh needs only `["ingest", "mesh"]`.
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
    /// Whether the token may do `what`.
    pub fn may(&self, what: ApiPermission) -> bool {
        self.may.as_ref().is_none_or(|m| m.contains(&what))
    }
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiToken({})", self.name)
    }
}

/// A warning and a critical level of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Levels {
    pub warn: f64,
    pub crit: f64,
}

/// When a path's latest result is ok, warn or crit: each metric's levels
/// (loss, jitter and RTT are bad above theirs; throughput and PDR below
/// theirs), and how old a latest result may be before the path is
/// unknown.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    pub loss_pct: Option<Levels>,
    pub rtt_ms: Option<Levels>,
    pub jitter_ms: Option<Levels>,
    pub throughput_bps: Option<Levels>,
    pub pdr_pct: Option<Levels>,
    /// A path whose latest result is older than this is unknown.
    #[serde(with = "sonde_model::serde_secs")]
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
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err((
                "http.tls_cert",
                "tls_cert and tls_key go together: give both, or neither".into(),
            ));
        }
        for t in &self.tokens {
            if t.token.len() < 16 {
                return Err((
                    "http.tokens",
                    format!("the token of '{}' is shorter than 16 characters", t.name),
                ));
            }
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
