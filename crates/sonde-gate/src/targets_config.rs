//! `[targets]`: where the operator lets requests that did not come from
//! this host's command line aim test traffic that no sonde server
//! admits — pings (ICMP, or STAMP to any port), path traces and HTTP
//! loads. Empty, the default: nowhere. TCP and UDP tests need no entry: the server they
//! measure against admits or refuses them itself.

use ipnet::IpNet;
use serde::Deserialize;

/// The `[targets]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct TargetsConfig {
    /// Prefixes a ping may be aimed at (`"2001:db8::/32"`, `"::1/128"`).
    pub ping: Vec<IpNet>,
    /// Prefixes a path trace may be aimed at: its probes reach every
    /// router on the way, and the target.
    pub trace: Vec<IpNet>,
    /// Where an HTTP test may go: URL prefixes (`"http://[2001:db8::80]:8080/api/"`:
    /// same scheme, host and port, a path under it), or address prefixes
    /// (`"2001:db8::/32"`: any URL whose host is in it).
    pub http: Vec<String>,
}

impl TargetsConfig {
    /// Checks every entry; the error names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        for (i, entry) in self.http.iter().enumerate() {
            if entry.parse::<IpNet>().is_ok() {
                continue;
            }
            crate::consent::UrlPrefix::parse(entry)
                .map_err(|e| format!("targets.http[{i}] '{entry}': {e}"))?;
        }
        Ok(())
    }
}
