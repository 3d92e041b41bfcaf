//! The archive's readings (schema migration 7).
