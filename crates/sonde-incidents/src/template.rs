//! Mail templates (AIRT's "incident templates"): a subject and a body
//! with placeholders filled from the incident and the constituency the
//! mail goes to, and the state or status the incident takes once the
//! mail is sent (a "first notice" template may set `notified` and
//! `stalled`: the team waits for the owner).
//!
//! Placeholders (docs/incidents.md): `{incident.id}`, `{incident.type}`,
//! `{incident.state}`, `{incident.status}`, `{incident.severity}`,
//! `{incident.summary}`, `{incident.source}`, `{incident.opened}` (RFC
//! 3339, UTC), `{constituency.code}`, `{constituency.name}`, `{address}`
//! (the first of the incident's addresses this constituency owns),
//! `{addresses}` (all of them, one a line, `ADDRESS (ROLE)`). `{{` and
//! `}}` are a literal brace. A template with any other placeholder is
//! refused when it is made, naming it.

use crate::model::{check_state, check_text, invalid, Incident, IncidentError, Status};
use serde::{Deserialize, Serialize};

/// Every placeholder a template may hold.
pub const PLACEHOLDERS: &[&str] = &[
    "incident.id",
    "incident.type",
    "incident.state",
    "incident.status",
    "incident.severity",
    "incident.summary",
    "incident.source",
    "incident.opened",
    "constituency.code",
    "constituency.name",
    "address",
    "addresses",
];

/// A mail template as made and kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MailTemplate {
    pub name: String,
    pub subject: String,
    pub body: String,
    /// The state the incident takes once this mail is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_state: Option<String>,
    /// The status the incident takes once this mail is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_status: Option<Status>,
}

impl MailTemplate {
    /// Checks its name, texts and placeholders, naming the first wrong.
    pub fn validate(&self) -> Result<(), IncidentError> {
        let name_ok = (1..=60).contains(&self.name.len())
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !name_ok {
            return Err(invalid(
                "name",
                format!(
                    "'{}' is not a template name (1 to 60 letters, digits, '-', '_' or '.')",
                    self.name
                ),
            ));
        }
        check_text("subject", &self.subject, 200, false)?;
        check_text("body", &self.body, 20_000, true)?;
        if let Some(s) = &self.set_state {
            check_state("set_state", s)?;
        }
        parse("subject", &self.subject)?;
        parse("body", &self.body)?;
        Ok(())
    }

    /// The subject and body for `incident`, to `constituency` (code and
    /// name).
    pub fn fill(
        &self,
        incident: &Incident,
        constituency: (&str, &str),
    ) -> Result<(String, String), IncidentError> {
        let subject = fill_text("subject", &self.subject, incident, constituency)?;
        let body = fill_text("body", &self.body, incident, constituency)?;
        Ok((subject.replace(['\r', '\n'], " "), body))
    }
}

/// A piece of a template: literal text, or a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Field(&'static str),
}

/// Splits `text` into literal text and known placeholders.
fn parse<'a>(field: &str, text: &'a str) -> Result<Vec<Piece<'a>>, IncidentError> {
    parse_placeholders(field, text, PLACEHOLDERS)
}

