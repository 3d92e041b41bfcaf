//! An alert mail's subject and body: text with `{name}` placeholders
//! filled from the notice (`{{` and `}}` for braces). A placeholder that
//! does not exist is refused when the configuration is read, by name,
//! not sent as is.

/// The placeholders a notice fills (docs/alerts.md).
pub const NAMES: &[&str] = &[
    "alert",
    "edge",
    "EDGE",
    "path",
    "test",
    "source",
    "target",
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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(String),
}

/// A checked template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Reads `text`; the first unknown or unclosed placeholder is named.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    lit.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        name.push(c);
                    }
                    if !closed {
                        return Err(format!("'{{{name}' is not closed"));
                    }
                    if !NAMES.contains(&name.as_str()) {
                        return Err(format!(
                            "unknown placeholder {{{name}}} (known: {})",
                            NAMES.join(", ")
                        ));
                    }
                    parts.push(Part::Text(std::mem::take(&mut lit)));
                    parts.push(Part::Field(name));
                }
                '}' => return Err("a lone '}' (write '}}')".into()),
                c => lit.push(c),
            }
        }
        parts.push(Part::Text(lit));
        Ok(Self { parts })
    }

    /// The text with every placeholder replaced by its value.
    pub fn fill(&self, values: &std::collections::BTreeMap<&'static str, String>) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.as_str(),
                Part::Field(f) => values.get(f.as_str()).map_or("", String::as_str),
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
        assert!(e.contains("{nmae}"), "{e}");
        assert!(Template::parse("{alert").is_err());
        assert!(Template::parse("a } b").is_err());
        Template::parse(DEFAULT_SUBJECT).unwrap();
        Template::parse(DEFAULT_BODY).unwrap();
    }
}
