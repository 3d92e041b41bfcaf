//! Where an address with a port is written (an agent, a campaign's
//! endpoint): `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`; a bare IPv6
//! address has no port. One reading for every place that takes one.

/// Why a `HOST[:PORT]` does not read, with what was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPortError {
    #[error("'{input}': '{port}' is not a port (1-65535)")]
    NotAPort { input: String, port: String },
    #[error("'{input}': '[' without ']'")]
    Unclosed { input: String },
    #[error("'{input}': expected ':PORT' after ']', found '{found}'")]
    AfterBracket { input: String, found: String },
    #[error("'{input}': no host")]
    NoHost { input: String },
}

/// `s` as its host and port, if it names one; why not otherwise.
pub fn split_host_port(s: &str) -> Result<(String, Option<u16>), HostPortError> {
    let port_of = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| HostPortError::NotAPort {
                input: s.to_string(),
                port: p.to_string(),
            })
    };
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest
            .split_once(']')
            .ok_or_else(|| HostPortError::Unclosed {
                input: s.to_string(),
            })?;
        let port = match tail {
            "" => None,
            t => Some(port_of(t.strip_prefix(':').ok_or_else(|| {
                HostPortError::AfterBracket {
                    input: s.to_string(),
                    found: t.to_string(),
                }
            })?)?),
        };
        (host.to_string(), port)
    } else {
        match s.matches(':').count() {
            0 => (s.to_string(), None),
            1 => {
                let (host, port) = s.split_once(':').unwrap_or((s, ""));
                (host.to_string(), Some(port_of(port)?))
            }
            _ => (s.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(HostPortError::NoHost {
            input: s.to_string(),
        });
    }
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ports_and_bare_v6_addresses() {
        let ok = |s: &str| split_host_port(s).unwrap();
        assert_eq!(ok("b.example"), ("b.example".into(), None));
        assert_eq!(ok("127.0.0.1:25301"), ("127.0.0.1".into(), Some(25301)));
        assert_eq!(ok("[2001:db8::2]:5202"), ("2001:db8::2".into(), Some(5202)));
        assert_eq!(ok("[2001:db8::2]"), ("2001:db8::2".into(), None));
        assert_eq!(ok("2001:db8::2"), ("2001:db8::2".into(), None));
        for bad in ["b:0", "b:99999", "b:x", ":5201", "[::1", "[::1]5201"] {
            assert!(split_host_port(bad).is_err(), "{bad}");
        }
    }
}
