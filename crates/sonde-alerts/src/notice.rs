//! A notice: an alert raised or cleared, with what its deliveries tell
//! (the values of a message's placeholders).

use crate::config::{AlertMetric, PathKey};
use crate::rule::Edge;
use sonde_archive::AlertEvent;
use std::collections::BTreeMap;

/// An alert raised or cleared, with what its deliveries tell.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub event: AlertEvent,
    pub edge: Edge,
    pub path: PathKey,
    pub metric: AlertMetric,
    /// The ends the result ran between: their addresses where the result
    /// says, else the hosts as written.
    pub source_host: String,
    pub target_host: String,
    /// The incident the alert opened when it was raised.
    pub incident_id: Option<i64>,
}

impl Notice {
    /// Its placeholders' values (docs/alerts.md).
    pub fn fields(&self) -> BTreeMap<&'static str, String> {
        let e = &self.event;
        BTreeMap::from([
            ("alert", e.rule.clone()),
            ("edge", e.edge.clone()),
            ("EDGE", e.edge.to_uppercase()),
            ("path", e.label.clone()),
            ("test", self.path.test.clone()),
            ("source", self.path.source.clone()),
            ("target", self.path.target.clone()),
            ("source_address", self.path.source_addr.clone()),
            ("target_address", self.path.target_addr.clone()),
            ("metric", self.metric.name().to_string()),
            (
                "value",
                e.value
                    .map_or_else(|| "unknown".to_string(), |v| self.metric.shown(v)),
            ),
            ("condition", e.detail.clone()),
            ("at", sonde_incidents::template::rfc3339(e.at_ns)),
            ("result", e.result_id.clone()),
            (
                "incident",
                self.incident_id.map_or_else(String::new, |i| i.to_string()),
            ),
        ])
    }

    /// The JSON a webhook is sent.
    pub fn json(&self) -> serde_json::Value {
        let e = &self.event;
        serde_json::json!({
            "alert": e.rule,
            "edge": e.edge,
            "path": {
                "test": self.path.test,
                "source": self.path.source,
                "target": self.path.target,
                "source_address": self.path.source_addr,
                "target_address": self.path.target_addr,
                "family": self.path.family,
                "direction": self.path.direction,
                "campaign": self.path.campaign,
                "step": self.path.step,
            },
            "label": e.label,
            "metric": self.metric.name(),
            "value": e.value,
            "condition": e.detail,
            "at": self.fields()["at"],
            "result_id": e.result_id,
            "incident_id": self.incident_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PathKey;

    #[test]
    fn a_notice_says_its_value_rounded_and_keeps_it_whole_in_json() {
        let n = Notice {
            event: AlertEvent {
                rule: "lossy".into(),
                path: "p".into(),
                label: "ping a → b".into(),
                edge: "raised".into(),
                at_ns: 0,
                value: Some(56.52173913043478),
                result_id: "r".into(),
                detail: "loss_pct > 1".into(),
            },
            edge: Edge::Raised,
            path: PathKey::default(),
            metric: AlertMetric::Figure(sonde_model::Metric::LossPct),
            source_host: String::new(),
            target_host: String::new(),
            incident_id: None,
        };
        assert_eq!(n.fields()["value"], "56.522");
        assert_eq!(n.json()["value"], 56.52173913043478);
    }
}
