//! The API's incidents (docs/incidents.md).

use super::Shared;
use axum::Router;

pub fn routes() -> Router<Shared> {
    Router::new()
}
