//! The archive's alert_states (schema migration 8).
