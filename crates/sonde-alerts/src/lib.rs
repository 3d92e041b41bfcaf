//! Alerts on a path's archived metrics (issue 20; docs/alerts.md):
//! SmokePing's alert patterns ([`pattern`]) and threshold rules with
//! hysteresis ([`rule`]), written as `[[alert]]` ([`config`]), evaluated
//! as results arrive in the archive ([`evaluate`]), and delivered to the
//! log, webhooks, mail and incidents ([`deliver`]). The incident desk
//! ([`incident_desk`]) opens incidents from reports and mails their
//! owners, for the command line and the API alike.

mod alert_metric;
pub mod config;
pub mod deliver;
pub mod evaluate;
mod incident;
pub mod incident_desk;
mod notice;
pub mod pattern;
mod reading_select;
pub mod rule;
pub mod template;

pub use config::{
    rules, AlertMetric, ConfigError, Delivery, MailTemplate, NotifyKind, PathKey, Rule, RuleConfig,
    Selector,
};
pub use deliver::Deliverer;
pub use evaluate::{start, AlertsError, Evaluator, QUEUE};
pub use incident_desk::{mail_incident, open_reports, CommentBy, MailIncidentError};
pub use notice::Notice;
pub use pattern::{Pattern, PatternError, Quantity};
pub use rule::{AlertState, Condition, Edge, RuleError, Threshold, Worse};
