//! `[[alert]]`: an alert rule as written in the agent's configuration,
//! and the checked [`Rule`] it becomes. Every fault names the rule and
//! the key.
//!
//! ```toml
//! [[alert]]
//! name = "lossy"
//! metric = "loss_pct"
//! test = "ping"                  # which paths (all optional)
//! above = 1.0                    # or below = … (throughput, PDR)
//! for = 3                        # bad runs in a row that raise it
//! clear = 0.5                    # back past this…
//! clear_for = 3                  # …this many runs in a row clears it
//! # or: pattern = ">0%,*12*,>0%,*12*,>0%"
//! # or, on a probe's readings: metric = "reading", reading = "to_b.out_util",
//! # probe = "r1" (optional: any probe's reading of that name)
//! notify = ["log", "webhook", "email", "incident"]
//! webhook = "http://[::1]:9000/hooks/sonde"
//! email = ["noc@example.net"]
//! incident = "sla-breach"        # the type of the incident opened
//! severity = "high"
//! ```

pub use crate::alert_metric::AlertMetric;
use crate::pattern::Pattern;
pub use crate::reading_select::ReadingSelect;
use crate::rule::{Condition, Threshold, Worse};
use crate::template::{self, Template};
use serde::Deserialize;

/// Which paths a rule watches: every key given must equal the path's
/// (`source` and `target` match an end's address, or its name: the
/// campaign's endpoint name when the result has one, else the host).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    pub test: Option<String>,
    pub source: Option<String>,
    pub target: Option<String>,
    pub family: Option<String>,
    pub direction: Option<String>,
    pub campaign: Option<String>,
    pub step: Option<String>,
}

/// A path's identity, as the archive gives it (the fields a
/// [`Selector`] looks at). Its ends are identified by their addresses
/// where the result has them, and labelled by their names.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PathKey {
    pub test: String,
    /// The ends' names: the campaign's endpoint names, else the host
    /// that ran the test and the host it went to, as written.
    pub source: String,
    pub target: String,
    /// The ends' addresses (empty where the result does not say).
    pub source_addr: String,
    pub target_addr: String,
    pub family: String,
    pub direction: String,
    pub campaign: String,
    pub step: String,
}

impl PathKey {
    /// An end as people read it: its name, and its address beside it
    /// when that says more.
    fn end(name: &str, addr: &str) -> String {
        if addr.is_empty() || addr == name {
            name.to_string()
        } else if name.is_empty() {
            addr.to_string()
        } else {
            format!("{name} ({addr})")
        }
    }

    /// What identifies an end: its address, else its name.
    fn end_id<'s>(name: &'s str, addr: &'s str) -> &'s str {
        if addr.is_empty() {
            name
        } else {
            addr
        }
    }

    /// One line naming the path: `ping A (2001:db8::1) → B (2001:db8::2)
    /// (v6)`, with its direction and step when it has them.
    pub fn display(&self) -> String {
        if self.test == "reading" {
            return format!("reading {} of {}", self.target, self.source);
        }
        let mut s = format!(
            "{} {} → {}",
            self.test,
            Self::end(&self.source, &self.source_addr),
            Self::end(&self.target, &self.target_addr)
        );
        if !self.family.is_empty() {
            s.push_str(&format!(" ({})", self.family));
        }
        if !self.direction.is_empty() {
            s.push_str(&format!(" {}", self.direction));
        }
        if !self.step.is_empty() {
            s.push_str(&format!(" [{}]", self.step));
        }
        s
    }

    /// The key the archive keeps an alert's state under: every field,
    /// each end by its address where known, joined (`|` cannot be in a
    /// host name, an address or a test's name).
    pub fn key(&self) -> String {
        [
            self.test.as_str(),
            Self::end_id(&self.source, &self.source_addr),
            Self::end_id(&self.target, &self.target_addr),
            &self.family,
            &self.direction,
            &self.campaign,
            &self.step,
        ]
        .map(|s| s.replace('|', "/"))
        .join("|")
    }
}

/// Whether `written` (a rule's address, as users write it) is `addr`:
/// compared as addresses, so `2001:DB8::1` is `2001:db8::1`.
fn same_address(written: &str, addr: &str) -> bool {
    match (
        written.parse::<std::net::IpAddr>(),
        addr.parse::<std::net::IpAddr>(),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => written == addr,
    }
}

