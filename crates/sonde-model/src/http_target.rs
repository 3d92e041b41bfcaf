//! Where an HTTP test goes, from its URL: scheme, host, port, the
//! `Host:` authority and the request target. No I/O: the HTTP benchmark
//! (sonde-http-load) connects to it, the agent's gate checks it against
//! the targets that agreed.

/// The parsed URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTarget {
    pub tls: bool,
    /// The host as the URL has it (no brackets): resolved, and the TLS
    /// server name.
    pub host: String,
    pub port: u16,
    /// `Host:` header value (`[::1]:8080`).
    pub authority: String,
    /// Path and query (`/x?y`), `/` when empty.
    pub path: String,
}

impl HttpTarget {
    /// `url`'s parts, or why it cannot be used.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("'{url}': give http:// or https://"));
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("'{url}': an IPv6 address needs its ']'"))?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(format!("'{url}' has no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("'{url}': port '{p}' is not 1 to 65535"))?,
            None if tls => 443,
            None => 80,
        };
        let tail = tail.split('#').next().unwrap_or("");
        let path = if tail.starts_with('?') {
            format!("/{tail}")
        } else if tail.is_empty() {
            "/".to_string()
        } else {
            tail.to_string()
        };
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "'{url}': spaces and control characters must be %-encoded"
            ));
        }
        Ok(Self {
            tls,
            host: host.to_string(),
            port,
            authority: authority.to_string(),
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_parts() {
        let t = HttpTarget::parse("http://[::1]:8080/a/b?c=d#frag").unwrap();
        assert_eq!(
            (
                t.tls,
                t.host.as_str(),
                t.port,
                t.authority.as_str(),
                t.path.as_str()
            ),
            (false, "::1", 8080, "[::1]:8080", "/a/b?c=d")
        );
        let t = HttpTarget::parse("https://example.org").unwrap();
        assert_eq!((t.tls, t.port, t.path.as_str()), (true, 443, "/"));
        let t = HttpTarget::parse("http://h?q=1").unwrap();
        assert_eq!(t.path, "/?q=1");
        assert!(HttpTarget::parse("http://h:0/").is_err());
        assert!(HttpTarget::parse("http://h:99999/").is_err());
        assert!(HttpTarget::parse("http://h/a b").is_err());
        assert!(HttpTarget::parse("gopher://h/").is_err());
    }
}
