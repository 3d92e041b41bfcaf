//! `sonde incident`: constituencies with their networks and contacts,
//! who owns an address, incidents (open, list, show, set, comment,
//! import) and mail templates (add, list, mail) in the archive
//! (docs/incidents.md). Bad input exits 2 naming what is wrong.

use crate::archive_args::ArchiveArgs;
use crate::failure::Failure;
use crate::incident_text::{constituencies_text, line, show};
use anyhow::anyhow;
use clap::{Args, Subcommand};
use sonde_alerts::MailIncidentError;
use sonde_archive::{ArchiveError, IncidentFilter, Store};
use sonde_incidents::{
    Constituency, Contact, IncidentChange, IncidentError, IpNet, MailTemplate, Mailer, NewIncident,
    Role, Severity, SmtpConfig, Status,
};
use sonde_model::clock::now_ns;
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct IncidentArgs {
    #[command(flatten)]
    pub archive: ArchiveArgs,
    /// JSON output.
    #[arg(short = 'J', long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: IncidentCommand,
}

#[derive(Debug, Subcommand)]
pub enum IncidentCommand {
    /// Constituencies: add one, or list them with networks and contacts.
    #[command(subcommand)]
    Constituency(ConstituencyCommand),
    /// Give a constituency a network (an IPv6 or IPv4 prefix).
    #[command(subcommand)]
    Network(NetworkCommand),
    /// Add a constituency's contact (or update it, by its address).
    #[command(subcommand)]
    Contact(ContactCommand),
    /// Which constituency owns an address (the longest matching prefix).
    Owner { address: String },
    /// Incidents, newest first.
    List {
        /// Only this status: open, stalled or closed.
        #[arg(long)]
        status: Option<String>,
        /// Only those with an address this constituency owns.
        #[arg(long, value_name = "CODE")]
        owner: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One incident with its addresses, owners, comments and history.
    Show { id: i64 },
    /// Open an incident.
    Open(OpenArgs),
    /// Change an incident's state, status or severity.
    Set {
        id: i64,
        /// A state word: reported, confirmed, notified, resolved…
        #[arg(long)]
        state: Option<String>,
        /// open, stalled or closed.
        #[arg(long)]
        status: Option<String>,
        /// low, medium, high or critical.
        #[arg(long)]
        severity: Option<String>,
    },
    /// Comment on an incident.
    Comment {
        id: i64,
        text: String,
        /// Who writes it ($USER when absent).
        #[arg(long)]
        author: Option<String>,
    },
    /// Mail templates: add (or replace) one, or list them.
    #[command(subcommand)]
    Template(TemplateCommand),
    /// Mail a template about an incident to its owners' contacts; the
    /// incident takes the state and status the template sets.
    Mail(MailArgs),
    /// Open incidents from a JSON report file (one report or an array;
    /// `-`: standard input).
    Import { file: PathBuf },
}

#[derive(Debug, Subcommand)]
pub enum ConstituencyCommand {
    Add {
        code: String,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "")]
        notes: String,
        /// A network it owns (repeatable).
        #[arg(long = "network", value_name = "PREFIX")]
        networks: Vec<String>,
    },
    List,
    /// Change its name or notes.
    Set {
        code: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        notes: Option<String>,
    },
    /// Remove it with its networks and contacts (incidents keep its code
    /// as the owner they had).
    Remove {
        code: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum NetworkCommand {
    Add {
        code: String,
        prefix: String,
    },
    /// Take a network from a constituency.
    Remove {
        code: String,
        prefix: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ContactCommand {
    Add {
        code: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        email: String,
        /// abuse, noc, security… (a mail may go to one role only).
        #[arg(long, default_value = "abuse")]
        role: String,
    },
    /// Remove a contact, by its address.
    Remove { code: String, email: String },
}

#[derive(Debug, Args)]
pub struct OpenArgs {
    /// Its type (loss-high, scan, ddos…).
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: String,
    #[arg(long)]
    pub summary: String,
    /// low, medium, high or critical.
    #[arg(long, default_value = "medium")]
    pub severity: String,
    /// An address the traffic came from (repeatable).
    #[arg(long = "source", value_name = "ADDRESS")]
    pub sources: Vec<String>,
    /// An address the traffic went to (repeatable).
    #[arg(long = "target", value_name = "ADDRESS")]
    pub targets: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum TemplateCommand {
    Add {
        name: String,
        #[arg(long)]
        subject: String,
        /// The body's text, or `@FILE` to read it from a file.
        #[arg(long)]
        body: String,
        /// The state the incident takes once the mail is sent.
        #[arg(long)]
        set_state: Option<String>,
        /// The status the incident takes once the mail is sent.
        #[arg(long)]
        set_status: Option<String>,
    },
    List,
}

#[derive(Debug, Args)]
pub struct MailArgs {
    pub id: i64,
    pub template: String,
    /// Only the contacts of this role.
    #[arg(long)]
    pub role: Option<String>,
    /// The SMTP server, HOST[:PORT] (else `[smtp]` of --config).
    #[arg(
        long,
        value_name = "HOST:PORT",
        requires = "from",
        conflicts_with = "config"
    )]
    pub smtp: Option<String>,
    /// The sender, with --smtp.
    #[arg(long, value_name = "ADDRESS", requires = "smtp")]
    pub from: Option<String>,
    /// A server configuration whose `[smtp]` says where mail goes.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// An archive error as a failure: a refusal is the user's (exit 2).
fn fail(e: ArchiveError) -> Failure {
    match e {
        ArchiveError::Incident(e) => Failure::Usage(anyhow!(e)),
        e => Failure::Run(anyhow!(e)),
    }
}

fn usage(e: IncidentError) -> Failure {
    Failure::Usage(anyhow!(e))
}

fn address(field: &str, a: &str) -> Result<IpAddr, Failure> {
    a.parse()
        .map_err(|_| Failure::Usage(anyhow!("{field}: '{a}' is not an IPv6 or IPv4 address")))
}

fn prefix(p: &str) -> Result<IpNet, Failure> {
    p.parse().map_err(|_| {
        Failure::Usage(anyhow!(
            "'{p}' is not an IPv6 or IPv4 prefix (2001:db8::/32)"
        ))
    })
}

fn word<T: std::str::FromStr<Err = IncidentError>>(v: Option<&str>) -> Result<Option<T>, Failure> {
    v.map(str::parse).transpose().map_err(usage)
}

fn user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "cli".into())
}

pub fn run(args: IncidentArgs) -> Result<(), Failure> {
    let mut store = crate::results_cmd::open(&args.archive)?;
    let mut out = std::io::stdout();
    let json = args.json;
    let mut print = |text: String, value: serde_json::Value| -> Result<(), Failure> {
        if json {
            writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        } else if !text.is_empty() {
            write!(out, "{text}")?;
        }
        Ok(())
    };
    match args.command {
        IncidentCommand::Constituency(ConstituencyCommand::Add {
            code,
            name,
            notes,
            networks,
        }) => {
            let c = Constituency {
                networks: networks
                    .iter()
                    .map(|p| prefix(p))
                    .collect::<Result<_, _>>()?,
                code,
                name,
                notes,
                contacts: vec![],
            };
            store.add_constituency(&c, now_ns()).map_err(fail)?;
            print(
                format!("constituency {} added\n", c.code),
                serde_json::json!({"code": c.code}),
            )
        }
        IncidentCommand::Constituency(ConstituencyCommand::List) => {
            let list = store.constituencies().map_err(fail)?;
            print(constituencies_text(&list), serde_json::to_value(&list)?)
        }
        IncidentCommand::Network(NetworkCommand::Add { code, prefix: p }) => {
            let net = prefix(&p)?;
            store.add_network(&code, net, now_ns()).map_err(fail)?;
            print(
                format!("{} owned by {code}\n", net.trunc()),
                serde_json::json!({"code": code, "prefix": net.trunc().to_string()}),
            )
        }
        IncidentCommand::Contact(ContactCommand::Add {
            code,
            name,
            email,
            role,
        }) => {
            let c = Contact { name, email, role };
            store.add_contact(&code, &c, now_ns()).map_err(fail)?;
            print(
                format!("contact {} of {code} added\n", c.email),
                serde_json::json!({"code": code, "email": c.email}),
            )
        }
        IncidentCommand::Constituency(ConstituencyCommand::Set { code, name, notes }) => {
            if name.is_none() && notes.is_none() {
                return Err(Failure::Usage(anyhow!(
                    "constituency set {code}: nothing to change: give --name or --notes"
                )));
            }
            store
                .set_constituency(&code, name.as_deref(), notes.as_deref())
                .map_err(fail)?;
            print(
                format!("constituency {code} changed\n"),
                serde_json::json!({"code": code}),
            )
        }
        IncidentCommand::Constituency(ConstituencyCommand::Remove { code }) => {
            store.remove_constituency(&code).map_err(fail)?;
            print(
                format!("constituency {code} removed\n"),
                serde_json::json!({"code": code, "removed": true}),
            )
        }
        IncidentCommand::Network(NetworkCommand::Remove { code, prefix: p }) => {
            let net = prefix(&p)?;
            store.remove_network(&code, net).map_err(fail)?;
            print(
                format!("{} no longer owned by {code}\n", net.trunc()),
                serde_json::json!({"code": code, "prefix": net.trunc().to_string(), "removed": true}),
            )
        }
        IncidentCommand::Contact(ContactCommand::Remove { code, email }) => {
            store.remove_contact(&code, &email).map_err(fail)?;
            print(
                format!("contact {email} of {code} removed\n"),
                serde_json::json!({"code": code, "email": email, "removed": true}),
            )
        }
        IncidentCommand::Owner { address: a } => {
            let addr = address("address", &a)?;
            let found = store.owner_of(addr).map_err(fail)?;
            match found {
                Some((c, net)) => print(
                    format!("{addr}: {} ({}) by {net}\n", c.code, c.name),
                    serde_json::json!({"address": addr.to_string(), "owner": {"code": c.code, "name": c.name}, "prefix": net.to_string()}),
                ),
                None => print(
                    format!("{addr}: no constituency owns it\n"),
                    serde_json::json!({"address": addr.to_string(), "owner": null, "prefix": null}),
                ),
            }
        }
        IncidentCommand::List {
            status,
            owner,
            limit,
        } => {
            let filter = IncidentFilter {
                status: word::<Status>(status.as_deref())?,
                owner,
                limit: Some(limit.max(1)),
            };
            let list = store.incidents(&filter).map_err(fail)?;
            let text: String = list.iter().map(|i| format!("{}\n", line(i))).collect();
            print(text, serde_json::to_value(&list)?)
        }
        IncidentCommand::Show { id } => {
            let i = store
                .incident(id)
                .map_err(fail)?
                .ok_or_else(|| Failure::Usage(anyhow!("incident {id} does not exist")))?;
            print(show(&i), serde_json::to_value(&i)?)
        }
        IncidentCommand::Open(o) => {
            let mut addresses = Vec::new();
            for a in &o.sources {
                addresses.push((address("--source", a)?, Role::Source));
            }
            for a in &o.targets {
                addresses.push((address("--target", a)?, Role::Target));
            }
            let new = NewIncident {
                kind: o.kind,
                severity: o.severity.parse::<Severity>().map_err(usage)?,
                summary: o.summary,
                addresses,
                source: "cli".into(),
            };
            let id = store.open_incident(&new, now_ns()).map_err(fail)?;
            print(
                format!("incident {id} opened\n"),
                serde_json::json!({"id": id}),
            )
        }
        IncidentCommand::Set {
            id,
            state,
            status,
            severity,
        } => {
            let change = IncidentChange {
                state,
                status: word(status.as_deref())?,
                severity: word(severity.as_deref())?,
            };
            store
                .change_incident(id, &change, &user(), now_ns())
                .map_err(fail)?;
            let i = store.incident(id).map_err(fail)?;
            print(
                i.as_ref()
                    .map(line)
                    .map(|l| format!("{l}\n"))
                    .unwrap_or_default(),
                serde_json::to_value(&i)?,
            )
        }
        IncidentCommand::Comment { id, text, author } => {
            store
                .comment_incident(id, &author.unwrap_or_else(user), &text, now_ns())
                .map_err(fail)?;
            print(
                format!("comment added to incident {id}\n"),
                serde_json::json!({"incident": id}),
            )
        }
        IncidentCommand::Template(TemplateCommand::Add {
            name,
            subject,
            body,
            set_state,
            set_status,
        }) => {
            let body = match body.strip_prefix('@') {
                Some(file) => std::fs::read_to_string(file)
                    .map_err(|e| Failure::Usage(anyhow!("--body @{file}: {e}")))?,
                None => body,
            };
            let t = MailTemplate {
                name,
                subject,
                body,
                set_state,
                set_status: word(set_status.as_deref())?,
            };
            store.put_mail_template(&t, now_ns()).map_err(fail)?;
            print(
                format!("template {} kept\n", t.name),
                serde_json::json!({"name": t.name}),
            )
        }
        IncidentCommand::Template(TemplateCommand::List) => {
            let list = store.mail_templates().map_err(fail)?;
            let text: String = list
                .iter()
                .map(|t| format!("{:<20} {}\n", t.name, t.subject))
                .collect();
            print(text, serde_json::to_value(&list)?)
        }
        IncidentCommand::Mail(m) => {
            let sent = mail(&mut store, &m)?;
            let text: String = sent
                .iter()
                .map(|(code, to)| format!("mailed {code}: {}\n", to.join(", ")))
                .collect();
            let value = serde_json::json!({"sent": sent.iter().map(|(c, to)| serde_json::json!({"constituency": c, "to": to})).collect::<Vec<_>>()});
            print(text, value)
        }
        IncidentCommand::Import { file } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| Failure::Usage(anyhow!("{}: {e}", file.display())))?
            };
            let reports = sonde_incidents::parse_reports(&text)
                .map_err(|e| Failure::Usage(anyhow!("{}: {e}", file.display())))?;
            let user = user();
            let ids = sonde_alerts::open_reports(
                &mut store,
                reports,
                None,
                sonde_alerts::CommentBy::Reporter(&user),
                now_ns,
            )
            .map_err(fail)?;
            let text: String = ids
                .iter()
                .map(|id| format!("incident {id} opened\n"))
                .collect();
            print(text, serde_json::json!({"ids": ids}))
        }
    }
}

