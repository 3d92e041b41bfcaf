//! A token a client proves it holds to a sonde server (docs/protocol.md,
//! "Authentication"): its name, sent in the clear, and its secret, which
//! never leaves this host and never shows in `Debug` output, logs or
//! results (a spec carries it unserialized).

use std::fmt;

/// Least bytes a token secret has.
pub const MIN_SECRET_LEN: usize = 16;
/// Longest token name, in bytes.
pub const MAX_TOKEN_NAME: usize = 64;

/// Whether `name` may name a token: 1 to [`MAX_TOKEN_NAME`] bytes of
/// ASCII letters, digits, `-`, `_` and `.`.
pub fn valid_token_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOKEN_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A token file or secret that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error("a token file holds one line NAME:SECRET (no ':' found)")]
    NoSeparator,
    #[error("token name '{0}' is not 1 to {MAX_TOKEN_NAME} letters, digits, '-', '_' or '.'")]
    BadName(String),
    #[error("the token secret is {0} bytes; it must be at least {MIN_SECRET_LEN}")]
    ShortSecret(usize),
}

/// A token's name and secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    name: String,
    secret: Vec<u8>,
}

impl Credential {
    /// A token `name` with `secret` (checked: a plain name, a secret of
    /// at least [`MIN_SECRET_LEN`] bytes).
    pub fn new(name: &str, secret: &[u8]) -> Result<Self, CredentialError> {
        if !valid_token_name(name) {
            return Err(CredentialError::BadName(name.chars().take(80).collect()));
        }
        if secret.len() < MIN_SECRET_LEN {
            return Err(CredentialError::ShortSecret(secret.len()));
        }
        Ok(Self {
            name: name.to_string(),
            secret: secret.to_vec(),
        })
    }

    /// A client's token file: one line `NAME:SECRET` (the secret is
    /// everything after the first `:`, up to the line's end; one trailing
    /// newline is ignored).
    pub fn parse(text: &str) -> Result<Self, CredentialError> {
        let line = text
            .strip_suffix('\n')
            .map_or(text, |t| t.strip_suffix('\r').unwrap_or(t));
        let (name, secret) = line.split_once(':').ok_or(CredentialError::NoSeparator)?;
        Self::new(name, secret.as_bytes())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn secret(&self) -> &[u8] {
        &self.secret
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("secret", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_is_one_line_name_colon_secret() {
        let c = Credential::parse("friend:0123456789abcdef:x\n").unwrap();
        assert_eq!(c.name(), "friend");
        assert_eq!(c.secret(), b"0123456789abcdef:x");
        assert_eq!(
            Credential::parse("friend\n"),
            Err(CredentialError::NoSeparator)
        );
        assert_eq!(
            Credential::parse("friend:short"),
            Err(CredentialError::ShortSecret(5))
        );
        assert!(matches!(
            Credential::parse("a b:0123456789abcdef"),
            Err(CredentialError::BadName(_))
        ));
    }

    #[test]
    fn the_secret_never_shows_in_debug() {
        let c = Credential::new("friend", b"very secret value").unwrap();
        let shown = format!("{c:?}");
        assert!(shown.contains("friend"), "{shown}");
        assert!(!shown.contains("very secret"), "{shown}");
    }
}
