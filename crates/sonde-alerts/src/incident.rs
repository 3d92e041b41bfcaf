//! The incident delivery: an alert raised opens an incident addressed to
//! the owners of the path's addresses (the incidents find them by the
//! longest matching prefix); cleared, it says so in a comment on that
//! incident, which the team then closes (an alert clearing is not the
//! team's word that the incident is handled).

use crate::notice::Notice;
use crate::rule::Edge;
use sonde_archive::Store;
use sonde_incidents::{NewIncident, Role, Severity};
use std::net::IpAddr;

/// Who writes the comments.
const AUTHOR: &str = "sonde alerts";

/// An address written as a host, if it is one (`[::1]` or `::1%eth0`
/// too).
fn address(host: &str) -> Option<IpAddr> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    let h = h.split('%').next().unwrap_or(h);
    h.parse().ok()
}

/// Opens (raised) or comments (cleared) the incident of `notice`; the id
/// of an incident opened.
pub fn deliver(
    store: &mut Store,
    notice: &Notice,
    kind: &str,
    severity: Option<&str>,
) -> Result<Option<i64>, String> {
    let e = &notice.event;
    let now = sonde_model::clock::now_ns();
    let value = notice.fields()["value"].clone();
    match notice.edge {
        Edge::Raised => {
            let severity: Severity = match severity {
                Some(s) => s
                    .parse()
                    .map_err(|e: sonde_incidents::IncidentError| e.to_string())?,
                None => Severity::default(),
            };
            let mut addresses = Vec::new();
            if let Some(a) = address(&notice.source_host) {
                addresses.push((a, Role::Source));
            }
            if let Some(a) = address(&notice.target_host) {
                if !addresses.iter().any(|(x, _)| *x == a) {
                    addresses.push((a, Role::Target));
                }
            }
            let new = NewIncident {
                kind: kind.to_string(),
                severity,
                summary: format!(
                    "{} on {}: {} = {value} ({})",
                    e.rule,
                    e.label,
                    notice.metric.name(),
                    e.detail
                )
                .chars()
                .take(500)
                .collect(),
                addresses,
                source: format!("alert:{}", e.rule).chars().take(100).collect(),
            };
            let id = store
                .open_alert_incident(&e.rule, &e.path, &new, now)
                .map_err(|e| e.to_string())?;
            tracing::info!(alert = %e.rule, incident = id, "alert: incident opened");
            Ok(Some(id))
        }
        Edge::Cleared => {
            let Some(id) = notice.incident_id else {
                return Ok(None);
            };
            let text = format!(
                "The alert {} cleared at {}: {} = {value} (result {}).",
                e.rule,
                notice.fields()["at"],
                notice.metric.name(),
                e.result_id
            );
            store
                .comment_incident(id, AUTHOR, &text, now)
                .map_err(|e| e.to_string())?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_are_addresses_are_read_as_addresses() {
        assert_eq!(address("2001:db8::1"), "2001:db8::1".parse().ok());
        assert_eq!(address("[::1]"), "::1".parse().ok());
        assert_eq!(address("fe80::1%eth0"), "fe80::1".parse().ok());
        assert_eq!(address("198.18.1.2"), "198.18.1.2".parse().ok());
        assert_eq!(address("central.example.net"), None);
    }
}
