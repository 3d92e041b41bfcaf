//! The central agent's side of the mesh (docs/mesh.md): agents register
//! (and register again as their heartbeat), take their share of the mesh
//! plans, and are listed with whether they are still heard.

use super::list::{self, ListQ};
use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::{body, ApiError};
use crate::state::{with_read_store, with_store, Shared};
use crate::tokens::Caller;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use sonde_archive::{AgentInfo, MeshAgent};
use sonde_mesh::member::ShareReply;
use sonde_model::clock::now_ns;

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::post(
                "/api/v1/mesh/register",
                "meshRegister",
                "An agent registers with the central agent (its heartbeat)",
            )
            .token()
            .body(JSON, Shape::of::<sonde_archive::AgentInfo>())
            .reply(200, "registered", JSON, Shape::of::<Registered>())
            .errors(&[400, 401, 403, 503, 413, 429]),
            register,
        )
        .op(
            Op::get(
                "/api/v1/mesh/share",
                "meshShare",
                "The token's agent's share of the mesh plans, as campaign plans",
            )
            .token()
            .reply(
                200,
                "the shares",
                JSON,
                Shape::of::<sonde_mesh::member::ShareReply>(),
            )
            .errors(&[401, 403, 503, 429]),
            share,
        )
        .op(
            Op::get(
                "/api/v1/mesh/agents",
                "meshAgents",
                "Registered agents, up or unknown",
            )
            .query::<super::list::ListQuery>()
            .reply(200, "the agents", JSON, Shape::of::<Agents>())
            .headers(super::list::truncated_header())
            .error(400, "a bad parameter (limit out of range, an unknown one)")
            .errors(&[401, 403, 503, 429]),
            agents,
        )
}

/// The agent a request speaks for: its token's name. Registering and
/// taking a share need a token, and an agent speaks only for itself.
fn agent_of(caller: Option<Extension<Caller>>) -> Result<String, ApiError> {
    caller.map(|Extension(Caller(name))| name).ok_or_else(|| {
        ApiError(
            StatusCode::UNAUTHORIZED,
            "an agent registers with its token (Authorization: Bearer …)".into(),
        )
    })
}

/// Whether `agent` is still heard: its last registration is within
/// `mesh.unknown_after`.
pub fn is_heard(agent: &MeshAgent, unknown_after: std::time::Duration, now: i64) -> bool {
    let limit = i64::try_from(unknown_after.as_nanos()).unwrap_or(i64::MAX);
    now.saturating_sub(agent.last_seen_ns) <= limit
}

async fn register(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    raw: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<Registered>, ApiError> {
    let agent = agent_of(caller)?;
    let raw = body(raw)?;
    let info: AgentInfo = serde_json::from_slice(&raw).map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("the body is not an agent: {e}"),
        )
    })?;
    if info.name != agent {
        return Err(ApiError(
            StatusCode::FORBIDDEN,
            format!(
                "the token of {agent} may register {agent} only, not {}",
                info.name
            ),
        ));
    }
    let bad_address = info
        .addresses
        .iter()
        .find(|a| a.is_empty() || a.len() > 255 || a.chars().any(char::is_whitespace));
    if info.addresses.is_empty() || info.addresses.len() > 16 || bad_address.is_some() {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "addresses: 1 to 16 host names or addresses".into(),
        ));
    }
    if info.location.as_ref().is_some_and(|l| l.len() > 200) {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "location: at most 200 characters".into(),
        ));
    }
    let now = now_ns();
    with_store(&state, move |s| s.register_agent(&info, now)).await?;
    Ok(Json(Registered {
        agent,
        unknown_after_s: state.mesh.unknown_after.as_secs_f64(),
    }))
}

async fn share(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
) -> Result<Json<ShareReply>, ApiError> {
    let agent = agent_of(caller)?;
    let Some(dir) = state.mesh.plans.clone() else {
        return Ok(Json(ShareReply {
            agent,
            shares: Vec::new(),
        }));
    };
    let registry = with_store(&state, |s| s.mesh_agents()).await?;
    let me = agent.clone();
    let shares = tokio::task::spawn_blocking(move || {
        let (plans, errors) = sonde_mesh::plan::load_dir(&dir);
        for (path, e) in errors {
            tracing::warn!(plan = %path.display(), "mesh plan left out: {e}");
        }
        plans
            .iter()
            .filter_map(|p| p.share(&me, &registry))
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Json(ShareReply { agent, shares }))
}

/// What a registration is answered with.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Registered {
    /// The agent registered: the token's name.
    agent: String,
    /// Seconds without a registration after which it is unknown.
    unknown_after_s: f64,
}

/// The registered agents.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Agents {
    /// Seconds without a registration after which an agent is unknown.
    unknown_after_s: f64,
    agents: Vec<Listed>,
}

/// A registered agent, and whether it is heard.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "MeshAgent")]
struct Listed {
    #[serde(flatten)]
    agent: MeshAgent,
    status: Heard,
}

/// Whether an agent registered within `mesh.unknown_after`.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Heard {
    Up,
    Unknown,
}

async fn agents(
    State(state): State<Shared>,
    q: ListQ,
) -> Result<axum::response::Response, ApiError> {
    let limit = list::limit(q)?;
    let (registry, more) = list::cut(with_read_store(&state, |s| s.mesh_agents()).await?, limit);
    let now = now_ns();
    let agents: Vec<Listed> = registry
        .into_iter()
        .map(|a| Listed {
            status: if is_heard(&a, state.mesh.unknown_after, now) {
                Heard::Up
            } else {
                Heard::Unknown
            },
            agent: a,
        })
        .collect();
    Ok(list::answer(
        Agents {
            unknown_after_s: state.mesh.unknown_after.as_secs_f64(),
            agents,
        },
        more,
    ))
}