impl Selector {
    pub fn selects(&self, path: &PathKey) -> bool {
        let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        let end = |want: &Option<String>, name: &str, addr: &str| {
            want.as_deref()
                .is_none_or(|w| w == name || (!addr.is_empty() && same_address(w, addr)))
        };
        is(&self.test, &path.test)
            && end(&self.source, &path.source, &path.source_addr)
            && end(&self.target, &path.target, &path.target_addr)
            && is(&self.family, &path.family)
            && is(&self.direction, &path.direction)
            && is(&self.campaign, &path.campaign)
            && is(&self.step, &path.step)
    }
}

/// Where a notice goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyKind {
    Log,
    Webhook,
    Email,
    Incident,
}

/// `[[alert]]` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    pub name: String,
    pub metric: AlertMetric,
    /// Which paths: see [`Selector`] (not flattened: serde's flatten
    /// would let a misspelt key pass unnoticed).
    pub test: Option<String>,
    pub source: Option<String>,
    pub target: Option<String>,
    pub family: Option<String>,
    pub direction: Option<String>,
    pub campaign: Option<String>,
    pub step: Option<String>,
    /// With `metric = "reading"`: the readings' metric, and the probe
    /// (absent: every probe with a reading of that name).
    pub reading: Option<String>,
    pub probe: Option<String>,
    pub above: Option<f64>,
    pub below: Option<f64>,
    /// Bad runs in a row that raise it (default 1).
    #[serde(rename = "for")]
    pub raise_after: Option<usize>,
    /// The clear level (default: the raise level, no hysteresis).
    pub clear: Option<f64>,
    /// Good runs in a row that clear it (default: `for`).
    pub clear_for: Option<usize>,
    pub pattern: Option<String>,
    /// Default: `["log"]`.
    pub notify: Option<Vec<NotifyKind>>,
    pub webhook: Option<String>,
    /// A file holding a bearer token the webhook is sent with.
    pub webhook_token_file: Option<std::path::PathBuf>,
    #[serde(default)]
    pub email: Vec<String>,
    /// The type of the incident opened (default: `sla`).
    pub incident: Option<String>,
    /// The incident's severity (default: the incidents' default).
    pub severity: Option<String>,
    /// The mail's subject and body, with placeholders (docs/alerts.md).
    pub subject: Option<String>,
    pub body: Option<String>,
}

/// The subject and body of a rule's mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailTemplate {
    pub subject: Template,
    pub body: Template,
}

/// A delivery of a rule's notices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    Log,
    Webhook {
        url: String,
        token: String,
    },
    Email {
        to: Vec<String>,
    },
    Incident {
        kind: String,
        severity: Option<String>,
    },
}

/// A checked rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    pub metric: AlertMetric,
    pub select: Selector,
    /// With `metric = "reading"`: which readings.
    pub reading: Option<ReadingSelect>,
    pub condition: Condition,
    pub deliveries: Vec<Delivery>,
    pub mail: MailTemplate,
}

/// Why a rule cannot be used: the rule, the key, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("alert '{rule}': {key}: {why}")]
pub struct ConfigError {
    pub rule: String,
    pub key: &'static str,
    pub why: String,
}

