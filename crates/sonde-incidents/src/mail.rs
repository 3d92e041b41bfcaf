//! Mail through an SMTP server (`[smtp]`): alert notices and incident
//! mail templates go out the same way. lettre speaks SMTP; this module
//! only turns sonde's settings into its transport and a message.

use lettre::message::{header::ContentType, Mailbox};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{Message, SmtpTransport, Transport};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// `[smtp]`: where mail goes and who it is from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    /// The server, `HOST` or `HOST:PORT` (port 25 when absent).
    pub server: String,
    /// The sender, `Name <address>` or an address.
    pub from: String,
    /// `none` (plain SMTP, a local relay), `starttls` (upgrade, required)
    /// or `tls` (implicit TLS, port 465).
    #[serde(default)]
    pub tls: SmtpTls,
    /// A user name, and a file holding its password (one line).
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmtpTls {
    #[default]
    None,
    Starttls,
    Tls,
}

/// Why mail could not be sent, or the settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("smtp.{key}: {reason}")]
    Config { key: &'static str, reason: String },
    #[error("address '{address}': {reason}")]
    Address { address: String, reason: String },
    #[error("mail to {to} through {server}: {reason}")]
    Send {
        to: String,
        server: String,
        reason: String,
    },
}

/// One mail: to whom, its subject and its plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub to: Vec<String>,
    pub subject: String,
    pub body: String,
}

/// A connection-less sender: each [`Mailer::send`] opens a session.
#[derive(Clone)]
pub struct Mailer {
    transport: SmtpTransport,
    from: Mailbox,
    server: String,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mailer({} from {})", self.server, self.from)
    }
}

impl Mailer {
    pub fn new(config: &SmtpConfig) -> Result<Self, MailError> {
        let (host, port) = split_server(&config.server)?;
        let from = parse_mailbox(&config.from)?;
        let tls = |port_default: u16| -> Result<(Tls, u16), MailError> {
            let params = TlsParameters::new(host.clone()).map_err(|e| MailError::Config {
                key: "tls",
                reason: e.to_string(),
            })?;
            Ok((
                match config.tls {
                    SmtpTls::Starttls => Tls::Required(params),
                    _ => Tls::Wrapper(params),
                },
                port.unwrap_or(port_default),
            ))
        };
        let (tls, port) = match config.tls {
            SmtpTls::None => (Tls::None, port.unwrap_or(25)),
            SmtpTls::Starttls => tls(587)?,
            SmtpTls::Tls => tls(465)?,
        };
        let mut builder = SmtpTransport::builder_dangerous(host)
            .port(port)
            .tls(tls)
            .timeout(Some(Duration::from_secs(10)));
        if let Some(user) = &config.username {
            let Some(file) = &config.password_file else {
                return Err(MailError::Config {
                    key: "password_file",
                    reason: "a username needs a password_file".into(),
                });
            };
            let password = std::fs::read_to_string(file).map_err(|e| MailError::Config {
                key: "password_file",
                reason: format!("cannot read {}: {e}", file.display()),
            })?;
            builder = builder.credentials(Credentials::new(
                user.clone(),
                password.trim_end().to_string(),
            ));
        }
        Ok(Self {
            transport: builder.build(),
            from,
            server: config.server.clone(),
        })
    }

    /// Sends `mail` (blocking; up to 10 s per step of the session).
    pub fn send(&self, mail: &Mail) -> Result<(), MailError> {
        let to = mail.to.join(", ");
        let mut message = Message::builder()
            .from(self.from.clone())
            .subject(mail.subject.clone());
        for address in &mail.to {
            message = message.to(parse_mailbox(address)?);
        }
        let message = message
            .header(ContentType::TEXT_PLAIN)
            .body(mail.body.clone())
            .map_err(|e| MailError::Send {
                to: to.clone(),
                server: self.server.clone(),
                reason: e.to_string(),
            })?;
        self.transport
            .send(&message)
            .map(|_| ())
            .map_err(|e| MailError::Send {
                to,
                server: self.server.clone(),
                reason: e.to_string(),
            })
    }
}

fn parse_mailbox(address: &str) -> Result<Mailbox, MailError> {
    address
        .parse()
        .map_err(|e: lettre::address::AddressError| MailError::Address {
            address: address.into(),
            reason: e.to_string(),
        })
}

/// `HOST` or `HOST:PORT` (`[V6]:PORT` for an IPv6 literal).
fn split_server(server: &str) -> Result<(String, Option<u16>), MailError> {
    let bad = |reason: &str| MailError::Config {
        key: "server",
        reason: format!("'{server}': {reason}"),
    };
    if let Some(rest) = server.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| bad("no closing ']'"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse().map_err(|_| bad("the port is not a number"))?),
            None if after.is_empty() => None,
            None => return Err(bad("expected ':PORT' after ']'")),
        };
        return Ok((host.to_string(), port));
    }
    match server.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Ok((
            host.to_string(),
            Some(port.parse().map_err(|_| bad("the port is not a number"))?),
        )),
        _ if server.is_empty() => Err(bad("empty")),
        _ => Ok((server.to_string(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_split_into_host_and_port() {
        assert_eq!(split_server("mx").unwrap(), ("mx".into(), None));
        assert_eq!(
            split_server("127.0.0.1:2525").unwrap(),
            ("127.0.0.1".into(), Some(2525))
        );
        assert_eq!(split_server("[::1]:25").unwrap(), ("::1".into(), Some(25)));
        assert!(split_server("mx:port").is_err());
        assert!(split_server("").is_err());
    }

    #[test]
    fn a_bad_sender_is_named() {
        let config = SmtpConfig {
            server: "127.0.0.1:2525".into(),
            from: "not an address".into(),
            tls: SmtpTls::None,
            username: None,
            password_file: None,
        };
        let e = Mailer::new(&config).err().unwrap().to_string();
        assert!(e.contains("not an address"), "{e}");
    }
}
