//! Token authentication on the native control protocol: the MACs a
//! client and a server exchange to show each other they hold the same
//! token secret, without the secret crossing the wire
//! (docs/protocol.md, "Authentication").
//!
//! The client's proof is
//! `HMAC-SHA256(secret, CLIENT_LABEL ‖ server_nonce ‖ client_nonce ‖ name)`
//! and the server's answer the same over [`SERVER_LABEL`]: the labels
//! keep one side's MAC from ever serving as the other's. Both nonces are
//! [`NONCE_LEN`] bytes and the name comes last, so the input is never
//! ambiguous. The server's nonce is fresh for every connection, so a
//! proof is worth nothing on any other connection.
//!
//! Nonces and MACs travel as lower-case hex ([`Nonce`], [`Mac`]). Pure
//! computation: the nonces are drawn by the caller.

use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::Sha256;
use std::fmt;

/// Bytes in each side's nonce.
pub const NONCE_LEN: usize = 32;
/// Bytes in a MAC (HMAC-SHA256).
pub const MAC_LEN: usize = 32;
pub use sonde_model::credential::{valid_token_name, MAX_TOKEN_NAME, MIN_SECRET_LEN};
/// Domain separation of the client's proof.
pub const CLIENT_LABEL: &[u8] = b"sonde-auth-v1 client proof\0";
/// Domain separation of the server's proof.
pub const SERVER_LABEL: &[u8] = b"sonde-auth-v1 server proof\0";

/// Fixed-length bytes written as lower-case hex on the wire.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HexBytes<const N: usize>(pub [u8; N]);

/// A side's nonce.
pub type Nonce = HexBytes<NONCE_LEN>;
/// A MAC.
pub type Mac = HexBytes<MAC_LEN>;

impl<const N: usize> fmt::Display for HexBytes<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl<const N: usize> fmt::Debug for HexBytes<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl<const N: usize> std::str::FromStr for HexBytes<N> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.len() != 2 * N || !s.is_ascii() {
            return Err(format!("must be {} hex digits", 2 * N));
        }
        let mut out = [0u8; N];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
                .map_err(|_| format!("must be {} hex digits", 2 * N))?;
        }
        Ok(Self(out))
    }
}

impl<const N: usize> Serialize for HexBytes<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de, const N: usize> Deserialize<'de> for HexBytes<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

fn keyed(secret: &[u8], label: &[u8], server: &Nonce, client: &Nonce, name: &str) -> Hmac<Sha256> {
    // HMAC takes a key of any length: this cannot fail.
    let mut mac = <Hmac<Sha256> as hmac::Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(label);
    mac.update(&server.0);
    mac.update(&client.0);
    mac.update(name.as_bytes());
    mac
}

/// The client's proof that it holds `secret` for token `name`.
pub fn client_proof(secret: &[u8], server: &Nonce, client: &Nonce, name: &str) -> Mac {
    HexBytes(
        keyed(secret, CLIENT_LABEL, server, client, name)
            .finalize()
            .into_bytes()
            .into(),
    )
}

/// The server's proof that it holds `secret` for token `name` too.
pub fn server_proof(secret: &[u8], server: &Nonce, client: &Nonce, name: &str) -> Mac {
    HexBytes(
        keyed(secret, SERVER_LABEL, server, client, name)
            .finalize()
            .into_bytes()
            .into(),
    )
}

/// Whether `proof` is the client's proof for these inputs, compared in
/// constant time.
pub fn verify_client(
    secret: &[u8],
    server: &Nonce,
    client: &Nonce,
    name: &str,
    proof: &Mac,
) -> bool {
    keyed(secret, CLIENT_LABEL, server, client, name)
        .verify_slice(&proof.0)
        .is_ok()
}

/// Whether `proof` is the server's proof for these inputs, compared in
/// constant time.
pub fn verify_server(
    secret: &[u8],
    server: &Nonce,
    client: &Nonce,
    name: &str,
    proof: &Mac,
) -> bool {
    keyed(secret, SERVER_LABEL, server, client, name)
        .verify_slice(&proof.0)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef-friend";

    fn nonces() -> (Nonce, Nonce) {
        (HexBytes([0x11; NONCE_LEN]), HexBytes([0x22; NONCE_LEN]))
    }

    /// Known answers, computed apart from this code with Python's hmac:
    /// `hmac.new(secret, label + b"\x11"*32 + b"\x22"*32 + b"friend",
    /// hashlib.sha256).hexdigest()`.
    #[test]
    fn proofs_match_an_independent_computation() {
        let (s, c) = nonces();
        assert_eq!(
            client_proof(SECRET, &s, &c, "friend").to_string(),
            "a70bdc5dc3a97fee63e7708de3a85dfd4e70dbfdd1f74e49825843c4b6ab66b5"
        );
        assert_eq!(
            server_proof(SECRET, &s, &c, "friend").to_string(),
            "10dc3a3c1f989f0ec891c0bcfcae1b788bff644d4115d29da81f1669d3f5eb85"
        );
    }

    #[test]
    fn a_proof_verifies_only_for_its_own_inputs() {
        let (s, c) = nonces();
        let proof = client_proof(SECRET, &s, &c, "friend");
        assert!(verify_client(SECRET, &s, &c, "friend", &proof));
        assert!(!verify_client(
            b"another secret!!",
            &s,
            &c,
            "friend",
            &proof
        ));
        assert!(!verify_client(SECRET, &c, &s, "friend", &proof));
        assert!(!verify_client(SECRET, &s, &c, "friend2", &proof));
        let other_server = HexBytes([0x12; NONCE_LEN]);
        assert!(!verify_client(SECRET, &other_server, &c, "friend", &proof));
        // One side's MAC never stands for the other's.
        assert!(!verify_server(SECRET, &s, &c, "friend", &proof));
        let answer = server_proof(SECRET, &s, &c, "friend");
        assert!(verify_server(SECRET, &s, &c, "friend", &answer));
        assert_ne!(answer, proof);
    }

    #[test]
    fn hex_round_trips_and_rejects_bad_lengths() {
        let (s, _) = nonces();
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(text.len(), 2 * NONCE_LEN + 2);
        assert_eq!(serde_json::from_str::<Nonce>(&text).unwrap(), s);
        assert!(serde_json::from_str::<Nonce>("\"abcd\"").is_err());
        assert!(serde_json::from_str::<Mac>(&format!("\"{}\"", "zz".repeat(32))).is_err());
        assert!(serde_json::from_str::<Mac>(&format!("\"{}\"", "é".repeat(32))).is_err());
    }

    #[test]
    fn token_names_are_short_and_plain() {
        assert!(valid_token_name("friend-1.a_b"));
        assert!(!valid_token_name(""));
        assert!(!valid_token_name("a b"));
        assert!(!valid_token_name("name:secret"));
        assert!(!valid_token_name(&"a".repeat(65)));
    }
}
