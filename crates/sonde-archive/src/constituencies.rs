//! The archive's constituencies (AIRT's model, docs/incidents.md): each
//! with the networks it owns and its contacts; the owner of an address
//! by the longest matching prefix.

use crate::sql::{Sql, Value};
use crate::{ArchiveError, Store};
use sonde_incidents::{Constituency, Contact, IncidentError, IpNet, Owners};
use std::collections::BTreeMap;
use std::net::IpAddr;

pub(crate) fn text(s: &str) -> Value {
    Value::Text(Some(s.to_string()))
}

pub(crate) fn int(i: i64) -> Value {
    Value::Int(Some(i))
}

fn not_found(code: &str) -> ArchiveError {
    ArchiveError::Incident(IncidentError::NotFound {
        what: "constituency",
        name: code.to_string(),
    })
}

fn exists_in(tx: &mut dyn Sql, code: &str) -> Result<bool, ArchiveError> {
    Ok(tx
        .int(
            "SELECT COUNT(*) FROM constituencies WHERE code = $1",
            &[text(code)],
        )?
        .unwrap_or(0)
        > 0)
}

fn add_network_in(
    tx: &mut dyn Sql,
    code: &str,
    net: IpNet,
    now_ns: i64,
) -> Result<(), ArchiveError> {
    let net = net.trunc();
    let prefix = net.to_string();
    if let Some(owner) = tx
        .texts(
            "SELECT code FROM constituency_networks WHERE prefix = $1",
            &[text(&prefix)],
        )?
        .into_iter()
        .next()
    {
        return Err(IncidentError::Owners(sonde_incidents::OwnersError::Twice {
            prefix: net,
            first: owner,
            second: code.to_string(),
        })
        .into());
    }
    tx.execute(
        "INSERT INTO constituency_networks (prefix, code, added_ns) VALUES ($1, $2, $3)",
        &[text(&prefix), text(code), int(now_ns)],
    )?;
    Ok(())
}

fn add_contact_in(
    tx: &mut dyn Sql,
    code: &str,
    c: &Contact,
    now_ns: i64,
) -> Result<(), ArchiveError> {
    tx.execute(
        "INSERT INTO constituency_contacts (code, email, name, role, added_ns) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (code, email) DO UPDATE SET \
         name = excluded.name, role = excluded.role",
        &[
            text(code),
            text(&c.email),
            text(&c.name),
            text(&c.role),
            int(now_ns),
        ],
    )?;
    Ok(())
}

/// Who owns what, as the archive's networks say (read in `tx`, so an
/// incident's owners are those of the moment it is kept).
pub(crate) fn owners_in(tx: &mut dyn Sql) -> Result<Owners, ArchiveError> {
    let rows = tx.rows(
        "SELECT code, prefix FROM constituency_networks ORDER BY code, prefix",
        &[],
    )?;
    let mut by_code: BTreeMap<String, Vec<IpNet>> = BTreeMap::new();
    for r in &rows {
        let code = r.first().and_then(Value::text).unwrap_or_default();
        if let Some(net) = r.get(1).and_then(Value::text).and_then(|p| p.parse().ok()) {
            by_code.entry(code.to_string()).or_default().push(net);
        }
    }
    let list: Vec<Constituency> = by_code
        .into_iter()
        .map(|(code, networks)| Constituency {
            code,
            name: String::new(),
            notes: String::new(),
            networks,
            contacts: vec![],
        })
        .collect();
    Ok(Owners::new(&list).map_err(IncidentError::from)?)
}

impl Store {
    /// Adds constituency `c` with its networks and contacts, all or
    /// nothing: a code already there, or a prefix another constituency
    /// owns, is refused by name.
    pub fn add_constituency(&mut self, c: &Constituency, now_ns: i64) -> Result<(), ArchiveError> {
        c.validate()?;
        for contact in &c.contacts {
            contact.validate()?;
        }
        self.backend.transaction(&mut |tx| {
            if exists_in(tx, &c.code)? {
                return Err(IncidentError::Exists {
                    what: "constituency",
                    name: c.code.clone(),
                }
                .into());
            }
            tx.execute(
                "INSERT INTO constituencies (code, name, notes, added_ns) VALUES ($1, $2, $3, $4)",
                &[text(&c.code), text(&c.name), text(&c.notes), int(now_ns)],
            )?;
            for net in &c.networks {
                add_network_in(tx, &c.code, *net, now_ns)?;
            }
            for contact in &c.contacts {
                add_contact_in(tx, &c.code, contact, now_ns)?;
            }
            Ok(())
        })
    }

