//! Incident reports imported as JSON (AIRT imports reports
//! automatically; ARF and IODEF are not read). One report, or an array
//! of them:
//!
//! ```json
//! {"type": "scan", "severity": "high", "summary": "ssh scan",
//!  "description": "…", "reporter": "cert@example.org",
//!  "reported_at": "2026-11-26T06:00:00Z",
//!  "addresses": [{"address": "2001:db8::5", "role": "source"}]}
//! ```
//!
//! `type`, `summary` and `addresses` (at least one) are required;
//! `severity` is `medium` when absent. An error names the field, with
//! its place: `[1].addresses[0].role: 'sender' is not one of source,
//! target`.

use crate::model::{check_text, invalid, IncidentError, NewIncident, Role, Severity};
use serde_json::{Map, Value};
use std::net::IpAddr;

/// A report read and checked: the incident to open, and what goes into
/// its first comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub incident: NewIncident,
    pub description: Option<String>,
    pub reporter: Option<String>,
    pub reported_at_ns: Option<i64>,
}

impl Report {
    /// Its description, and when it was reported, as the incident's
    /// first comment (`None`: neither was given).
    pub fn comment(&self) -> Option<String> {
        let at = self
            .reported_at_ns
            .map(|t| format!("reported at {}", crate::template::rfc3339(t)));
        match (&self.description, at) {
            (Some(d), Some(at)) => Some(format!("{at}: {d}")),
            (Some(d), None) => Some(d.clone()),
            (None, at) => at,
        }
    }
}

// What `parse_reports` reads, field by field so that an error names the
// field and the report: this type describes it (the API's schema), and
// `FIELDS` are its keys, checked against it by a test.
/// A report of an incident, as written (alone or in an array of at most
/// 1000).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "IncidentReport")]
pub struct ReportForm {
    /// The incident's type, e.g. `scan`, `ddos` (1 to 60 letters, digits,
    /// `-`, `_`, `.` or `:`).
    #[serde(rename = "type")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.:-]{1,60}$"))]
    pub kind: String,
    /// `medium` unless said.
    #[serde(default)]
    pub severity: Option<Severity>,
    #[schemars(length(min = 1, max = 500))]
    pub summary: String,
    /// The incident's first comment.
    #[serde(default)]
    #[schemars(length(max = 19_900))]
    pub description: Option<String>,
    /// Who reported it, as the report says.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub reporter: Option<String>,
    /// When it was reported, RFC 3339.
    #[serde(default)]
    pub reported_at: Option<String>,
    /// 1 to 256 addresses.
    #[schemars(length(min = 1, max = 256))]
    pub addresses: Vec<ReportAddress>,
}

/// An address of a report, and what it did.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportAddress {
    pub address: IpAddr,
    pub role: Role,
}

const FIELDS: &[&str] = &[
    "type",
    "severity",
    "summary",
    "description",
    "reporter",
    "reported_at",
    "addresses",
];

/// Reads one report or an array of them (at most 1000).
pub fn parse_reports(text: &str) -> Result<Vec<Report>, IncidentError> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| invalid("report", format!("not JSON: {e}")))?;
    match v {
        Value::Array(items) => {
            if items.is_empty() || items.len() > 1000 {
                return Err(invalid("report", "an array of 1 to 1000 reports"));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, item)| report(&format!("[{i}]."), item))
                .collect()
        }
        other => Ok(vec![report("", &other)?]),
    }
}

fn report(at: &str, v: &Value) -> Result<Report, IncidentError> {
    let name = |f: &str| format!("{at}{f}");
    let Value::Object(m) = v else {
        return Err(invalid(
            if at.is_empty() {
                "report"
            } else {
                at.trim_end_matches('.')
            },
            "not a JSON object",
        ));
    };
    if let Some(k) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(invalid(
            name(k),
            format!("unknown field (known: {})", FIELDS.join(", ")),
        ));
    }
    let kind = string(m, at, "type")?.ok_or_else(|| invalid(name("type"), "missing"))?;
    let summary = string(m, at, "summary")?.ok_or_else(|| invalid(name("summary"), "missing"))?;
    let severity = match string(m, at, "severity")? {
        Some(s) => s
            .parse::<Severity>()
            .map_err(|e| rename(e, &name("severity")))?,
        None => Severity::default(),
    };
    let description = string(m, at, "description")?;
    if let Some(d) = &description {
        // Room for the "reported at …: " the comment puts before it: the
        // comment must keep to a comment's 20,000 characters.
        check_text(&name("description"), d, 19_900, true)?;
    }
    let reporter = string(m, at, "reporter")?;
    if let Some(r) = &reporter {
        // As long as a comment's author may be.
        check_text(&name("reporter"), r, 100, false)?;
    }
    let reported_at_ns = match string(m, at, "reported_at")? {
        Some(t) => Some(parse_time(&t).ok_or_else(|| {
            invalid(
                name("reported_at"),
                format!("'{t}' is not an RFC 3339 time (2026-11-26T06:00:00Z)"),
            )
        })?),
        None => None,
    };
    let Some(Value::Array(list)) = m.get("addresses") else {
        return Err(invalid(
            name("addresses"),
            "missing or not an array of {address, role}",
        ));
    };
    if list.is_empty() || list.len() > 256 {
        return Err(invalid(name("addresses"), "1 to 256 addresses"));
    }
    let mut addresses = Vec::new();
    for (i, a) in list.iter().enumerate() {
        addresses.push(address(&format!("{at}addresses[{i}]."), a)?);
    }
    let incident = NewIncident {
        kind,
        severity,
        summary,
        addresses,
        source: "import".into(),
    };
    incident.validate().map_err(|e| prefix(e, at))?;
    Ok(Report {
        incident,
        description,
        reporter,
        reported_at_ns,
    })
}

