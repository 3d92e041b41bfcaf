//! One operation of the API as its OpenAPI document describes it, built
//! beside the route that serves it ([`super::Routes::op`]): the router
//! and the document are made from the same table, so that a route cannot
//! be served undocumented or documented unserved.
//!
//! Bodies and a query's parameters are described by their Rust types:
//! an answer as sonde writes it ([`Shape::of`]), a request's body as it
//! reads it ([`Shape::read`]), a query's parameters from the type the
//! handler reads them into ([`Op::query`]). What no type describes is
//! text ([`Shape::text`]: CSV, an event stream), the OpenAPI document
//! itself and a campaign plan given as JSON ([`Shape::object`]), and a
//! path's parameters ([`Op::path_param`], [`Op::path_uuid`],
//! [`Op::path_matching`]).

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

/// The HTTP methods the API answers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

impl Method {
    /// Its name in an OpenAPI path item.
    pub fn key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
            Method::Patch => "patch",
            Method::Delete => "delete",
        }
    }

    /// The filter axum routes it with.
    pub fn filter(self) -> axum::routing::MethodFilter {
        use axum::routing::MethodFilter;
        match self {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
            Method::Patch => MethodFilter::PATCH,
            Method::Delete => MethodFilter::DELETE,
        }
    }
}

/// The media types the API speaks.
pub const JSON: &str = "application/json";

/// What a body is: a Rust type's schema as sonde writes it (an answer)
/// or as it reads it (a request: a field it fills in when absent is not
/// required), or JSON written by hand.
pub enum Shape {
    Type(fn(&mut SchemaGenerator) -> Schema),
    Read(fn(&mut SchemaGenerator) -> Schema),
    Json(Value),
}

/// The two generators a document is made with: what sonde writes, and
/// what it reads.
pub struct Generators {
    pub write: SchemaGenerator,
    pub read: SchemaGenerator,
}

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

impl Shape {
    /// `T`'s schema (a reference to its component when it has a name).
    pub fn of<T: JsonSchema>() -> Shape {
        Shape::Type(schema_of::<T>)
    }

    /// `T`'s schema as sonde reads it: a request's body.
    pub fn read<T: JsonSchema>() -> Shape {
        Shape::Read(schema_of::<T>)
    }

    /// Text (CSV, an event stream, OpenMetrics).
    pub fn text() -> Shape {
        Shape::Json(json!({ "type": "string" }))
    }

    /// A JSON object no type describes (the OpenAPI document itself, a
    /// campaign plan as JSON: docs/campaigns.md).
    pub fn object() -> Shape {
        Shape::Json(json!({ "type": "object" }))
    }

    fn render(&self, g: &mut Generators) -> Value {
        match self {
            Shape::Type(f) => f(&mut g.write).to_value(),
            Shape::Read(f) => f(&mut g.read).to_value(),
            Shape::Json(v) => v.clone(),
        }
    }
}

/// A parameter: a query's from its type, or one written by hand.
enum Param {
    Query(fn() -> Schema),
    Json(Value),
}

/// One answer an operation may give.
struct Reply {
    status: u16,
    description: String,
    content: Vec<(&'static str, Shape)>,
    headers: Option<Value>,
}

/// One operation: a method on a path, with what it takes and answers.
pub struct Op {
    pub(super) method: Method,
    pub(super) path: &'static str,
    id: &'static str,
    summary: &'static str,
    description: Option<&'static str>,
    token: bool,
    params: Vec<Param>,
    body: Vec<(&'static str, Shape)>,
    replies: Vec<Reply>,
}

/// What an error status means when an operation says nothing more.
fn error_meaning(status: u16) -> &'static str {
    match status {
        400 => "a bad parameter or body",
        401 => "no token (where one is needed)",
        403 => "a token that is not valid here",
        404 => "nothing there",
        409 => "a conflict: already there, a prefix owned by another, nothing to mail, no [smtp]",
        413 => "a body over http.max_body_bytes",
        429 => {
            "too many wrong tokens from this source (http.auth_failures_per_minute): \
             wait a minute (Retry-After)"
        }
        503 => "the archive is unreachable",
        _ => "an error",
    }
}

/// A query's parameters are what sonde reads: the reading generator's
/// idea of what is required, its fields inline (the types they name
/// become components).
fn query_params<T: JsonSchema>() -> Schema {
    sonde_model::schema::reading_generator("/components/schemas").into_root_schema_for::<T>()
}

impl Op {
    fn new(method: Method, path: &'static str, id: &'static str, summary: &'static str) -> Op {
        Op {
            method,
            path,
            id,
            summary,
            description: None,
            token: false,
            params: Vec::new(),
            body: Vec::new(),
            replies: Vec::new(),
        }
    }

    pub fn get(path: &'static str, id: &'static str, summary: &'static str) -> Op {
        Op::new(Method::Get, path, id, summary)
    }

    pub fn post(path: &'static str, id: &'static str, summary: &'static str) -> Op {
        Op::new(Method::Post, path, id, summary)
    }

    pub fn patch(path: &'static str, id: &'static str, summary: &'static str) -> Op {
        Op::new(Method::Patch, path, id, summary)
    }

    pub fn delete(path: &'static str, id: &'static str, summary: &'static str) -> Op {
        Op::new(Method::Delete, path, id, summary)
    }

    /// More than the summary says.
    pub fn describe(mut self, text: &'static str) -> Op {
        self.description = Some(text);
        self
    }

    /// The operation needs a bearer token, whatever `http.read_public`.
    pub fn token(mut self) -> Op {
        self.token = true;
        self
    }

    /// A parameter in the path (a string).
    pub fn path_param(self, name: &str, description: &str) -> Op {
        self.path_matching(name, description, json!({ "type": "string" }))
    }

