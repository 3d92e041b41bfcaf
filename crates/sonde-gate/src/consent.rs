//! Consent: a request from elsewhere than the command line aims test
//! traffic only at a sonde server that admits it itself (TCP and UDP
//! tests: their control connection asks, and no test data flows before
//! the server's yes), or at a target the operator allowed: `[targets]`
//! for pings and HTTP loads, `mesh.targets` for everything a mesh share
//! touches.
//!
//! A host name is resolved here and every address it has must be
//! allowed. (The test resolves it again when it runs; a name whose
//! owner changes its answer in between is the one gap, and the allowed
//! prefixes bound it.)

use ipnet::IpNet;
use sonde_model::HttpSpec;
use std::net::{IpAddr, ToSocketAddrs};

/// An allowed URL prefix: same scheme, host and port; the path under it.
/// Read by the HTTP engine's own URL parser, so that what is checked is
/// where the test's connections go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlPrefix {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

impl UrlPrefix {
    /// Reads an allowed prefix, `http[s]://host[:port][/path]` (no user
    /// name: an entry says where, not as whom).
    pub fn parse(url: &str) -> Result<UrlPrefix, String> {
        let authority = url
            .split_once("://")
            .map_or("", |(_, r)| r.split(['/', '?', '#']).next().unwrap_or(""));
        if authority.contains('@') {
            return Err("a user name in the URL is not taken".into());
        }
        UrlPrefix::of_test(url)
    }

    /// Where a test's URL goes (a user name in it is dropped, as the
    /// engine drops it).
    fn of_test(url: &str) -> Result<UrlPrefix, String> {
        let t = sonde_model::HttpTarget::parse(url)?;
        let host = match t.host.parse::<IpAddr>() {
            Ok(ip) => ip.to_canonical().to_string(),
            Err(_) => t.host.to_ascii_lowercase(),
        };
        Ok(UrlPrefix {
            tls: t.tls,
            host,
            port: t.port,
            path: t.path,
        })
    }

    /// Whether `url` is under this prefix. A path prefix that does not
    /// end in `/` matches only whole segments (`/api` takes `/api` and
    /// `/api/x`, not `/apix`).
    pub fn contains(&self, url: &UrlPrefix) -> bool {
        if self.tls != url.tls || self.host != url.host || self.port != url.port {
            return false;
        }
        let Some(rest) = url.path.strip_prefix(&self.path) else {
            return false;
        };
        self.path.ends_with('/') || rest.is_empty() || rest.starts_with(['/', '?', '#'])
    }
}

/// Every address `host` stands for: itself if it is one, else what it
/// resolves to now.
pub fn addresses(host: &str) -> Result<Vec<IpAddr>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![ip.to_canonical()]);
    }
    let found: Vec<IpAddr> = (bare, 0)
        .to_socket_addrs()
        .map_err(|e| format!("'{host}' does not resolve: {e}"))?
        .map(|a| a.ip().to_canonical())
        .collect();
    if found.is_empty() {
        return Err(format!("'{host}' has no address"));
    }
    Ok(found)
}

/// The first address of `host` outside `allowed`, if any (or why it
/// could not be checked).
pub fn outside(host: &str, allowed: &[IpNet]) -> Option<String> {
    match addresses(host) {
        Ok(found) => found
            .into_iter()
            .find(|ip| !allowed.iter().any(|n| n.contains(ip)))
            .map(|ip| {
                if ip.to_string() == host {
                    host.to_string()
                } else {
                    format!("{host} ({ip})")
                }
            }),
        Err(e) => Some(e),
    }
}

/// Whether an HTTP test's URL is allowed by `entries` (URL prefixes or
/// address prefixes); `None` if it is, else what is outside.
pub fn url_outside(spec: &HttpSpec, entries: &[String]) -> Option<String> {
    let url = match UrlPrefix::of_test(&spec.url) {
        Ok(u) => u,
        Err(e) => return Some(format!("{}: {e}", spec.url)),
    };
    let nets: Vec<IpNet> = entries.iter().filter_map(|e| e.parse().ok()).collect();
    if !nets.is_empty() {
        let host = HttpSpec::host_of(&spec.url).unwrap_or_default();
        // Inside an allowed prefix: allowed (`?` on "nothing outside").
        outside(&host, &nets)?;
    }
    let under = entries
        .iter()
        .filter_map(|e| UrlPrefix::parse(e).ok())
        .any(|p| p.contains(&url));
    (!under).then(|| spec.url.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(url: &str) -> HttpSpec {
        HttpSpec {
            url: url.into(),
            ..HttpSpec::default()
        }
    }

    #[test]
    fn a_url_is_allowed_only_under_its_prefix() {
        let allowed = ["http://[2001:db8::80]:8080/api".to_string()];
        for ok in [
            "http://[2001:db8::80]:8080/api",
            "http://[2001:db8::80]:8080/api/x?y=1",
        ] {
            assert_eq!(url_outside(&http(ok), &allowed), None, "{ok}");
        }
        for bad in [
            "http://[2001:db8::80]:8080/apix",
            "http://[2001:db8::80]:8081/api",
            "https://[2001:db8::80]:8080/api",
            "http://[2001:db8::81]:8080/api",
            "http://[2001:db8::80]:8080@169.254.169.254/api",
        ] {
            assert!(url_outside(&http(bad), &allowed).is_some(), "{bad}");
        }
        let by_prefix = ["::1/128".to_string()];
        assert_eq!(url_outside(&http("http://[::1]:9/x"), &by_prefix), None);
        assert!(url_outside(&http("http://127.0.0.1/"), &by_prefix).is_some());
        assert!(
            url_outside(&http("http://[::1]/"), &[]).is_some(),
            "empty: nowhere"
        );
    }

    #[test]
    fn every_address_of_a_host_must_be_inside() {
        let nets: Vec<IpNet> = vec!["::1/128".parse().unwrap()];
        assert_eq!(outside("::1", &nets), None);
        assert_eq!(outside("[::1]", &nets), None);
        assert_eq!(outside("127.0.0.1", &nets).as_deref(), Some("127.0.0.1"));
        let v4: Vec<IpNet> = vec!["127.0.0.0/8".parse().unwrap()];
        assert_eq!(outside("::ffff:127.0.0.1", &v4), None, "v4-mapped is IPv4");
        assert!(outside("no-such-host.invalid", &nets).is_some());
    }
}
