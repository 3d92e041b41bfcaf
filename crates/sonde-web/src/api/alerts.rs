//! The API's alerts (docs/alerts.md).

use super::Shared;
use axum::Router;

pub fn routes() -> Router<Shared> {
    Router::new()
}