    /// A parameter in the path: a string as `schema` says.
    pub fn path_matching(self, name: &str, description: &str, schema: Value) -> Op {
        self.param(json!({
            "name": name,
            "in": "path",
            "required": true,
            "schema": schema,
            "description": description,
        }))
    }

    /// A UUID in the path (a result's or a method's id).
    pub fn path_uuid(self, name: &str, description: &str) -> Op {
        self.path_matching(
            name,
            description,
            json!({
                "type": "string",
                "format": "uuid",
                "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
            }),
        )
    }

    /// The query's parameters, one per field of `T` (what the handler's
    /// `Query<T>` reads), described by the fields' doc comments.
    pub fn query<T: JsonSchema>(mut self) -> Op {
        self.params.push(Param::Query(query_params::<T>));
        self
    }

    /// A parameter as the document has it.
    fn param(mut self, p: Value) -> Op {
        self.params.push(Param::Json(p));
        self
    }

    /// The request's body in one media type (there may be several).
    pub fn body(mut self, media: &'static str, shape: Shape) -> Op {
        self.body.push((media, shape));
        self
    }

    /// An answer with a body.
    pub fn reply(
        mut self,
        status: u16,
        description: &str,
        media: &'static str,
        shape: Shape,
    ) -> Op {
        self.replies.push(Reply {
            status,
            description: description.into(),
            content: vec![(media, shape)],
            headers: None,
        });
        self
    }

    /// The last answer in another media type too.
    pub fn or(mut self, media: &'static str, shape: Shape) -> Op {
        if let Some(r) = self.replies.last_mut() {
            r.content.push((media, shape));
        }
        self
    }

    /// The last answer's headers.
    pub fn headers(mut self, headers: Value) -> Op {
        if let Some(r) = self.replies.last_mut() {
            r.headers = Some(headers);
        }
        self
    }

    /// An answer with no body.
    pub fn empty(mut self, status: u16, description: &str) -> Op {
        self.replies.push(Reply {
            status,
            description: description.into(),
            content: Vec::new(),
            headers: None,
        });
        self
    }

    /// Error answers (`{"error": …}`) with what they usually mean.
    pub fn errors(mut self, statuses: &[u16]) -> Op {
        for &s in statuses {
            self = self.error(s, error_meaning(s));
        }
        self
    }

    /// An error answer with what it means here.
    pub fn error(self, status: u16, description: &str) -> Op {
        self.reply(
            status,
            description,
            JSON,
            Shape::of::<crate::api::reply::ErrorBody>(),
        )
    }

    /// The operation as the document's path item has it.
    /// The schemas it names are `g`'s definitions, or put in `defs`.
    pub(super) fn render(&self, g: &mut Generators, defs: &mut Map<String, Value>) -> Value {
        let mut op = Map::new();
        op.insert("summary".into(), self.summary.into());
        if let Some(d) = self.description {
            op.insert("description".into(), d.into());
        }
        op.insert("operationId".into(), self.id.into());
        if self.token {
            op.insert("security".into(), json!([{ "bearer": [] }]));
        }
        let params: Vec<Value> = self
            .params
            .iter()
            .flat_map(|p| render_param(p, defs))
            .collect();
        if !params.is_empty() {
            op.insert("parameters".into(), params.into());
        }
        if !self.body.is_empty() {
            op.insert(
                "requestBody".into(),
                json!({ "required": true, "content": content(&self.body, g) }),
            );
        }
        let mut replies = Map::new();
        for r in &self.replies {
            let mut reply = Map::new();
            reply.insert("description".into(), r.description.clone().into());
            if let Some(h) = &r.headers {
                reply.insert("headers".into(), h.clone());
            }
            if !r.content.is_empty() {
                reply.insert("content".into(), content(&r.content, g));
            }
            replies.insert(r.status.to_string(), reply.into());
        }
        op.insert("responses".into(), replies.into());
        op.into()
    }
}

fn content(media: &[(&'static str, Shape)], g: &mut Generators) -> Value {
    media
        .iter()
        .map(|(m, s)| (m.to_string(), json!({ "schema": s.render(g) })))
        .collect::<Map<_, _>>()
        .into()
}

/// A query type's fields as parameters: name, whether required, the
/// field's schema and its doc comment as the description.
fn render_param(p: &Param, defs: &mut Map<String, Value>) -> Vec<Value> {
    match p {
        Param::Json(v) => vec![v.clone()],
        Param::Query(f) => {
            let mut schema = f().to_value();
            if let Some(Value::Object(named)) = schema
                .as_object_mut()
                .and_then(|m| m.remove("components"))
                .and_then(|mut c| c.as_object_mut().and_then(|c| c.remove("schemas")))
            {
                defs.extend(named);
            }
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let Some(props) = schema["properties"].as_object() else {
                return Vec::new();
            };
            props
                .iter()
                .map(|(name, prop)| {
                    let mut prop = prop.clone();
                    let description = prop
                        .as_object_mut()
                        .and_then(|m| m.remove("description"))
                        .unwrap_or_else(|| "".into());
                    json!({
                        "name": name,
                        "in": "query",
                        "required": required.contains(&name.as_str()),
                        "schema": prop,
                        "description": description,
                    })
                })
                .collect()
        }
    }
}

/// A `metric` parameter: every name the metric registry knows a metric
/// by (its name, short name and aliases), which is what the API takes.
pub fn metric_names(_: &mut SchemaGenerator) -> Schema {
    let mut names: Vec<&str> = Vec::new();
    for m in sonde_model::Metric::ALL {
        let info = m.info();
        for n in [info.name, info.short]
            .into_iter()
            .chain(info.aliases.iter().copied())
        {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    schemars::json_schema!({ "type": "string", "enum": names })
}
