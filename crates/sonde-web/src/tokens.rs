//! The API's tokens (`http.tokens`), clear or hashed, and the name of the
//! token a request came with.

use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// The name of the token a request came with (for logs and the archive).
#[derive(Debug, Clone)]
pub struct Caller(pub String);

/// The configured tokens, and the hashed ones already seen to match
/// (by the SHA-256 digest of what was presented), so that Argon2's cost
/// is paid once per token, not once per request.
pub struct Tokens {
    pub(crate) tokens: Vec<crate::ApiToken>,
    /// The SHA-256 digest of each token kept in clear, and its place in
    /// `tokens` (a mesh's central agent has a token per agent: one
    /// lookup, not a digest of each of 10,000 tokens per request).
    clear: HashMap<[u8; 32], usize>,
    /// Every token's name: the agents of a mesh, each sending with its
    /// own (an ingest checks a batch's `from` labels against them).
    names: HashSet<String>,
    verified: Mutex<HashMap<[u8; 32], usize>>,
    /// One Argon2 verification at a time: wrong tokens cost the agent
    /// one core at most, and their sources are held to
    /// `http.auth_failures_per_minute`.
    argon: tokio::sync::Semaphore,
}

/// Hashed tokens remembered as verified at most: more than a mesh's
/// agents, each with a token of its own.
const VERIFIED_KEPT: usize = 65_536;

impl Tokens {
    pub fn new(tokens: Vec<crate::ApiToken>) -> Self {
        let clear = tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| t.hash.is_none())
            .map(|(i, t)| (Sha256::digest(t.token.as_bytes()).into(), i))
            .collect();
        let names = tokens.iter().map(|t| t.name.clone()).collect();
        Self {
            tokens,
            clear,
            names,
            verified: Mutex::new(HashMap::new()),
            argon: tokio::sync::Semaphore::new(1),
        }
    }

    /// The configured token `presented` matches. Tokens kept in clear
    /// are found by their SHA-256 digests, all of one length: the time
    /// taken depends on the digest of what was presented, which says
    /// nothing of how close it came to any token or how long one is.
    /// Hashed ones are
    /// verified with Argon2 on the blocking pool.
    pub async fn holder(self: &Arc<Self>, presented: &str) -> Option<&crate::ApiToken> {
        let asked: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = self.clear.get(&asked).copied();
        if found.is_none() && self.tokens.iter().any(|t| t.hash.is_some()) {
            found = self.hashed(presented, asked).await;
        }
        found.map(|i| &self.tokens[i])
    }

    /// Whether a token is named `name`.
    pub fn has_name(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    async fn hashed(self: &Arc<Self>, presented: &str, asked: [u8; 32]) -> Option<usize> {
        let lock = || self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = lock().get(&asked) {
            return Some(i);
        }
        let _one = self.argon.acquire().await.ok()?;
        let me = Arc::clone(self);
        let presented = presented.to_string();
        let found = tokio::task::spawn_blocking(move || {
            me.tokens.iter().position(|t| {
                t.hash
                    .as_deref()
                    .is_some_and(|h| crate::api_token::verify(h, &presented))
            })
        })
        .await
        .ok()
        .flatten()?;
        let mut kept = lock();
        if kept.len() >= VERIFIED_KEPT {
            kept.clear();
        }
        kept.insert(asked, found);
        Some(found)
    }
}
