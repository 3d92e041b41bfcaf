//! Where forwarded items go: a central agent's API, or an archive
//! itself. Each delivers a batch whole or not at all, and keeps an item
//! it already has once.

use crate::api_client::{ApiClient, ClientError};
use crate::ForwardConfig;
use crate::{IngestBody, IngestReply, INGEST_PATH};
use sonde_archive::{Item, Store};

/// What a delivered batch did at the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub received: usize,
    /// Items the destination did not have yet.
    pub new: usize,
}

/// Why a batch was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The destination could not be reached or failed: try again later.
    #[error("{0}")]
    Unavailable(String),
    /// The destination refused one item for good (the item at `index`
    /// of the batch): it can never be delivered.
    #[error("item {index} refused: {why}")]
    Refused { index: usize, why: String },
    /// The destination refused the whole batch for good (a token it
    /// does not know, a batch too large): try again later, and say so.
    #[error("{0}")]
    Rejected(String),
    /// The configuration cannot work (a token file that cannot be read).
    #[error("{0}")]
    Config(String),
}

/// A place batches of items are delivered to.
pub trait Destination: Send {
    /// Delivers `items`, all or none.
    fn deliver(&mut self, items: &[Item]) -> Result<Delivery, ForwardError>;
}

/// The destination `config` names.
pub fn open(config: &ForwardConfig) -> Result<Box<dyn Destination>, ForwardError> {
    if config.is_api() {
        let token_file = config.token_file.as_deref().ok_or_else(|| {
            ForwardError::Config(format!("{}: an API destination needs a token", config.name))
        })?;
        let token = std::fs::read_to_string(token_file)
            .map_err(|e| {
                ForwardError::Config(format!(
                    "{}: cannot read {}: {e}",
                    config.name,
                    token_file.display()
                ))
            })?
            .trim()
            .to_string();
        if token.is_empty() {
            return Err(ForwardError::Config(format!(
                "{}: {} is empty",
                config.name,
                token_file.display()
            )));
        }
        let client = ApiClient::new(&config.to, token, config.ca_file.as_deref())
            .map_err(|e| ForwardError::Config(format!("{}: {e}", config.name)))?;
        Ok(Box::new(CentralApi { client }))
    } else {
        Ok(Box::new(Archive {
            location: config.to.clone(),
            store: None,
        }))
    }
}

/// A central agent's `POST /api/v1/ingest`.
#[derive(Debug)]
pub struct CentralApi {
    client: ApiClient,
}

/// The error body the API answers with.
#[derive(Debug, serde::Deserialize)]
struct ApiErrorBody {
    error: String,
    #[serde(default)]
    item: Option<usize>,
}

impl Destination for CentralApi {
    fn deliver(&mut self, items: &[Item]) -> Result<Delivery, ForwardError> {
        let body = serde_json::to_vec(&IngestBody { items })
            .map_err(|e| ForwardError::Unavailable(format!("cannot encode the batch: {e}")))?;
        let (status, answer) = self
            .client
            .post_json(INGEST_PATH, body)
            .map_err(|e: ClientError| ForwardError::Unavailable(e.to_string()))?;
        if status.is_success() {
            let reply: IngestReply = serde_json::from_slice(&answer).map_err(|e| {
                ForwardError::Unavailable(format!("the central agent's answer does not read: {e}"))
            })?;
            return Ok(Delivery {
                received: reply.received,
                new: reply.new,
            });
        }
        let error = serde_json::from_slice::<ApiErrorBody>(&answer).ok();
        let why = error.as_ref().map_or_else(
            || String::from_utf8_lossy(&answer).chars().take(200).collect(),
            |e| e.error.clone(),
        );
        match (status.as_u16(), error.and_then(|e| e.item)) {
            (400 | 422, Some(index)) if index < items.len() => {
                Err(ForwardError::Refused { index, why })
            }
            // Busy (too many at once, or over the rate): later.
            (429, _) => Err(ForwardError::Unavailable(format!("{status}: {why}"))),
            (400..=499, _) => Err(ForwardError::Rejected(format!("{status}: {why}"))),
            _ => Err(ForwardError::Unavailable(format!("{status}: {why}"))),
        }
    }
}

/// An archive written directly (`postgres://…`, or a SQLite path),
/// reconnected after any failure.
pub struct Archive {
    location: String,
    store: Option<Store>,
}

impl Destination for Archive {
    fn deliver(&mut self, items: &[Item]) -> Result<Delivery, ForwardError> {
        let store = match &mut self.store {
            Some(s) => s,
            None => self.store.insert(
                Store::open(&self.location)
                    .map_err(|e| ForwardError::Unavailable(e.to_string()))?,
            ),
        };
        match store.put_items(items) {
            Ok(new) => Ok(Delivery {
                received: items.len(),
                new,
            }),
            Err(e) => {
                self.store = None;
                Err(ForwardError::Unavailable(e.to_string()))
            }
        }
    }
}
