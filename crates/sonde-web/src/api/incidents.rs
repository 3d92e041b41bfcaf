//! The API's incidents (docs/incidents.md, docs/api.md): constituencies
//! with their networks and contacts, who owns an address, incidents
//! (listed, read, opened, changed, commented, imported), mail templates,
//! and a template mailed to an incident's owners through `[smtp]`.

use super::incident_bodies::{
    Code, CommentBody, Commented, ConstituencyChange, Email, EmailQuery, ListQuery, MailBody,
    Mailed, MailedTo, Named, Network, Opened, Owner, OwnerName, OwnerQuery, PrefixQuery, Reports,
};
use super::list::{self, ListQ};
use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::{bad, body, query, ApiError};
use crate::state::Shared;
use crate::tokens::Caller;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::json;
use sonde_alerts::{CommentBy, MailIncidentError};
use sonde_archive::{ArchiveError, IncidentFilter, Store};
use sonde_incidents::{
    Constituency, Contact, Incident, IncidentChange, IncidentError, IpNet, MailTemplate, Mailer,
    Status,
};
use sonde_model::clock::now_ns;
use std::net::IpAddr;
use std::sync::Arc;

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/constituencies", "listConstituencies", "Constituencies with their networks and contacts")
                .query::<super::list::ListQuery>()
                .reply(200, "the constituencies", JSON, Shape::of::<Vec<Constituency>>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 503, 429]),
            constituencies,
        )
        .op(
            Op::post("/api/v1/constituencies", "addConstituency", "Add a constituency (with networks and contacts)")
                .token()
                .body(JSON, Shape::read::<Constituency>())
                .reply(201, "made", JSON, Shape::of::<Code>())
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            add_constituency,
        )
        .op(
            Op::patch("/api/v1/constituencies/{code}", "changeConstituency", "Change a constituency's name or notes")
                .token()
                .path_matching("code", "the constituency's code", json!({"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}))
                .body(JSON, Shape::read::<ConstituencyChange>())
                .reply(200, "changed", JSON, Shape::of::<Code>())
                .errors(&[400, 401, 403, 404, 413, 503, 429]),
            set_constituency,
        )
        .op(
            Op::delete("/api/v1/constituencies/{code}", "removeConstituency", "Remove a constituency with its networks and contacts (incidents keep its code as the owner they had)")
                .token()
                .path_matching("code", "the constituency's code", json!({"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}))
                .empty(204, "done")
                .errors(&[400, 401, 403, 404, 503, 429]),
            remove_constituency,
        )
        .op(
            Op::post("/api/v1/constituencies/{code}/networks", "addNetwork", "Give a constituency a network")
                .token()
                .path_matching("code", "the constituency's code", json!({"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}))
                .body(JSON, Shape::read::<Network>())
                .reply(201, "made", JSON, Shape::of::<Network>())
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            add_network,
        )
        .op(
            Op::delete("/api/v1/constituencies/{code}/networks", "removeNetwork", "Take a network from a constituency")
                .token()
                .path_matching("code", "the constituency's code", json!({"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}))
                .query::<PrefixQuery>()
                .empty(204, "done")
                .errors(&[400, 401, 403, 404, 503, 429]),
            remove_network,
        )
        .op(
            Op::post("/api/v1/constituencies/{code}/contacts", "addContact", "Add (or update, by its address) a constituency's contact")
                .token()
                .path_matching("code", "the constituency's code", json!({"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}))
                .body(JSON, Shape::read::<Contact>())
                .reply(201, "made", JSON, Shape::of::<Email>())
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            add_contact,
        )
        .op(
            Op::delete("/api/v1/constituencies/{code}/contacts", "removeContact", "Remove a constituency's contact, by its address")
                .token()
                .path_matching("code", "the constituency's code", json!({"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}))
                .query::<EmailQuery>()
                .empty(204, "done")
                .errors(&[400, 401, 403, 404, 503, 429]),
            remove_contact,
        )
        .op(
            Op::get("/api/v1/owner", "owner", "The constituency that owns an address (the longest matching prefix)")
                .query::<OwnerQuery>()
                .reply(200, "its owner, or null", JSON, Shape::of::<Owner>())
                .errors(&[400, 401, 403, 503, 429]),
            owner,
        )
        .op(
            Op::get("/api/v1/incidents", "listIncidents", "Incidents, newest first (without comments and history)")
                .query::<ListQuery>()
                .reply(200, "the incidents", JSON, Shape::of::<Vec<Incident>>())
                .errors(&[400, 401, 403, 503, 429]),
            list,
        )
        .op(
            Op::post("/api/v1/incidents", "openIncident", "Open an incident (a report, or an array of them)")
                .token()
                .body(JSON, Shape::read::<Reports>())
                .reply(201, "made", JSON, Shape::of::<Opened>())
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            create,
        )
        .op(
            Op::post("/api/v1/incidents/import", "importIncidents", "Import incident reports (JSON: a report, or an array)")
                .token()
                .body(JSON, Shape::read::<Reports>())
                .reply(201, "made", JSON, Shape::of::<Opened>())
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            import,
        )
        .op(
            Op::get("/api/v1/incidents/{id}", "getIncident", "An incident with its addresses, owners, comments and history")
                .path_matching("id", "the incident's id (a positive number)", json!({"type": "string", "pattern": "^[1-9][0-9]{0,17}$"}))
                .reply(200, "the incident", JSON, Shape::of::<Incident>())
                .errors(&[400, 401, 403, 404, 503, 429]),
            one,
        )
        .op(
            Op::patch("/api/v1/incidents/{id}", "changeIncident", "Change an incident's state, status or severity")
                .token()
                .path_matching("id", "the incident's id (a positive number)", json!({"type": "string", "pattern": "^[1-9][0-9]{0,17}$"}))
                .body(JSON, Shape::read::<IncidentChange>())
                .reply(200, "the incident changed", JSON, Shape::of::<Incident>())
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            change,
        )
        .op(
            Op::post("/api/v1/incidents/{id}/comments", "commentIncident", "Comment on an incident")
                .token()
                .path_matching("id", "the incident's id (a positive number)", json!({"type": "string", "pattern": "^[1-9][0-9]{0,17}$"}))
                .body(JSON, Shape::read::<CommentBody>())
                .reply(201, "made", JSON, Shape::of::<Commented>())
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            comment,
        )
        .op(
            Op::post("/api/v1/incidents/{id}/mail", "mailIncident", "Mail a template to the incident's owners' contacts through [smtp]; the incident takes the template's state and status")
                .token()
                .path_matching("id", "the incident's id (a positive number)", json!({"type": "string", "pattern": "^[1-9][0-9]{0,17}$"}))
                .body(JSON, Shape::read::<MailBody>())
                .reply(200, "sent", JSON, Shape::of::<Mailed>())
                .error(502, "the SMTP server refused or could not be reached")
                .errors(&[400, 401, 403, 404, 409, 413, 503, 429]),
            mail,
        )
        .op(
            Op::get("/api/v1/mail-templates", "listMailTemplates", "Mail templates")
                .query::<super::list::ListQuery>()
                .reply(200, "the templates", JSON, Shape::of::<Vec<MailTemplate>>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 503, 429]),
            templates,
        )
        .op(
            Op::post("/api/v1/mail-templates", "addMailTemplate", "Add (or replace) a mail template; an unknown placeholder is refused by name")
                .token()
                .body(JSON, Shape::read::<MailTemplate>())
                .reply(201, "made", JSON, Shape::of::<Named>())
                .errors(&[400, 401, 403, 409, 413, 503, 429]),
            add_template,
        )
}

fn actor(caller: Option<Extension<Caller>>) -> String {
    caller.map_or_else(|| "api".to_string(), |Extension(Caller(name))| name)
}

/// An incident refusal as its status: 404 not there, 409 already there
/// (or a prefix owned twice), 400 bad.
fn refused(e: &IncidentError) -> ApiError {
    let status = match e {
        IncidentError::NotFound { .. } => StatusCode::NOT_FOUND,
        IncidentError::Exists { .. } | IncidentError::Owners(_) => StatusCode::CONFLICT,
        IncidentError::Invalid { .. } => StatusCode::BAD_REQUEST,
    };
    ApiError(status, e.to_string())
}

/// Why a blocking step failed: a refusal, the archive, or the mail.
enum Failure {
    Archive(ArchiveError),
    Api(ApiError),
}

impl From<ArchiveError> for Failure {
    fn from(e: ArchiveError) -> Self {
        Failure::Archive(e)
    }
}

/// Runs `work` on the archive on tokio's blocking pool, as
/// [`super::with_store`] does, with refusals given their own status
/// rather than 503.
async fn on_store<T: Send + 'static>(
    state: &Shared,
    work: impl FnOnce(&mut Store) -> Result<T, Failure> + Send + 'static,
) -> Result<T, ApiError> {
    let state = Arc::clone(state);
    let out = tokio::task::spawn_blocking(move || state.stores.with(work))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    out.map_err(|f| match f {
        Failure::Archive(ArchiveError::Incident(e)) => refused(&e),
        Failure::Archive(e) => {
            tracing::warn!("http: {e}");
            super::reply::unavailable()
        }
        Failure::Api(e) => e,
    })
}

fn json_body<T: serde::de::DeserializeOwned>(
    raw: Result<Bytes, BytesRejection>,
    what: &str,
) -> Result<T, ApiError> {
    let raw = body(raw)?;
    serde_json::from_slice(&raw).map_err(|e| bad(format!("the body is not {what}: {e}")))
}

fn incident_id(id: &str) -> Result<i64, ApiError> {
    id.parse::<i64>()
        .ok()
        .filter(|i| *i > 0)
        .ok_or_else(|| bad(format!("incident id '{id}' is not a positive number")))
}

async fn constituencies(
    State(state): State<Shared>,
    q: ListQ,
) -> Result<axum::response::Response, ApiError> {
    let limit = list::limit(q)?;
    let all: Vec<Constituency> = on_store(&state, |s| Ok(s.constituencies()?)).await?;
    let (some, more) = list::cut(all, limit);
    Ok(list::answer(some, more))
}

async fn add_constituency(
    State(state): State<Shared>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Code>), ApiError> {
    let c: Constituency = json_body(raw, "a constituency")?;
    c.validate().map_err(|e| refused(&e))?;
    let code = c.code.clone();
    on_store(&state, move |s| Ok(s.add_constituency(&c, now_ns())?)).await?;
    Ok((StatusCode::CREATED, Json(Code { code })))
}

async fn add_network(
    State(state): State<Shared>,
    Path(code): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Network>), ApiError> {
    let b: Network = json_body(raw, "a network {\"prefix\": …}")?;
    let net: IpNet = b.prefix.parse().map_err(|_| {
        bad(format!(
            "prefix: '{}' is not an IPv6 or IPv4 prefix",
            b.prefix
        ))
    })?;
    on_store(&state, move |s| Ok(s.add_network(&code, net, now_ns())?)).await?;
    Ok((
        StatusCode::CREATED,
        Json(Network {
            prefix: net.trunc().to_string(),
        }),
    ))
}

async fn set_constituency(
    State(state): State<Shared>,
    Path(code): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Code>, ApiError> {
    let c: ConstituencyChange = json_body(raw, "a change {\"name\"?, \"notes\"?}")?;
    if c.name.is_none() && c.notes.is_none() {
        return Err(bad("nothing to change: give name or notes"));
    }
    let out = code.clone();
    on_store(&state, move |s| {
        Ok(s.set_constituency(&code, c.name.as_deref(), c.notes.as_deref())?)
    })
    .await?;
    Ok(Json(Code { code: out }))
}

async fn remove_constituency(
    State(state): State<Shared>,
    Path(code): Path<String>,
) -> Result<StatusCode, ApiError> {
    on_store(&state, move |s| Ok(s.remove_constituency(&code)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn remove_network(
    State(state): State<Shared>,
    Path(code): Path<String>,
    q: Result<Query<PrefixQuery>, QueryRejection>,
) -> Result<StatusCode, ApiError> {
    let q = query(q)?;
    let net: IpNet = q.prefix.parse().map_err(|_| {
        bad(format!(
            "prefix: '{}' is not an IPv6 or IPv4 prefix",
            q.prefix
        ))
    })?;
    on_store(&state, move |s| Ok(s.remove_network(&code, net)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn remove_contact(
    State(state): State<Shared>,
    Path(code): Path<String>,
    q: Result<Query<EmailQuery>, QueryRejection>,
) -> Result<StatusCode, ApiError> {
    let q = query(q)?;
    on_store(&state, move |s| Ok(s.remove_contact(&code, &q.email)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn add_contact(
    State(state): State<Shared>,
    Path(code): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Email>), ApiError> {
    let c: Contact = json_body(raw, "a contact")?;
    c.validate().map_err(|e| refused(&e))?;
    let email = c.email.clone();
    on_store(&state, move |s| Ok(s.add_contact(&code, &c, now_ns())?)).await?;
    Ok((StatusCode::CREATED, Json(Email { email })))
}

async fn owner(
    State(state): State<Shared>,
    q: Result<Query<OwnerQuery>, QueryRejection>,
) -> Result<Json<Owner>, ApiError> {
    let q = query(q)?;
    let addr: IpAddr = q.address.parse().map_err(|_| {
        bad(format!(
            "address: '{}' is not an IPv6 or IPv4 address",
            q.address
        ))
    })?;
    let found = on_store(&state, move |s| Ok(s.owner_of(addr)?)).await?;
    Ok(Json(match found {
        Some((c, net)) => Owner {
            address: addr,
            owner: Some(OwnerName {
                code: c.code,
                name: c.name,
            }),
            prefix: Some(net.to_string()),
        },
        None => Owner {
            address: addr,
            owner: None,
            prefix: None,
        },
    }))
}

async fn list(
    State(state): State<Shared>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<Incident>>, ApiError> {
    let q = query(q)?;
    let status = match q.status.as_deref() {
        Some(s) => Some(s.parse::<Status>().map_err(|e| refused(&e))?),
        None => None,
    };
    let filter = IncidentFilter {
        status,
        owner: q.owner,
        limit: Some(match q.limit {
            None => 100,
            Some(n @ 1..=1000) => n,
            Some(n) => return Err(bad(format!("limit: {n} is not within 1 to 1000"))),
        }),
    };
    on_store(&state, move |s| Ok(s.incidents(&filter)?))
        .await
        .map(Json)
}

async fn one(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Incident>, ApiError> {
    let id = incident_id(&id)?;
    on_store(&state, move |s| {
        s.incident(id)?.ok_or_else(|| {
            Failure::Api(refused(&IncidentError::NotFound {
                what: "incident",
                name: id.to_string(),
            }))
        })
    })
    .await
    .map(Json)
}

/// Opens incidents from reports (a report, or an array), each with its
/// description as the first comment; the ids opened.
async fn open_reports(
    state: &Shared,
    raw: Result<Bytes, BytesRejection>,
    source: &'static str,
    author: String,
) -> Result<(StatusCode, Json<Opened>), ApiError> {
    let raw = body(raw)?;
    let text = std::str::from_utf8(&raw).map_err(|_| bad("the body is not UTF-8"))?;
    let reports = sonde_incidents::parse_reports(text).map_err(|e| refused(&e))?;
    // The comment is the token's; whom the report names as its
    // reporter is part of what it says.
    let ids = on_store(state, move |s| {
        let by = CommentBy::Caller(&author);
        Ok(sonde_alerts::open_reports(
            s,
            reports,
            Some(source),
            by,
            now_ns,
        )?)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(Opened { ids })))
}

async fn create(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Opened>), ApiError> {
    open_reports(&state, raw, "api", actor(caller)).await
}

async fn import(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Opened>), ApiError> {
    open_reports(&state, raw, "import", actor(caller)).await
}

async fn change(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Incident>, ApiError> {
    let id = incident_id(&id)?;
    let c: IncidentChange = json_body(raw, "a change {state, status, severity}")?;
    c.validate().map_err(|e| refused(&e))?;
    let who = actor(caller);
    let incident = on_store(&state, move |s| {
        s.change_incident(id, &c, &who, now_ns())?;
        Ok(s.incident(id)?)
    })
    .await?;
    incident.map(Json).ok_or_else(|| {
        refused(&IncidentError::NotFound {
            what: "incident",
            name: id.to_string(),
        })
    })
}

async fn comment(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Commented>), ApiError> {
    let id = incident_id(&id)?;
    let b: CommentBody = json_body(raw, "a comment {text}")?;
    // The author is the token's holder, never what the body says.
    let author = actor(caller);
    if b.author.as_ref().is_some_and(|a| a != &author) {
        return Err(bad(format!(
            "author: a comment is by the token's holder ({author}), not '{}'",
            b.author.unwrap_or_default()
        )));
    }
    on_store(&state, move |s| {
        Ok(s.comment_incident(id, &author, &b.text, now_ns())?)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(Commented { incident: id })))
}

async fn templates(
    State(state): State<Shared>,
    q: ListQ,
) -> Result<axum::response::Response, ApiError> {
    let limit = list::limit(q)?;
    let all: Vec<MailTemplate> = on_store(&state, |s| Ok(s.mail_templates()?)).await?;
    let (some, more) = list::cut(all, limit);
    Ok(list::answer(some, more))
}

async fn add_template(
    State(state): State<Shared>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Named>), ApiError> {
    let t: MailTemplate = json_body(raw, "a mail template")?;
    t.validate().map_err(|e| refused(&e))?;
    let name = t.name.clone();
    on_store(&state, move |s| Ok(s.put_mail_template(&t, now_ns())?)).await?;
    Ok((StatusCode::CREATED, Json(Named { name })))
}

/// Mails a template about an incident to its owners' contacts, records
/// it in the incident's history and applies the template's state and
/// status.
async fn mail(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Mailed>, ApiError> {
    let id = incident_id(&id)?;
    let b: MailBody = json_body(raw, "a mail {template, role}")?;
    let Some(mailer) = state.mailer.clone() else {
        return Err(ApiError(
            StatusCode::CONFLICT,
            "this agent has no [smtp] configured: it cannot send mail".into(),
        ));
    };
    let who = actor(caller);
    on_store(&state, move |s| {
        let sent = send_template(s, id, &b.template, b.role.as_deref(), &mailer, &who)?;
        let i = s.incident(id)?;
        Ok(Mailed {
            sent: sent
                .into_iter()
                .map(|(constituency, to)| MailedTo { constituency, to })
                .collect(),
            state: i.as_ref().map(|i| i.state.clone()),
            status: i.as_ref().map(|i| i.status),
        })
    })
    .await
    .map(Json)
}

/// Fills and sends template `name` for incident `id` to each owner's
/// contacts, then records it ([`sonde_alerts::mail_incident`]); the
/// constituencies written to, with their addresses.
fn send_template(
    s: &mut Store,
    id: i64,
    name: &str,
    role: Option<&str>,
    mailer: &Mailer,
    actor: &str,
) -> Result<Vec<(String, Vec<String>)>, Failure> {
    sonde_alerts::mail_incident(s, id, name, role, mailer, actor, now_ns()).map_err(|e| match e {
        MailIncidentError::Archive(e) => Failure::Archive(e),
        MailIncidentError::Compose(e) => {
            Failure::Api(ApiError(StatusCode::CONFLICT, e.to_string()))
        }
        e @ MailIncidentError::Send { .. } => {
            Failure::Api(ApiError(StatusCode::BAD_GATEWAY, e.to_string()))
        }
    })
}