impl RuleConfig {
    /// The rule this describes, checked.
    pub fn rule(&self) -> Result<Rule, ConfigError> {
        let fail = |key: &'static str, why: String| ConfigError {
            rule: self.name.clone(),
            key,
            why,
        };
        if self.name.is_empty() || self.name.len() > 64 || self.name.contains(['|', '\n']) {
            return Err(fail("name", "1 to 64 characters, no '|'".into()));
        }
        let condition = match (&self.pattern, self.above, self.below) {
            (Some(p), None, None) => {
                if self.raise_after.is_some() || self.clear.is_some() || self.clear_for.is_some() {
                    return Err(fail(
                        "pattern",
                        "a pattern takes no for, clear or clear_for".into(),
                    ));
                }
                let quantity = self.metric.quantity().ok_or_else(|| {
                    fail(
                        "pattern",
                        format!("patterns compare % or ms, not {}", self.metric.name()),
                    )
                })?;
                Condition::Pattern(
                    Pattern::parse(p, quantity).map_err(|e| fail("pattern", e.to_string()))?,
                )
            }
            (None, Some(level), None) | (None, None, Some(level)) => {
                let worse = if self.above.is_some() {
                    Worse::Above
                } else {
                    Worse::Below
                };
                // A reading is bad whichever way its rule says.
                if self.metric != AlertMetric::Reading && worse != self.metric.worse() {
                    let (key, way) = match worse {
                        Worse::Above => ("above", "below"),
                        Worse::Below => ("below", "above"),
                    };
                    return Err(fail(
                        key,
                        format!("{} is bad {way} its level", self.metric.name()),
                    ));
                }
                let raise_after = self.raise_after.unwrap_or(1);
                let t = Threshold {
                    worse,
                    raise: level,
                    raise_after,
                    clear: self.clear.unwrap_or(level),
                    clear_after: self.clear_for.unwrap_or(raise_after),
                };
                t.check().map_err(|e| fail("clear", e.0))?;
                Condition::Threshold(t)
            }
            // A route change needs no level: a trace on another route is 1.
            (None, None, None) if self.metric == AlertMetric::PathChanged => {
                let raise_after = self.raise_after.unwrap_or(1);
                Condition::Threshold(Threshold {
                    worse: Worse::Above,
                    raise: 0.5,
                    raise_after,
                    clear: 0.5,
                    clear_after: self.clear_for.unwrap_or(raise_after),
                })
            }
            (None, None, None) => {
                return Err(fail("above", "give above, below or pattern".into()));
            }
            _ => {
                return Err(fail(
                    "pattern",
                    "above, below and pattern exclude each other".into(),
                ));
            }
        };
        let kinds = self.notify.clone().unwrap_or_else(|| vec![NotifyKind::Log]);
        // A delivery's keys without the delivery in `notify` would be
        // ignored without a word (the default is the log alone).
        let given: [(&'static str, bool, NotifyKind); 5] = [
            ("webhook", self.webhook.is_some(), NotifyKind::Webhook),
            (
                "webhook_token_file",
                self.webhook_token_file.is_some(),
                NotifyKind::Webhook,
            ),
            ("email", !self.email.is_empty(), NotifyKind::Email),
            ("incident", self.incident.is_some(), NotifyKind::Incident),
            ("severity", self.severity.is_some(), NotifyKind::Incident),
        ];
        for (key, set, kind) in given {
            if set && !kinds.contains(&kind) {
                let name = serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                return Err(fail(
                    key,
                    format!("given, but notify does not list {name}: add it to notify, or leave {key} out"),
                ));
            }
        }
        let mut deliveries = Vec::new();
        for kind in kinds {
            deliveries.push(match kind {
                NotifyKind::Log => Delivery::Log,
                NotifyKind::Webhook => {
                    let url = self.webhook.clone().ok_or_else(|| {
                        fail("webhook", "notify has webhook: give its URL".into())
                    })?;
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(fail("webhook", format!("'{url}' is not an http(s) URL")));
                    }
                    let token = match &self.webhook_token_file {
                        Some(path) => std::fs::read_to_string(path)
                            .map_err(|e| {
                                fail(
                                    "webhook_token_file",
                                    format!("cannot read {}: {e}", path.display()),
                                )
                            })?
                            .trim()
                            .to_string(),
                        None => String::new(),
                    };
                    Delivery::Webhook { url, token }
                }
                NotifyKind::Email => {
                    if self.email.is_empty() {
                        return Err(fail("email", "notify has email: give addresses".into()));
                    }
                    Delivery::Email {
                        to: self.email.clone(),
                    }
                }
                NotifyKind::Incident => {
                    let kind = self.incident.clone().unwrap_or_else(|| "sla".into());
                    sonde_incidents::model::check_kind("incident", &kind)
                        .map_err(|e| fail("incident", e.to_string()))?;
                    if let Some(s) = &self.severity {
                        s.parse::<sonde_incidents::Severity>()
                            .map_err(|e| fail("severity", e.to_string()))?;
                    }
                    Delivery::Incident {
                        kind,
                        severity: self.severity.clone(),
                    }
                }
            });
        }
        let template = |key: &'static str, text: &Option<String>, default: &str| {
            Template::parse(text.as_deref().unwrap_or(default)).map_err(|e| fail(key, e))
        };
        let mail = MailTemplate {
            subject: template("subject", &self.subject, template::DEFAULT_SUBJECT)?,
            body: template("body", &self.body, template::DEFAULT_BODY)?,
        };
        Ok(Rule {
            mail,
            name: self.name.clone(),
            metric: self.metric,
            select: self.selector().map_err(|(key, why)| fail(key, why))?,
            reading: self.reading_select().map_err(|(key, why)| fail(key, why))?,
            condition,
            deliveries,
        })
    }
}

