//! The cookie: 37 bytes a client sends first on its control connection and
//! again first on each TCP data connection, so the server can tell which
//! test a data connection belongs to.
//!
//! iperf3 (since 3.2) makes it from 36 random bytes, each mapped into a
//! 32-character alphabet ([`COOKIE_ALPHABET`], lowercase letters and the
//! digits 2–7), followed by a NUL. Older iperf3 put a host name and a
//! time in it, so [`Cookie::parse`] accepts any printable ASCII in the
//! first 36 bytes; it refuses other bytes, an early NUL and a missing
//! final NUL. The server never sends the cookie back.

use super::Iperf3Error;
use std::fmt;

/// Bytes in a cookie on the wire, the final NUL included.
pub const COOKIE_LEN: usize = 37;
/// Characters in a cookie before its NUL.
pub const COOKIE_CHARS: usize = COOKIE_LEN - 1;
/// The characters iperf3 draws its cookies from.
pub const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A validated cookie: 36 printable ASCII characters and a NUL.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie([u8; COOKIE_LEN]);

impl Cookie {
    /// A fresh cookie from 36 random bytes supplied by the caller. Each
    /// byte picks a character by its value modulo 32, which keeps the
    /// choice uniform (256 is a multiple of 32).
    pub fn from_random(random: &[u8; COOKIE_CHARS]) -> Self {
        let mut bytes = [0u8; COOKIE_LEN];
        for (out, r) in bytes.iter_mut().zip(random) {
            *out = COOKIE_ALPHABET[usize::from(*r) % COOKIE_ALPHABET.len()];
        }
        Self(bytes)
    }

    /// Checks a cookie as received: exactly 37 bytes, the first 36
    /// printable ASCII (`!` to `~`), the last a NUL.
    pub fn parse(bytes: &[u8]) -> Result<Self, Iperf3Error> {
        let array: [u8; COOKIE_LEN] = bytes.try_into().map_err(|_| Iperf3Error::BadLength {
            what: "cookie",
            len: bytes.len(),
            expected: "37",
        })?;
        if let Some((index, &byte)) = array[..COOKIE_CHARS]
            .iter()
            .enumerate()
            .find(|(_, b)| !b.is_ascii_graphic())
        {
            return Err(Iperf3Error::CookieByte { index, byte });
        }
        match array[COOKIE_CHARS] {
            0 => Ok(Self(array)),
            found => Err(Iperf3Error::CookieUnterminated { found }),
        }
    }

    /// The 37 bytes as sent on the wire.
    pub fn as_bytes(&self) -> &[u8; COOKIE_LEN] {
        &self.0
    }

    /// The 36 characters, without the NUL.
    pub fn as_str(&self) -> &str {
        // Only printable ASCII gets in, so this cannot fail.
        std::str::from_utf8(&self.0[..COOKIE_CHARS]).unwrap_or_default()
    }

    /// Whether every character is one iperf3 itself would draw.
    pub fn uses_iperf3_alphabet(&self) -> bool {
        self.0[..COOKIE_CHARS]
            .iter()
            .all(|b| COOKIE_ALPHABET.contains(b))
    }
}

impl fmt::Display for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cookie({:?})", self.as_str())
    }
}
