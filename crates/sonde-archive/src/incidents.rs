//! The archive's incidents (schema migration 6).