/// The family a rule names, as the archive keeps it: `v6` or `v4`, also
/// written `ipv6`, `IPv6`, `6` (and the same for IPv4).
fn family_named(f: &str) -> Option<&'static str> {
    match f.to_ascii_lowercase().as_str() {
        "v6" | "ipv6" | "6" | "inet6" => Some("v6"),
        "v4" | "ipv4" | "4" | "inet" => Some("v4"),
        _ => None,
    }
}

impl RuleConfig {
    /// The paths the rule selects, each key's value checked against what
    /// a path can hold (a value no path has would select nothing, without
    /// a word): `(key, what is wrong)` otherwise.
    fn selector(&self) -> Result<Selector, (&'static str, String)> {
        let one_of = |key: &'static str, v: &Option<String>, allowed: &[&str]| match v {
            Some(v) if !allowed.contains(&v.as_str()) => {
                Err((key, format!("'{v}' is not one of {}", allowed.join(", "))))
            }
            _ => Ok(()),
        };
        one_of("test", &self.test, &sonde_model::TestKind::NAMES)?;
        one_of(
            "direction",
            &self.direction,
            &["forward", "reverse", "bidir"],
        )?;
        if let (Some(t @ ("ping" | "http")), Some(_)) = (self.test.as_deref(), &self.direction) {
            return Err((
                "direction",
                format!(
                    "a {t} has no direction: its results would never match; leave direction out"
                ),
            ));
        }
        let family = match &self.family {
            None => None,
            Some(f) => Some(
                family_named(f)
                    .ok_or((
                        "family",
                        format!(
                            "'{f}' is not one of v6, v4 (ipv6, ipv4, 6 and 4 are read as those)"
                        ),
                    ))?
                    .to_string(),
            ),
        };
        Ok(Selector {
            test: self.test.clone(),
            source: self.source.clone(),
            target: self.target.clone(),
            family,
            direction: self.direction.clone(),
            campaign: self.campaign.clone(),
            step: self.step.clone(),
        })
    }
}

impl Rule {
    /// How many of a path's latest samples the rule needs.
    pub fn keep(&self) -> usize {
        match &self.condition {
            Condition::Pattern(p) => p.span().max(1),
            Condition::Threshold(_) => 1,
        }
    }

    /// The condition in words: `loss_pct > 1 for 3 runs, clears < 0.5
    /// for 3`, or the pattern.
    pub fn describe(&self) -> String {
        match &self.condition {
            Condition::Pattern(p) => format!("{} matches {p}", self.metric.name()),
            Condition::Threshold(t) => {
                let (bad, good) = match t.worse {
                    Worse::Above => (">", "<"),
                    Worse::Below => ("<", ">"),
                };
                format!(
                    "{} {bad} {} for {} run(s), clears {good} {} for {}",
                    self.metric.name(),
                    t.raise,
                    t.raise_after,
                    t.clear,
                    t.clear_after
                )
            }
        }
    }
}

/// Checks every rule of a configuration, and that no two share a name.
pub fn rules(configs: &[RuleConfig]) -> Result<Vec<Rule>, ConfigError> {
    let mut out: Vec<Rule> = Vec::new();
    for c in configs {
        let rule = c.rule()?;
        if out.iter().any(|r| r.name == rule.name) {
            return Err(ConfigError {
                rule: rule.name,
                key: "name",
                why: "two alerts have this name".into(),
            });
        }
        out.push(rule);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
