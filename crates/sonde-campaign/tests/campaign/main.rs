//! The campaign crate's integration tests, one binary: the scheduler on
//! its own, and one plan run from both of its ends on one archive.

mod scheduler;
mod shared_runs;
