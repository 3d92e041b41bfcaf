//! The incident desk: what is done to an incident beyond keeping it, for
//! the command line (`sonde incident import`, `mail`) and the HTTP API
//! alike. The
//! archive keeps incidents, owners, templates and their history; mailing
//! the owners is here.

use sonde_archive::{ArchiveError, Store};
use sonde_incidents::{IncidentError, MailError, MailTemplate, Mailer, Report};

/// Why a template could not be mailed about an incident.
#[derive(Debug, thiserror::Error)]
pub enum MailIncidentError {
    /// The archive failed, or the incident or template does not exist.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// There is nobody to write to.
    #[error("{0}")]
    Compose(IncidentError),
    /// The mail server failed after `sent` mails went (they are
    /// recorded, without the template's change of state).
    #[error("{error} (mailed before it: {sent})")]
    Send { error: MailError, sent: usize },
}

/// Fills template `name` for incident `id`, sends it through `mailer`
/// to each owner's contacts (those of `role` only, if given), and
/// records it, the incident taking the template's state and status:
/// the one place a template is mailed, for the API and the command
/// line. Returns each constituency written to, with its addresses.
pub fn mail_incident(
    store: &mut Store,
    id: i64,
    name: &str,
    role: Option<&str>,
    mailer: &Mailer,
    actor: &str,
    now_ns: i64,
) -> Result<Vec<(String, Vec<String>)>, MailIncidentError> {
    let incident = store.incident(id)?.ok_or_else(|| {
        ArchiveError::Incident(IncidentError::NotFound {
            what: "incident",
            name: id.to_string(),
        })
    })?;
    let template = store.mail_template(name)?;
    let mails = sonde_incidents::compose(&template, &incident, &store.constituencies()?, role)
        .map_err(MailIncidentError::Compose)?;
    let mut sent: Vec<(String, Vec<String>)> = Vec::new();
    let to_of = |sent: &[(String, Vec<String>)]| -> Vec<String> {
        sent.iter().flat_map(|(_, to)| to.clone()).collect()
    };
    for (code, m) in mails {
        if let Err(error) = mailer.send(&m) {
            // What went out is recorded (a retry then knows), without
            // the template's change of state: not everyone was told.
            if !sent.is_empty() {
                let partial = MailTemplate {
                    set_state: None,
                    set_status: None,
                    ..template.clone()
                };
                store.record_mail(id, &partial, &to_of(&sent), actor, now_ns)?;
            }
            return Err(MailIncidentError::Send {
                error,
                sent: sent.len(),
            });
        }
        sent.push((code, m.to));
    }
    store.record_mail(id, &template, &to_of(&sent), actor, now_ns)?;
    Ok(sent)
}

/// Whom a report's first comment is recorded as.
#[derive(Debug, Clone, Copy)]
pub enum CommentBy<'a> {
    /// The reporter the report names; without one, this name (the
    /// command line's user).
    Reporter(&'a str),
    /// This caller (the API's token): whom the report names as its
    /// reporter becomes part of what the comment says.
    Caller(&'a str),
}

/// Opens an incident for each report (`sonde incident import`, the
/// API's `POST /incidents` and its import), with the report's
/// description and time as its first comment; the ids opened, in order.
/// `source` replaces the reports' own (`import`) where given.
pub fn open_reports(
    store: &mut Store,
    reports: Vec<Report>,
    source: Option<&str>,
    by: CommentBy<'_>,
    now_ns: impl Fn() -> i64,
) -> Result<Vec<i64>, ArchiveError> {
    let mut ids = Vec::with_capacity(reports.len());
    for mut r in reports {
        if let Some(source) = source {
            r.incident.source = source.to_string();
        }
        let now = now_ns();
        let id = store.open_incident(&r.incident, now)?;
        if let Some(text) = r.comment() {
            let (who, text) = match (by, &r.reporter) {
                (CommentBy::Reporter(_), Some(reporter)) => (reporter.clone(), text),
                (CommentBy::Reporter(user), None) => (user.to_string(), text),
                (CommentBy::Caller(caller), Some(reporter)) => (
                    caller.to_string(),
                    format!("reported by {reporter}; {text}"),
                ),
                (CommentBy::Caller(caller), None) => (caller.to_string(), text),
            };
            store.comment_incident(id, &who, &text, now)?;
        }
        ids.push(id);
    }
    Ok(ids)
}
