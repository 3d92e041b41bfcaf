//! The archive's mail templates (docs/incidents.md), and the record of a
//! mail sent: its history row and the state or status its template
//! sets, in one transaction. Sending is the incident desk's
//! (`sonde_alerts::incident_desk`): the archive keeps, it does not mail.

use crate::constituencies::{int, text};
use crate::incidents::{change_in, history};
use crate::sql::Value;
use crate::{ArchiveError, Store};
use sonde_incidents::{IncidentChange, IncidentError, MailTemplate};

impl Store {
    /// Keeps template `t` (replacing one of the same name).
    pub fn put_mail_template(&mut self, t: &MailTemplate, now_ns: i64) -> Result<(), ArchiveError> {
        t.validate()?;
        self.backend.transaction(&mut |tx| {
            tx.execute(
                "INSERT INTO mail_templates (name, subject, body, set_state, set_status, \
                 updated_ns) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO UPDATE SET \
                 subject = excluded.subject, body = excluded.body, \
                 set_state = excluded.set_state, set_status = excluded.set_status, \
                 updated_ns = excluded.updated_ns",
                &[
                    text(&t.name),
                    text(&t.subject),
                    text(&t.body),
                    Value::Text(t.set_state.clone()),
                    Value::Text(t.set_status.map(|s| s.to_string())),
                    int(now_ns),
                ],
            )?;
            Ok(())
        })
    }

    /// Every template, by name.
    pub fn mail_templates(&mut self) -> Result<Vec<MailTemplate>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT name, subject, body, set_state, set_status FROM mail_templates ORDER BY name",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let col = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
                MailTemplate {
                    name: col(0).unwrap_or_default(),
                    subject: col(1).unwrap_or_default(),
                    body: col(2).unwrap_or_default(),
                    set_state: col(3),
                    set_status: col(4).and_then(|s| s.parse().ok()),
                }
            })
            .collect())
    }

    /// Template `name`, or a refusal naming it.
    pub fn mail_template(&mut self, name: &str) -> Result<MailTemplate, ArchiveError> {
        self.mail_templates()?
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| {
                IncidentError::NotFound {
                    what: "mail template",
                    name: name.to_string(),
                }
                .into()
            })
    }

    /// Records that template `t` was mailed about incident `id` to `to`
    /// (a history row), and applies the state and status it sets.
    pub fn record_mail(
        &mut self,
        id: i64,
        t: &MailTemplate,
        to: &[String],
        actor: &str,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        let change = IncidentChange {
            state: t.set_state.clone(),
            status: t.set_status,
            severity: None,
        };
        let sent = format!("{} to {}", t.name, to.join(", "));
        self.backend.transaction(&mut |tx| {
            change_in(tx, id, &change, actor, now_ns)?;
            history(tx, id, now_ns, actor, "mail", None, Some(&sent))
        })
    }
}
