//! `[auth]` in force: the tokens with their secrets, the limit classes
//! with their caps folded into `[limits]`, and the choice of a client's
//! class. Built once when the server starts ([`Access::load`]).
//!
//! A client's class: its token's, if it authenticated; else the first
//! class whose prefixes hold its address (v4-mapped as IPv4); else
//! `unknown`, which is `[limits]`.

use crate::auth_config::{
    AuthConfig, ClassConfig, OverLimit, Permission, DEFAULT_CLASS, UNKNOWN_CLASS,
};
use crate::limits_config::Limits;
use ipnet::IpNet;
use sonde_model::Rate;
use std::fmt;
use std::net::IpAddr;

/// A limit class in force: its caps as a whole [`Limits`] (never more
/// than `[limits]`), and what to do with a request over them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Class {
    pub name: String,
    prefixes: Vec<IpNet>,
    /// The caps of TCP tests.
    pub limits: Limits,
    /// The caps of UDP tests: `limits` with `max_udp_rate` folded in.
    pub udp_limits: Limits,
    pub over_limit: OverLimit,
    /// Whether the name is worth saying in a refusal (a server with
    /// classes or tokens); a server without says what it always said.
    pub named: bool,
}

fn min_rate(a: Option<Rate>, b: Option<Rate>) -> Option<Rate> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Class {
    fn plain(name: &str, limits: &Limits, named: bool) -> Self {
        Self {
            name: name.into(),
            prefixes: Vec::new(),
            limits: limits.clone(),
            udp_limits: limits.clone(),
            over_limit: OverLimit::Refuse,
            named,
        }
    }

    fn from_config(c: &ClassConfig, global: &Limits) -> Self {
        let mut limits = global.clone();
        if let Some(d) = c.max_duration {
            limits.max_duration = limits.max_duration.min(d);
        }
        if let Some(s) = c.max_streams {
            limits.max_streams = limits.max_streams.min(s);
        }
        limits.max_rate = min_rate(limits.max_rate, c.max_rate);
        let mut udp_limits = limits.clone();
        udp_limits.max_rate = min_rate(limits.max_rate, c.max_udp_rate);
        Self {
            name: c.name.clone(),
            prefixes: c.prefixes.clone(),
            limits,
            udp_limits,
            over_limit: c.over_limit,
            named: true,
        }
    }
}

/// A token in force.
#[derive(Clone)]
struct Token {
    name: String,
    secret: Vec<u8>,
    /// Index into `Access::classes`; `None`: the default class.
    class: Option<usize>,
    third_party: bool,
}

/// What the server knows of a client once its token is proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub token: String,
    pub third_party: bool,
}

/// Tokens and classes in force.
pub(crate) struct Access {
    tokens: Vec<Token>,
    classes: Vec<Class>,
    unknown: Class,
    default: Class,
    pub required: bool,
    pub iperf3: bool,
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Access")
            .field(
                "tokens",
                &self.tokens.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .field("classes", &self.classes)
            .field("required", &self.required)
            .field("iperf3", &self.iperf3)
            .finish_non_exhaustive()
    }
}

impl Access {
    /// No tokens, no classes: everyone under `limits`.
    #[cfg(test)]
    pub(crate) fn open(limits: &Limits) -> Self {
        Self {
            tokens: Vec::new(),
            classes: Vec::new(),
            unknown: Class::plain(UNKNOWN_CLASS, limits, false),
            default: Class::plain(DEFAULT_CLASS, limits, false),
            required: false,
            iperf3: true,
        }
    }

    /// `auth` in force under `limits` (secrets read again; the config was
    /// checked).
    pub(crate) fn load(auth: &AuthConfig, limits: &Limits) -> Result<Self, (&'static str, String)> {
        auth.check()?;
        let named = auth.is_configured();
        let classes: Vec<Class> = auth
            .classes
            .iter()
            .map(|c| Class::from_config(c, limits))
            .collect();
        let tokens = auth
            .tokens
            .iter()
            .map(|t| {
                Ok(Token {
                    name: t.name.clone(),
                    secret: t.load_secret()?,
                    class: t
                        .class
                        .as_ref()
                        .and_then(|c| classes.iter().position(|k| &k.name == c)),
                    third_party: t.may.contains(&Permission::ThirdParty),
                })
            })
            .collect::<Result<_, (&'static str, String)>>()?;
        Ok(Self {
            tokens,
            classes,
            unknown: Class::plain(UNKNOWN_CLASS, limits, named),
            default: Class::plain(DEFAULT_CLASS, limits, named),
            required: auth.required,
            iperf3: auth.iperf3,
        })
    }

    /// The secret of token `name`, if there is one.
    pub(crate) fn secret(&self, name: &str) -> Option<&[u8]> {
        self.tokens
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.secret.as_slice())
    }

