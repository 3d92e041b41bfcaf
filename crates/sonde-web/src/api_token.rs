//! API tokens at rest: an Argon2id hash (PHC string, as `sonde token
//! hash` prints it) stands in the configuration for the token itself.
//! Argon2 through the RustCrypto `argon2` crate with its default
//! parameters (19 MiB, 2 passes), a 16-byte random salt per hash.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// Why a token could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("a token has 16 characters at least (this one has {0})")]
    Short(usize),
    #[error("no randomness for the salt: {0}")]
    Random(String),
    #[error("hashing: {0}")]
    Hash(String),
}

/// The Argon2id hash of `token`, as a PHC string (`$argon2id$v=19$…`).
pub fn hash(token: &str) -> Result<String, TokenError> {
    let n = token.chars().count();
    if n < 16 {
        return Err(TokenError::Short(n));
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| TokenError::Random(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| TokenError::Hash(e.to_string()))?;
    Argon2::default()
        .hash_password(token.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| TokenError::Hash(e.to_string()))
}

/// Whether `presented` is the token `hash` was made from (false for a
/// hash that cannot be read). Slow by design: tens of milliseconds.
pub fn verify(hash: &str, presented: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|h| {
        Argon2::default()
            .verify_password(presented.as_bytes(), &h)
            .is_ok()
    })
}

/// A new random token: 32 characters from 24 random bytes (URL-safe
/// base64 without padding, as a bearer token may carry).
pub fn generate() -> Result<String, TokenError> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
    let mut out = String::with_capacity(32);
    for chunk in bytes.chunks(3) {
        let v = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
        for shift in [18, 12, 6, 0] {
            out.push(char::from(ALPHABET[((v >> shift) & 63) as usize]));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_token_only_and_each_hash_is_salted() {
        let t = "0123456789abcdef-token";
        let h = hash(t).unwrap();
        assert!(h.starts_with("$argon2id$v=19$"), "{h}");
        assert!(!h.contains(t));
        assert!(verify(&h, t));
        assert!(!verify(&h, "0123456789abcdef-tokem"));
        assert!(!verify(&h, ""));
        assert_ne!(hash(t).unwrap(), h, "a fresh salt each time");
        assert!(!verify("not a hash", t));
        assert!(matches!(hash("short"), Err(TokenError::Short(5))));
    }

    #[test]
    fn generated_tokens_are_long_random_and_bearer_safe() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }
}