/// Sends the template, then records it; the constituencies written to.
fn mail(store: &mut Store, m: &MailArgs) -> Result<Vec<(String, Vec<String>)>, Failure> {
    let smtp = match (&m.smtp, &m.from, &m.config) {
        (Some(server), Some(from), _) => SmtpConfig {
            server: server.clone(),
            from: from.clone(),
            tls: Default::default(),
            username: None,
            password_file: None,
        },
        (_, _, Some(path)) => sonde_agent::AgentConfig::from_file(path)
            .map_err(|e| Failure::Usage(anyhow!(e)))?
            .smtp
            .ok_or_else(|| Failure::Usage(anyhow!("{}: no [smtp] section", path.display())))?,
        _ => {
            return Err(Failure::Usage(anyhow!(
                "where does mail go? give --smtp HOST:PORT --from ADDRESS, or --config FILE with [smtp]"
            )))
        }
    };
    let mailer = Mailer::new(&smtp).map_err(|e| Failure::Usage(anyhow!(e)))?;
    sonde_alerts::mail_incident(
        store,
        m.id,
        &m.template,
        m.role.as_deref(),
        &mailer,
        &user(),
        now_ns(),
    )
    .map_err(|e| match e {
        MailIncidentError::Archive(e) => fail(e),
        MailIncidentError::Compose(e) => usage(e),
        e @ MailIncidentError::Send { .. } => Failure::Run(anyhow!(e)),
    })
}