/// Splits `text` into literal text and placeholders (`{name}`, each one
/// of `known`; `{{` and `}}` are literal braces): the one reader of
/// templates, for incident mail and alert mail alike. The first unknown
/// placeholder or lone brace is refused, naming `field`.
pub fn parse_placeholders<'a>(
    field: &str,
    text: &'a str,
    known: &[&'static str],
) -> Result<Vec<Piece<'a>>, IncidentError> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let (before, after) = rest.split_at(i);
        if !before.is_empty() {
            out.push(Piece::Text(before));
        }
        if let Some(r) = after.strip_prefix("{{") {
            out.push(Piece::Text("{"));
            rest = r;
        } else if let Some(r) = after.strip_prefix("}}") {
            out.push(Piece::Text("}"));
            rest = r;
        } else if after.starts_with('}') {
            return Err(invalid(
                field,
                "a '}' without its '{' (write '}}' for a brace)",
            ));
        } else {
            let Some(end) = after.find('}') else {
                return Err(invalid(
                    field,
                    "a '{' without its '}' (write '{{' for a brace)",
                ));
            };
            let name = &after[1..end];
            let Some(found) = known.iter().find(|p| **p == name) else {
                return Err(invalid(
                    field,
                    format!(
                        "unknown placeholder {{{name}}} (known: {})",
                        known
                            .iter()
                            .map(|p| format!("{{{p}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            out.push(Piece::Field(found));
            rest = &after[end + 1..];
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

fn fill_text(
    field: &str,
    text: &str,
    incident: &Incident,
    (code, name): (&str, &str),
) -> Result<String, IncidentError> {
    let owned: Vec<_> = incident
        .addresses
        .iter()
        .filter(|a| a.owner.as_deref() == Some(code))
        .collect();
    let mut out = String::new();
    for piece in parse(field, text)? {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Field(f) => out.push_str(&match f {
                "incident.id" => incident.id.to_string(),
                "incident.type" => incident.kind.clone(),
                "incident.state" => incident.state.clone(),
                "incident.status" => incident.status.to_string(),
                "incident.severity" => incident.severity.to_string(),
                "incident.summary" => incident.summary.clone(),
                "incident.source" => incident.source.clone(),
                "incident.opened" => rfc3339(incident.opened_ns),
                "constituency.code" => code.to_string(),
                "constituency.name" => name.to_string(),
                "address" => owned
                    .first()
                    .map(|a| a.address.to_string())
                    .unwrap_or_default(),
                _ => owned
                    .iter()
                    .map(|a| format!("{} ({})", a.address, a.role))
                    .collect::<Vec<_>>()
                    .join("\n"),
            }),
        }
    }
    Ok(out)
}

pub use sonde_model::clock::rfc3339;

/// The mails `template` makes for `incident`: one to each constituency
/// that owns any of its addresses, to its contacts (those of `role`
/// only, if given). A constituency with no such contact gets none; no
/// mail at all is refused, saying why.
pub fn compose(
    template: &MailTemplate,
    incident: &Incident,
    constituencies: &[crate::Constituency],
    role: Option<&str>,
) -> Result<Vec<(String, crate::Mail)>, IncidentError> {
    let owners = incident.owners();
    if owners.is_empty() {
        return Err(invalid(
            "incident",
            format!(
                "incident {} has no address any constituency owns",
                incident.id
            ),
        ));
    }
    let mut out = Vec::new();
    for code in owners {
        let Some(c) = constituencies.iter().find(|c| c.code == code) else {
            continue;
        };
        let to: Vec<String> = c
            .contacts
            .iter()
            .filter(|k| role.is_none_or(|r| k.role == r))
            .map(|k| k.email.clone())
            .collect();
        if to.is_empty() {
            continue;
        }
        let (subject, body) = template.fill(incident, (&c.code, &c.name))?;
        out.push((c.code.clone(), crate::Mail { to, subject, body }));
    }
    if out.is_empty() {
        return Err(invalid(
            "incident",
            format!(
                "no contact{} of {} to write to",
                role.map(|r| format!(" with role {r}")).unwrap_or_default(),
                incident.owners().join(", ")
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IncidentAddress, Role, Severity};

    fn incident() -> Incident {
        let a = |s: &str, role, owner: Option<&str>| IncidentAddress {
            address: s.parse().unwrap(),
            role,
            owner: owner.map(str::to_string),
        };
        Incident {
            id: 42,
            kind: "scan".into(),
            state: "reported".into(),
            status: Status::Open,
            severity: Severity::High,
            summary: "ssh scan".into(),
            source: "import".into(),
            opened_ns: 1_700_000_000_000_000_000,
            updated_ns: 1_700_000_000_000_000_000,
            addresses: vec![
                a("2001:db8:1::5", Role::Source, Some("litnet")),
                a("198.51.100.9", Role::Target, Some("eenet")),
                a("198.51.101.7", Role::Source, Some("litnet")),
            ],
            comments: vec![],
            history: vec![],
        }
    }

    fn template(subject: &str, body: &str) -> MailTemplate {
        MailTemplate {
            name: "first".into(),
            subject: subject.into(),
            body: body.into(),
            set_state: Some("notified".into()),
            set_status: Some(Status::Stalled),
        }
    }

    #[test]
    fn placeholders_are_filled_for_the_constituency_mailed() {
        let t = template(
            "[BG-IRT #{incident.id}] {incident.type} from {address}",
            "Dear {constituency.name} ({constituency.code}),\n{addresses}\n\
             severity {incident.severity}, since {incident.opened}. {{not a field}}",
        );
        t.validate().unwrap();
        let (subject, body) = t.fill(&incident(), ("litnet", "LITNET")).unwrap();
        assert_eq!(subject, "[BG-IRT #42] scan from 2001:db8:1::5");
        assert_eq!(
            body,
            "Dear LITNET (litnet),\n2001:db8:1::5 (source)\n198.51.101.7 (source)\n\
             severity high, since 2023-11-14T22:13:20Z. {not a field}"
        );
    }

    #[test]
    fn an_unknown_placeholder_or_a_lone_brace_is_named() {
        let e = template("x", "hello {incident.owner}")
            .validate()
            .unwrap_err();
        let e = e.to_string();
        assert!(
            e.starts_with("body: unknown placeholder {incident.owner} (known: {incident.id}"),
            "{e}"
        );
        let e = template("id {incident.id", "b").validate().unwrap_err();
        assert!(e.to_string().starts_with("subject: a '{' without"), "{e}");
        let e = template("s", "b }").validate().unwrap_err();
        assert!(e.to_string().starts_with("body: a '}' without"), "{e}");
        let mut t = template("s", "b");
        t.set_state = Some("Notified!".into());
        assert!(t
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("set_state:"));
    }

    #[test]
    fn each_owner_with_a_contact_of_the_role_gets_one_mail() {
        let c = |code: &str, contacts: &[(&str, &str)]| crate::Constituency {
            code: code.into(),
            name: code.to_uppercase(),
            notes: String::new(),
            networks: vec![],
            contacts: contacts
                .iter()
                .map(|(email, role)| crate::Contact {
                    name: "x".into(),
                    email: (*email).into(),
                    role: (*role).into(),
                })
                .collect(),
        };
        let all = [
            c(
                "litnet",
                &[("a@litnet.example", "abuse"), ("n@litnet.example", "noc")],
            ),
            c("eenet", &[("n@eenet.example", "noc")]),
        ];
        let t = template("{constituency.name}", "{address}");
        let mails = compose(&t, &incident(), &all, None).unwrap();
        let got: Vec<(&str, Vec<&str>, &str)> = mails
            .iter()
            .map(|(code, m)| {
                (
                    code.as_str(),
                    m.to.iter().map(String::as_str).collect(),
                    m.body.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "litnet",
                    vec!["a@litnet.example", "n@litnet.example"],
                    "2001:db8:1::5"
                ),
                ("eenet", vec!["n@eenet.example"], "198.51.100.9"),
            ]
        );
        let abuse = compose(&t, &incident(), &all, Some("abuse")).unwrap();
        assert_eq!(abuse.len(), 1);
        assert_eq!(abuse[0].1.subject, "LITNET");
        let e = compose(&t, &incident(), &all, Some("security")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "incident: no contact with role security of litnet, eenet to write to"
        );
    }
}