fn address(at: &str, v: &Value) -> Result<(IpAddr, Role), IncidentError> {
    let Value::Object(m) = v else {
        return Err(invalid(
            at.trim_end_matches('.'),
            "not an object {address, role}",
        ));
    };
    if let Some(k) = m.keys().find(|k| *k != "address" && *k != "role") {
        return Err(invalid(
            format!("{at}{k}"),
            "unknown field (known: address, role)",
        ));
    }
    let text =
        string(m, at, "address")?.ok_or_else(|| invalid(format!("{at}address"), "missing"))?;
    let addr = text.parse::<IpAddr>().map_err(|_| {
        invalid(
            format!("{at}address"),
            format!("'{text}' is not an IPv6 or IPv4 address"),
        )
    })?;
    let role = string(m, at, "role")?.ok_or_else(|| invalid(format!("{at}role"), "missing"))?;
    let role = role
        .parse::<Role>()
        .map_err(|e| rename(e, &format!("{at}role")))?;
    Ok((addr, role))
}

/// A string field, or `None` when absent or null.
fn string(m: &Map<String, Value>, at: &str, key: &str) -> Result<Option<String>, IncidentError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("{at}{key}"), "not a string")),
    }
}

fn rename(e: IncidentError, field: &str) -> IncidentError {
    match e {
        IncidentError::Invalid { reason, .. } => invalid(field, reason),
        other => other,
    }
}

fn prefix(e: IncidentError, at: &str) -> IncidentError {
    match e {
        IncidentError::Invalid { field, reason } => invalid(format!("{at}{field}"), reason),
        other => other,
    }
}

/// An RFC 3339 time, as nanoseconds since the epoch.
pub fn parse_time(t: &str) -> Option<i64> {
    let at = humantime::parse_rfc3339_weak(t).ok()?;
    let d = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_read_are_the_described_ones() {
        let schema = schemars::schema_for!(ReportForm).to_value();
        let mut described: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        described.sort_unstable();
        let mut read = FIELDS.to_vec();
        read.sort_unstable();
        assert_eq!(described, read);
        let address = &schema["$defs"]["ReportAddress"]["properties"];
        assert!(address["address"].is_object() && address["role"].is_object());
    }

    #[test]
    fn a_report_reads_into_an_incident() {
        let r = parse_reports(
            r#"{"type": "scan", "severity": "high", "summary": "ssh scan",
                "description": "many tries", "reported_at": "2023-11-14T22:13:20Z",
                "addresses": [{"address": "2001:db8::5", "role": "source"},
                              {"address": "198.51.100.9", "role": "target"}]}"#,
        )
        .unwrap();
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!(r.incident.kind, "scan");
        assert_eq!(r.incident.severity, Severity::High);
        assert_eq!(r.incident.source, "import");
        assert_eq!(
            r.incident.addresses,
            vec![
                ("2001:db8::5".parse().unwrap(), Role::Source),
                ("198.51.100.9".parse().unwrap(), Role::Target)
            ]
        );
        assert_eq!(r.reported_at_ns, Some(1_700_000_000_000_000_000));
        assert_eq!(r.description.as_deref(), Some("many tries"));
    }

    #[test]
    fn a_bad_field_is_named_with_its_place() {
        let e = |t: &str| parse_reports(t).unwrap_err().to_string();
        let one = r#"{"type": "scan", "summary": "s", "addresses": [{"address": "2001:db8::5", "role": "source"}]}"#;
        assert!(parse_reports(one).is_ok());
        let two = format!("[{one}, {}]", one.replace("\"source\"", "\"sender\""));
        assert_eq!(
            e(&two),
            "[1].addresses[0].role: 'sender' is not one of source, target"
        );
        assert_eq!(
            e(&one.replace("2001:db8::5", "2001:db8::g")),
            "addresses[0].address: '2001:db8::g' is not an IPv6 or IPv4 address"
        );
        assert!(e(&one.replace("\"summary\"", "\"sumary\"")).starts_with("sumary: unknown field"));
        assert_eq!(
            e(&one.replace(", \"summary\": \"s\"", "")),
            "summary: missing"
        );
        assert_eq!(e(&one.replace("\"scan\"", "7")), "type: not a string");
        assert!(e("{").starts_with("report: not JSON"));
        assert!(e(&one.replace("\"scan\"", "\"a b\"")).starts_with("type: 'a b' is not a type"));
    }
}
