//! Incidents addressed to whoever owns a failing network (issue 20; AIRT's
//! model, seed 003 §4.2): constituencies, the networks each owns and
//! their contacts, and the owner of an address by the longest matching
//! prefix ([`owners`]); incidents with their state, status, severity,
//! addresses, comments and history ([`model`]); mail templates with
//! placeholders ([`template`]) sent through `[smtp]` ([`mail`]); reports
//! imported as JSON ([`import`]). Storage is the archive's
//! (sonde-archive); this crate does no I/O but sending mail.

pub mod import;
pub mod mail;
pub mod model;
pub mod owners;
pub mod template;

pub use import::{parse_reports, Report};
pub use ipnet::IpNet;
pub use mail::{Mail, MailError, Mailer, SmtpConfig, SmtpTls};
pub use model::{
    check_state, Comment, HistoryEntry, Incident, IncidentAddress, IncidentChange, IncidentError,
    NewIncident, Role, Severity, Status, INITIAL_STATE,
};
pub use owners::{check_code, Constituency, Contact, Owners, OwnersError};
pub use template::{compose, parse_placeholders, MailTemplate, Piece, PLACEHOLDERS};
