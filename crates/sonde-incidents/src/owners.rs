//! Who owns an address: each constituency owns networks (IPv6 and IPv4
//! prefixes); the owner of an address is the constituency with the
//! longest prefix that holds it, so a customer's /48 inside its
//! provider's /32 finds the customer. v4-mapped IPv6 addresses count as
//! IPv4.

use crate::model::{check_text, invalid, IncidentError};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// A constituency: a name, a short code, notes, the networks it owns and
/// the people to write to about an incident in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Constituency {
    /// 1 to 40 lowercase letters, digits, `-` or `_`.
    #[schemars(regex(pattern = r"^[a-z0-9_-]{1,40}$"))]
    pub code: String,
    pub name: String,
    #[serde(default)]
    pub notes: String,
    /// The IPv6 and IPv4 prefixes it owns.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub networks: Vec<IpNet>,
    #[serde(default)]
    pub contacts: Vec<Contact>,
}

/// A constituency's contact: who, where, and their role (`abuse`,
/// `noc`, `security`…; a mail may go to one role only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Contact {
    pub name: String,
    pub email: String,
    /// abuse, noc, security… (abuse when absent).
    #[serde(default = "default_role")]
    pub role: String,
}

fn default_role() -> String {
    "abuse".into()
}

/// Checks a constituency code: 1 to 40 lowercase letters, digits, `-`
/// and `_`.
pub fn check_code(field: &str, code: &str) -> Result<(), IncidentError> {
    let ok = (1..=40).contains(&code.len())
        && code
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("'{code}' is not a code (1 to 40 lowercase letters, digits, '-' or '_')"),
        ))
    }
}

impl Constituency {
    /// Checks its code, name and notes (not its networks or contacts).
    pub fn validate(&self) -> Result<(), IncidentError> {
        check_code("code", &self.code)?;
        check_text("name", &self.name, 200, false)?;
        if !self.notes.is_empty() {
            check_text("notes", &self.notes, 5000, true)?;
        }
        Ok(())
    }
}

impl Contact {
    /// Checks its name, its address (one mailbox) and its role.
    pub fn validate(&self) -> Result<(), IncidentError> {
        check_text("name", &self.name, 200, false)?;
        if self.email.parse::<lettre::Address>().is_err() {
            return Err(invalid(
                "email",
                format!("'{}' is not a mail address", self.email),
            ));
        }
        check_code("role", &self.role)
    }
}

/// Why a set of constituencies cannot say who owns what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnersError {
    #[error("{prefix} is owned by both {first} and {second}")]
    Twice {
        prefix: IpNet,
        first: String,
        second: String,
    },
    #[error("constituency code '{0}' is used twice")]
    Code(String),
}

/// Every owned prefix, longest first: the first that holds an address
/// is its owner.
#[derive(Debug, Clone, Default)]
pub struct Owners {
    prefixes: Vec<(IpNet, usize)>,
    codes: Vec<String>,
}

impl Owners {
    /// The owners of `constituencies`' networks. A prefix owned twice is
    /// refused: its addresses would have no single owner.
    pub fn new(constituencies: &[Constituency]) -> Result<Self, OwnersError> {
        let mut codes: Vec<String> = Vec::new();
        let mut prefixes: Vec<(IpNet, usize)> = Vec::new();
        for c in constituencies {
            if codes.contains(&c.code) {
                return Err(OwnersError::Code(c.code.clone()));
            }
            codes.push(c.code.clone());
            for net in &c.networks {
                let net = net.trunc();
                if let Some((_, other)) = prefixes.iter().find(|(p, _)| *p == net) {
                    return Err(OwnersError::Twice {
                        prefix: net,
                        first: codes[*other].clone(),
                        second: c.code.clone(),
                    });
                }
                prefixes.push((net, codes.len() - 1));
            }
        }
        prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.prefix_len()));
        Ok(Self { prefixes, codes })
    }

    /// The code of the constituency that owns `addr`, and the prefix it
    /// owns it by; `None`: nobody's.
    pub fn owner_of(&self, addr: IpAddr) -> Option<(&str, IpNet)> {
        let addr = addr.to_canonical();
        self.prefixes
            .iter()
            .find(|(net, _)| net.contains(&addr))
            .map(|(net, i)| (self.codes[*i].as_str(), *net))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(code: &str, nets: &[&str]) -> Constituency {
        Constituency {
            code: code.into(),
            name: format!("{code} network"),
            notes: String::new(),
            networks: nets.iter().map(|n| n.parse().unwrap()).collect(),
            contacts: vec![],
        }
    }

    fn owner(o: &Owners, a: &str) -> Option<String> {
        o.owner_of(a.parse().unwrap()).map(|(c, _)| c.to_string())
    }

    #[test]
    fn the_longest_prefix_owns_in_both_families() {
        let o = Owners::new(&[
            c("nren", &["2001:db8::/32", "198.51.100.0/22"]),
            c("campus", &["2001:db8:1::/48", "198.51.101.0/24"]),
            c("lab", &["2001:db8:1:2::/64", "198.51.101.128/25"]),
        ])
        .unwrap();
        assert_eq!(owner(&o, "2001:db8:9::1").as_deref(), Some("nren"));
        assert_eq!(owner(&o, "2001:db8:1:7::1").as_deref(), Some("campus"));
        assert_eq!(owner(&o, "2001:db8:1:2::99").as_deref(), Some("lab"));
        assert_eq!(owner(&o, "198.51.100.7").as_deref(), Some("nren"));
        assert_eq!(owner(&o, "198.51.101.7").as_deref(), Some("campus"));
        assert_eq!(owner(&o, "198.51.101.200").as_deref(), Some("lab"));
        assert_eq!(owner(&o, "::ffff:198.51.101.200").as_deref(), Some("lab"));
        assert_eq!(owner(&o, "2001:db9::1"), None);
        assert_eq!(owner(&o, "203.0.113.1"), None);
        let (_, by) = o.owner_of("198.51.101.200".parse().unwrap()).unwrap();
        assert_eq!(by.to_string(), "198.51.101.128/25");
    }

    #[test]
    fn a_prefix_owned_twice_or_a_code_used_twice_is_refused() {
        let e =
            Owners::new(&[c("a", &["2001:db8::/32"]), c("b", &["2001:db8::1/32"])]).unwrap_err();
        assert_eq!(e.to_string(), "2001:db8::/32 is owned by both a and b");
        let e = Owners::new(&[c("a", &[]), c("a", &[])]).unwrap_err();
        assert_eq!(e, OwnersError::Code("a".into()));
    }
}
