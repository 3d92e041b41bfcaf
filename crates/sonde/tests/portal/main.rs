//! The agent's web surface: the JSON API, its OpenAPI document, writes,
//! readings, alerts and incidents, and the portal in a real headless
//! Chromium.
//!
//! One test binary: each module below was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod alerts_deliveries;
mod http_api;
mod http_openapi;
mod http_writes;
mod incidents_api;
mod incidents_cli;
mod portal_browser;
mod read_replica;
mod readings;
