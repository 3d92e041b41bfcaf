//! What keeps cheap requests from making the agent do a lot: the
//! connection caps, requests per minute on the expensive routes (by
//! token, or by source without one), wrong tokens per minute by source,
//! the live event streams open at once, ingest requests at once, and the
//! counts of what each refused (on `/metrics`).

use crate::connections::Connections;
use crate::rate::PerMinute;
use crate::serve::Closed;
use crate::HttpConfig;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts of requests refused, by why.
#[derive(Debug, Default)]
pub struct Refusals {
    /// A token that is none of ours.
    pub wrong_token: AtomicU64,
    /// Requests refused because their source sent too many wrong tokens.
    pub auth_locked: AtomicU64,
    /// Expensive requests over the per-minute rate.
    pub rate: AtomicU64,
    /// Event streams over the cap.
    pub streams: AtomicU64,
    /// Ingest requests while every ingest place was taken.
    pub ingest_busy: AtomicU64,
    /// A `Host` not in `http.hosts`.
    pub host: AtomicU64,
    /// Personal data asked for without a token.
    pub personal: AtomicU64,
    /// Campaigns over `http.max_campaigns`.
    pub campaigns: AtomicU64,
}

#[derive(Debug)]
pub struct Guards {
    pub connections: Arc<Connections>,
    pub closed: Arc<Closed>,
    pub expensive: PerMinute,
    pub auth_failures: PerMinute,
    streams: Arc<AtomicUsize>,
    max_streams: usize,
    pub ingest: Arc<tokio::sync::Semaphore>,
    pub refused: Refusals,
    /// Held while the API counts and writes a campaign.
    pub campaigns: std::sync::Mutex<()>,
}

/// One open event stream's place; given back when the stream ends.
#[derive(Debug)]
pub struct StreamSlot(Arc<AtomicUsize>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Guards {
    pub fn new(http: &HttpConfig) -> Arc<Self> {
        let limit = crate::connections::descriptor_limit();
        let total = crate::connections::total_cap(http.max_connections, limit);
        if total < http.max_connections {
            tracing::info!(
                "http: at most {total} connections (descriptor limit {}, {} kept for the control port and the archive)",
                limit.unwrap_or(0),
                crate::connections::DESCRIPTOR_RESERVE
            );
        }
        Arc::new(Self {
            connections: Connections::new(
                total,
                http.max_connections_per_source,
                http.source_prefix_v4,
                http.source_prefix_v6,
            ),
            closed: Arc::default(),
            expensive: PerMinute::new(http.requests_per_minute),
            auth_failures: PerMinute::new(http.auth_failures_per_minute),
            streams: Arc::default(),
            max_streams: http.max_event_streams,
            ingest: Arc::new(tokio::sync::Semaphore::new(http.max_ingest_requests)),
            refused: Refusals::default(),
            campaigns: std::sync::Mutex::new(()),
        })
    }

    /// A place for one more event stream, if any is left.
    pub fn stream(&self) -> Option<StreamSlot> {
        let taken = self
            .streams
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max_streams).then_some(n + 1)
            });
        match taken {
            Ok(_) => Some(StreamSlot(Arc::clone(&self.streams))),
            Err(_) => {
                self.refused.streams.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    pub fn streams_open(&self) -> usize {
        self.streams.load(Ordering::Relaxed)
    }

    /// The key a source's requests count under: its prefix.
    pub fn source_key(&self, ip: IpAddr) -> String {
        self.connections.source(ip).to_string()
    }
}
