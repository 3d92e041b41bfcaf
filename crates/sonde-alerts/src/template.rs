//! An alert mail's subject and body: text with `{name}` placeholders
//! filled from the notice (`{{` and `}}` for braces), read as the
//! incidents' mail templates are. A placeholder that does not exist is
//! refused when the configuration is read, by name, not sent as is.

use sonde_incidents::Piece;

/// The placeholders a notice fills (docs/alerts.md).
pub const NAMES: &[&str] = &[
    "alert",
    "edge",
    "EDGE",
    "path",
    "test",
    "source",
    "target",
    "source_address",
    "target_address",
    "metric",
    "value",
    "condition",
    "at",
    "result",
    "incident",
];

/// The default subject and body of an alert's mail.
pub const DEFAULT_SUBJECT: &str = "[sonde] {EDGE}: {alert} on {path}";
pub const DEFAULT_BODY: &str = "The alert {alert} was {edge} at {at}.

Path:      {path}
Metric:    {metric} = {value}
Condition: {condition}
Result:    {result}
Incident:  {incident}

-- sonde
";

/// A checked template: its text, read once by the incidents' template
/// reader with the alerts' placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
}

impl Template {
    /// Reads `text`; the first unknown or unclosed placeholder is named.
    pub fn parse(text: &str) -> Result<Self, String> {
        sonde_incidents::parse_placeholders("template", text, NAMES).map_err(|e| match e {
            sonde_incidents::IncidentError::Invalid { reason, .. } => reason,
            other => other.to_string(),
        })?;
        Ok(Self { text: text.into() })
    }

    /// The text with every placeholder replaced by its value.
    pub fn fill(&self, values: &std::collections::BTreeMap<&'static str, String>) -> String {
        // Checked when made: this reads.
        let pieces =
            sonde_incidents::parse_placeholders("template", &self.text, NAMES).unwrap_or_default();
        pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => *t,
                Piece::Field(f) => values.get(f).map_or("", String::as_str),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn placeholders_are_filled_and_braces_escaped() {
        let t = Template::parse("{EDGE} {alert} {{x}} on {path}").unwrap();
        let v = BTreeMap::from([
            ("EDGE", "RAISED".to_string()),
            ("alert", "lossy".to_string()),
            ("path", "ping a → b".to_string()),
        ]);
        assert_eq!(t.fill(&v), "RAISED lossy {x} on ping a → b");
    }

    #[test]
    fn an_unknown_or_unclosed_placeholder_is_named() {
        let e = Template::parse("hello {nmae}").unwrap_err();
        assert!(e.contains("unknown placeholder {nmae}"), "{e}");
        assert!(Template::parse("{alert").is_err());
        assert!(Template::parse("a } b").is_err());
        Template::parse(DEFAULT_SUBJECT).unwrap();
        Template::parse(DEFAULT_BODY).unwrap();
    }
}
