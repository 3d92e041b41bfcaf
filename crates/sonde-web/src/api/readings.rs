//! The API's readings (docs/readings.md).

use super::Shared;
use axum::Router;

pub fn routes() -> Router<Shared> {
    Router::new()
}
