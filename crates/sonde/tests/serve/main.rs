//! `sonde serve` from the outside: hostile clients, tokens and limit
//! classes, the STAMP reflector, its own flags, third-party tests and the
//! mesh of agents on loopback.
//!
//! One test binary: each module below was a test file of its own.

#[path = "../attack/mod.rs"]
mod attack;
#[path = "../common/mod.rs"]
mod common;

mod abuse_handshake;
mod abuse_refusals;
mod abuse_work;
mod archive_upkeep;
mod auth_abuse;
mod auth_classes;
mod auth_handshake;
mod gate_attack;
mod http_attack;
mod log_format;
mod mesh_forward;
mod mesh_plans;
mod package;
mod reflector;
mod robustness;
mod serve_flags;
mod serve_reload;
mod serve_user;
mod third_party;
