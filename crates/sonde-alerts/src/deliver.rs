//! Where a notice goes: the log, a webhook (an HTTP POST of JSON), mail
//! through `[smtp]`, and an incident addressed to the owner of the
//! path's addresses. A delivery that fails is logged with why; the notice
//! itself is already in the archive (`alert_events`, the API), so none is
//! lost with a webhook or a mail server that is down.

use crate::config::{Delivery, Rule};
use crate::notice::Notice;
use crate::rule::Edge;
use crate::template::Template;
use sonde_archive::Store;
use sonde_http_client::ApiClient;
use sonde_incidents::{Mail, Mailer};
use std::collections::BTreeMap;

/// Sends notices. Holds the mailer, and a client per webhook.
pub struct Deliverer {
    mailer: Option<Mailer>,
    hooks: BTreeMap<String, (ApiClient, String)>,
}

/// `http://host:port/path?q` → (`http://host:port`, `/path?q`).
fn split_url(url: &str) -> (String, String) {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => (url[..after + i].to_string(), url[after + i..].to_string()),
        None => (url.to_string(), "/".to_string()),
    }
}

impl Deliverer {
    /// A deliverer for `rules`, with the mailer of `[smtp]` if any rule
    /// sends mail (the configuration check has made sure it is there).
    pub fn new(rules: &[Rule], mailer: Option<Mailer>) -> Result<Self, String> {
        let mut hooks = BTreeMap::new();
        for rule in rules {
            for d in &rule.deliveries {
                if let Delivery::Webhook { url, token } = d {
                    let (base, path) = split_url(url);
                    let client = ApiClient::new(&base, token.clone(), None)
                        .map_err(|e| format!("alert '{}': webhook: {e}", rule.name))?;
                    hooks.insert(url.clone(), (client, path));
                }
            }
        }
        Ok(Self { mailer, hooks })
    }

    /// Sends `notice` of `rule` everywhere the rule says; the incident it
    /// opened, if it opened one.
    pub fn deliver(&mut self, rule: &Rule, notice: &Notice, store: &mut Store) -> Option<i64> {
        let mut notice = notice.clone();
        let mut opened = None;
        // The incident first, so that the other deliveries can name it.
        for d in &rule.deliveries {
            if let Delivery::Incident { kind, severity } = d {
                match crate::incident::deliver(store, &notice, kind, severity.as_deref()) {
                    Ok(Some(id)) => {
                        notice.incident_id = Some(id);
                        opened = Some(id);
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(alert = %rule.name, error = %e, "alert: no incident"),
                }
            }
        }
        for d in &rule.deliveries {
            let outcome = match d {
                Delivery::Log => {
                    log(&notice);
                    Ok(())
                }
                Delivery::Webhook { url, .. } => self.webhook(url, &notice),
                Delivery::Email { to } => self.mail(rule, to, &notice),
                Delivery::Incident { .. } => Ok(()),
            };
            if let Err(why) = outcome {
                tracing::warn!(alert = %rule.name, edge = %notice.event.edge, error = %why, "alert: delivery failed");
            }
        }
        opened
    }

    fn webhook(&self, url: &str, notice: &Notice) -> Result<(), String> {
        let (client, path) = self.hooks.get(url).ok_or("no client for the webhook")?;
        let body = serde_json::to_vec(&notice.json()).map_err(|e| e.to_string())?;
        // One retry a second later: a webhook restarting is common.
        let mut last = String::new();
        for attempt in 0..2 {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
            match client.post_json(path, body.clone()) {
                Ok((status, _)) if status.is_success() => return Ok(()),
                Ok((status, answer)) => {
                    last = format!(
                        "{url}: {status} {}",
                        String::from_utf8_lossy(&answer)
                            .chars()
                            .take(200)
                            .collect::<String>()
                    );
                }
                Err(e) => last = format!("{url}: {e}"),
            }
        }
        Err(last)
    }

    fn mail(&self, rule: &Rule, to: &[String], notice: &Notice) -> Result<(), String> {
        let mailer = self.mailer.as_ref().ok_or("no [smtp] configured")?;
        let fields = notice.fields();
        let fill = |t: &Template| t.fill(&fields);
        let mail = Mail {
            to: to.to_vec(),
            subject: fill(&rule.mail.subject),
            body: fill(&rule.mail.body),
        };
        mailer.send(&mail).map_err(|e| e.to_string())
    }
}

fn log(n: &Notice) {
    let e = &n.event;
    let value = n.fields()["value"].clone();
    match n.edge {
        Edge::Raised => tracing::warn!(
            name: "alert_raised",
            alert = %e.rule, path = %e.label, value = %value, condition = %e.detail,
            "alert raised"
        ),
        Edge::Cleared => tracing::info!(
            name: "alert_cleared",
            alert = %e.rule, path = %e.label, value = %value, "alert cleared"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_base_and_path() {
        assert_eq!(
            split_url("http://[::1]:9000/hooks/a?x=1"),
            ("http://[::1]:9000".into(), "/hooks/a?x=1".into())
        );
        assert_eq!(
            split_url("https://example.net"),
            ("https://example.net".into(), "/".into())
        );
    }
}