    /// Gives constituency `code` network `net` (refused if another owns
    /// the same prefix; a longer or shorter one is fine: the longest
    /// match owns an address).
    pub fn add_network(&mut self, code: &str, net: IpNet, now_ns: i64) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |tx| {
            if !exists_in(tx, code)? {
                return Err(not_found(code));
            }
            add_network_in(tx, code, net, now_ns)
        })
    }

    /// Adds (or, by its address, updates) a contact of `code`.
    pub fn add_contact(
        &mut self,
        code: &str,
        c: &Contact,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        c.validate()?;
        self.backend.transaction(&mut |tx| {
            if !exists_in(tx, code)? {
                return Err(not_found(code));
            }
            add_contact_in(tx, code, c, now_ns)
        })
    }

    /// Changes constituency `code`'s name or notes (`None` keeps it).
    pub fn set_constituency(
        &mut self,
        code: &str,
        name: Option<&str>,
        notes: Option<&str>,
    ) -> Result<(), ArchiveError> {
        if let Some(n) = name {
            sonde_incidents::model::check_text("name", n, 200, false)?;
        }
        if let Some(n) = notes.filter(|n| !n.is_empty()) {
            sonde_incidents::model::check_text("notes", n, 5000, true)?;
        }
        self.backend.transaction(&mut |tx| {
            if !exists_in(tx, code)? {
                return Err(not_found(code));
            }
            for (column, value) in [("name", name), ("notes", notes)] {
                if let Some(v) = value {
                    tx.execute(
                        &format!("UPDATE constituencies SET {column} = $2 WHERE code = $1"),
                        &[text(code), text(v)],
                    )?;
                }
            }
            Ok(())
        })
    }

    /// Removes constituency `code` with its networks and contacts. The
    /// incidents it owned addresses of keep its code as their owner of
    /// the time they were opened.
    pub fn remove_constituency(&mut self, code: &str) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |tx| {
            if !exists_in(tx, code)? {
                return Err(not_found(code));
            }
            for table in [
                "constituency_networks",
                "constituency_contacts",
                "constituencies",
            ] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE code = $1"),
                    &[text(code)],
                )?;
            }
            Ok(())
        })
    }

    /// Takes network `net` from constituency `code`; refused, naming
    /// both, when `code` does not own that very prefix.
    pub fn remove_network(&mut self, code: &str, net: IpNet) -> Result<(), ArchiveError> {
        let prefix = net.trunc().to_string();
        self.backend.transaction(&mut |tx| {
            if !exists_in(tx, code)? {
                return Err(not_found(code));
            }
            let gone = tx.execute(
                "DELETE FROM constituency_networks WHERE prefix = $1 AND code = $2",
                &[text(&prefix), text(code)],
            )?;
            if gone == 0 {
                return Err(IncidentError::NotFound {
                    what: "network",
                    name: format!("{prefix} of {code}"),
                }
                .into());
            }
            Ok(())
        })
    }

    /// Removes the contact of constituency `code` at `email`.
    pub fn remove_contact(&mut self, code: &str, email: &str) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |tx| {
            if !exists_in(tx, code)? {
                return Err(not_found(code));
            }
            let gone = tx.execute(
                "DELETE FROM constituency_contacts WHERE code = $1 AND email = $2",
                &[text(code), text(email)],
            )?;
            if gone == 0 {
                return Err(IncidentError::NotFound {
                    what: "contact",
                    name: format!("{email} of {code}"),
                }
                .into());
            }
            Ok(())
        })
    }

    /// Every constituency with its networks (longest first) and contacts,
    /// by code.
    pub fn constituencies(&mut self) -> Result<Vec<Constituency>, ArchiveError> {
        let sql = self.backend.sql();
        let rows = sql.rows(
            "SELECT code, name, notes FROM constituencies ORDER BY code",
            &[],
        )?;
        let nets = sql.rows("SELECT code, prefix FROM constituency_networks", &[])?;
        let contacts = sql.rows(
            "SELECT code, name, email, role FROM constituency_contacts ORDER BY code, role, email",
            &[],
        )?;
        let col = |r: &Vec<Value>, i: usize| {
            r.get(i)
                .and_then(Value::text)
                .unwrap_or_default()
                .to_string()
        };
        let mut out: Vec<Constituency> = rows
            .iter()
            .map(|r| Constituency {
                code: col(r, 0),
                name: col(r, 1),
                notes: col(r, 2),
                networks: vec![],
                contacts: vec![],
            })
            .collect();
        for c in &mut out {
            c.networks = nets
                .iter()
                .filter(|r| col(r, 0) == c.code)
                .filter_map(|r| col(r, 1).parse().ok())
                .collect();
            c.networks
                .sort_by_key(|n: &IpNet| (std::cmp::Reverse(n.prefix_len()), *n));
            c.contacts = contacts
                .iter()
                .filter(|r| col(r, 0) == c.code)
                .map(|r| Contact {
                    name: col(r, 1),
                    email: col(r, 2),
                    role: col(r, 3),
                })
                .collect();
        }
        Ok(out)
    }

    /// The constituency that owns `addr` and the prefix it owns it by;
    /// `None`: nobody's.
    pub fn owner_of(
        &mut self,
        addr: IpAddr,
    ) -> Result<Option<(Constituency, IpNet)>, ArchiveError> {
        let owners = owners_in(self.backend.sql())?;
        let Some((code, net)) = owners.owner_of(addr) else {
            return Ok(None);
        };
        let code = code.to_string();
        Ok(self
            .constituencies()?
            .into_iter()
            .find(|c| c.code == code)
            .map(|c| (c, net)))
    }
}