    /// The identity of a proved token `name`.
    pub(crate) fn identity(&self, name: &str) -> Option<Identity> {
        self.tokens
            .iter()
            .find(|t| t.name == name)
            .map(|t| Identity {
                token: t.name.clone(),
                third_party: t.third_party,
            })
    }

    /// The class of a client from `peer`, holding `token` if any.
    pub(crate) fn class_for(&self, token: Option<&str>, peer: IpAddr) -> &Class {
        if let Some(name) = token {
            if let Some(t) = self.tokens.iter().find(|t| t.name == name) {
                return t
                    .class
                    .and_then(|i| self.classes.get(i))
                    .unwrap_or(&self.default);
            }
        }
        let ip = peer.to_canonical();
        self.classes
            .iter()
            .find(|c| c.prefixes.iter().any(|p| p.contains(&ip)))
            .unwrap_or(&self.unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerConfig;
    use std::time::Duration;

    fn access(toml: &str) -> Access {
        let c = ServerConfig::from_toml(toml, "t.toml").unwrap();
        c.validate().unwrap();
        Access::load(&c.auth, &c.limits).unwrap()
    }

    const CLASSES: &str = r#"
        [limits]
        max_duration = "120s"
        max_rate = "1G"
        [[auth.classes]]
        name = "lab"
        prefixes = ["127.0.0.2/32", "2001:db8:1::/48"]
        max_duration = "600s"
        max_streams = 2
        [[auth.classes]]
        name = "campus"
        prefixes = ["127.0.0.0/8", "2001:db8::/32"]
        max_duration = "10s"
        max_udp_rate = "50M"
        [[auth.tokens]]
        name = "ops"
        secret = "0123456789abcdef"
        class = "campus"
        [[auth.tokens]]
        name = "plain"
        secret = "0123456789abcdef"
    "#;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_first_class_holding_the_source_wins_in_both_families() {
        let a = access(CLASSES);
        assert_eq!(a.class_for(None, ip("127.0.0.2")).name, "lab");
        assert_eq!(a.class_for(None, ip("127.0.0.3")).name, "campus");
        assert_eq!(a.class_for(None, ip("::ffff:127.0.0.2")).name, "lab");
        assert_eq!(a.class_for(None, ip("2001:db8:1::5")).name, "lab");
        assert_eq!(a.class_for(None, ip("2001:db8:2::5")).name, "campus");
        assert_eq!(a.class_for(None, ip("::1")).name, "unknown");
        assert_eq!(a.class_for(None, ip("10.0.0.1")).name, "unknown");
    }

    #[test]
    fn a_token_picks_its_class_wherever_it_comes_from() {
        let a = access(CLASSES);
        assert_eq!(a.class_for(Some("ops"), ip("127.0.0.2")).name, "campus");
        assert_eq!(a.class_for(Some("ops"), ip("::1")).name, "campus");
        assert_eq!(a.class_for(Some("plain"), ip("127.0.0.2")).name, "default");
        // A name that is no token counts for nothing.
        assert_eq!(a.class_for(Some("nope"), ip("127.0.0.2")).name, "lab");
        assert_eq!(a.secret("ops"), Some(&b"0123456789abcdef"[..]));
        assert!(a.secret("nope").is_none());
    }

    #[test]
    fn a_class_never_exceeds_the_global_limits() {
        let a = access(CLASSES);
        let lab = a.class_for(None, ip("127.0.0.2"));
        assert_eq!(lab.limits.max_duration, Duration::from_secs(120));
        assert_eq!(lab.limits.max_streams, 2);
        assert_eq!(lab.limits.max_rate, Some(Rate::from_bps(1_000_000_000)));
        let campus = a.class_for(None, ip("127.0.0.9"));
        assert_eq!(campus.limits.max_duration, Duration::from_secs(10));
        assert_eq!(campus.limits.max_rate, Some(Rate::from_bps(1_000_000_000)));
        assert_eq!(campus.udp_limits.max_rate, Some(Rate::from_bps(50_000_000)));
        let unknown = a.class_for(None, ip("::1"));
        assert_eq!(unknown.limits, a.unknown.limits);
        assert!(unknown.named);
        assert!(!Access::open(&Limits::default()).unknown.named);
    }
}
