//! Incidents addressed to whoever owns a failing network (issue 20; AIRT's
//! model, seed 003 §4.2). So far: constituencies and the networks each
//! owns, and the owner of an address by the longest matching prefix
//! ([`owners`]).

pub mod mail;
pub mod owners;

pub use mail::{Mail, MailError, Mailer, SmtpConfig, SmtpTls};
pub use owners::{Constituency, Owners, OwnersError};
