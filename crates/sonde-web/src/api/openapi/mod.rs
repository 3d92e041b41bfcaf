//! The API's OpenAPI document, made from the table the router is made
//! from ([`Routes`]: each route with its [`Op`]) and the Rust types of
//! what the operations take and answer (`schemars`). The result and
//! method schemas are the generated ones of docs/schema
//! (`sonde_model::schema`, with their rules), put in as `TestResult` and
//! `MethodResult`. `crates/sonde-web/openapi.json` is this document as
//! committed: `tests::the_committed_document_is_the_generated_one` fails
//! when they differ and writes it with `SONDE_BLESS=1`.

mod op;

pub use op::{metric_names, Generators, Op, Shape, JSON};

use crate::state::Shared;
use axum::handler::Handler;
use axum::routing::on;
use axum::Router;
use serde_json::{json, Map, Value};

/// Routes and the operations they serve, built together so that neither
/// has one the other lacks.
pub struct Routes {
    router: Router<Shared>,
    ops: Vec<Op>,
}

impl Default for Routes {
    fn default() -> Self {
        Routes::new()
    }
}

impl Routes {
    pub fn new() -> Routes {
        Routes {
            router: Router::new(),
            ops: Vec::new(),
        }
    }

    /// `op`, served by `handler` (on `op`'s method and path).
    pub fn op<H, T>(mut self, op: Op, handler: H) -> Routes
    where
        H: Handler<T, Shared>,
        T: 'static,
    {
        self.router = self.router.route(op.path, on(op.method.filter(), handler));
        self.ops.push(op);
        self
    }

    /// `op`, served by `handler`, with its own cap on the body's size.
    pub fn op_limited<H, T>(mut self, op: Op, handler: H, max_body_bytes: usize) -> Routes
    where
        H: Handler<T, Shared>,
        T: 'static,
    {
        let route = on(op.method.filter(), handler)
            .layer(axum::extract::DefaultBodyLimit::max(max_body_bytes));
        self.router = self.router.route(op.path, route);
        self.ops.push(op);
        self
    }

    pub fn merge(mut self, other: Routes) -> Routes {
        self.router = self.router.merge(other.router);
        self.ops.extend(other.ops);
        self
    }

    /// The document of what the routes serve.
    pub fn document(&self) -> Value {
        document(&self.ops)
    }

    pub fn into_router(self) -> Router<Shared> {
        self.router
    }
}

const DESCRIPTION: &str = "The agent's HTTP API (docs/api.md). Reading may be public \
    (http.read_public); writing and starting tests needs a bearer token. `TestResult` is \
    docs/schema/result-v3.schema.json, put in at serve time. Personal data (constituencies, \
    incidents, mail templates, the owner lookup, mesh agents) needs a token even when reading \
    is public. A Host name the agent does not answer to gets 421 (http.hosts); a source that \
    sent too many wrong tokens gets 429.";

/// The document of `ops`.
pub fn document(ops: &[Op]) -> Value {
    let mut g = Generators {
        write: sonde_model::schema::generator("/components/schemas"),
        read: sonde_model::schema::reading_generator("/components/schemas"),
    };
    let mut named = Map::new();
    let mut paths = Map::new();
    for op in ops {
        let item = paths
            .entry(op.path.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(op.method.key().into(), op.render(&mut g, &mut named));
        }
    }
    let mut schemas = g.write.take_definitions(true);
    // What sonde reads, beside what it writes: a type whose two schemas
    // differ (a field it fills in when absent is required in what it
    // writes) has its read one as `NAMEInput`.
    let mut read = g.read.take_definitions(true);
    read.extend(named);
    let renamed: Vec<String> = read
        .iter()
        .filter(|(name, schema)| schemas.get(*name).is_some_and(|w| w != *schema))
        .map(|(name, _)| name.clone())
        .collect();
    for (name, mut schema) in read {
        rename_refs(&mut schema, &renamed);
        let name = if renamed.contains(&name) {
            format!("{name}Input")
        } else {
            name
        };
        schemas.insert(name, schema);
    }
    for item in paths.values_mut() {
        for op in item
            .as_object_mut()
            .into_iter()
            .flat_map(|m| m.values_mut())
        {
            if let Some(body) = op.get_mut("requestBody") {
                rename_refs(body, &renamed);
            }
            if let Some(params) = op.get_mut("parameters") {
                rename_refs(params, &renamed);
            }
        }
    }
    insert_document(&mut schemas, "TestResult", sonde_model::schema::result_v3());
    insert_document(
        &mut schemas,
        "MethodResult",
        sonde_model::schema::method_v1(),
    );
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "sonde agent API",
            "version": "1",
            "description": DESCRIPTION,
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    });
    resolve_documents(&mut doc);
    doc
}

/// The references to the result's and the method's schema files
/// (`ResultDocument`, `MethodDocument`) as references to their
/// components.
fn resolve_documents(v: &mut Value) {
    use sonde_model::schema::{METHOD_SCHEMA, RESULT_SCHEMA};
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if r == RESULT_SCHEMA {
                    *r = "#/components/schemas/TestResult".into();
                } else if r == METHOD_SCHEMA {
                    *r = "#/components/schemas/MethodResult".into();
                }
            }
            m.values_mut().for_each(resolve_documents);
        }
        Value::Array(a) => a.iter_mut().for_each(resolve_documents),
        _ => {}
    }
}

/// `v`'s references to the components named in `renamed` made to their
/// `Input` ones.
fn rename_refs(v: &mut Value, renamed: &[String]) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/components/schemas/") {
                    if renamed.iter().any(|n| n == name) {
                        *r = format!("{r}Input");
                    }
                }
            }
            m.values_mut().for_each(|x| rename_refs(x, renamed));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rename_refs(x, renamed)),
        _ => {}
    }
}

/// A document's schema (docs/schema: generated from the model's types,
/// with its rules) put in as component `name`: its `$defs` become
/// components named `name.*` (apart from the API's own, which may share
/// a name), and its references are rewritten to match.
fn insert_document(
    schemas: &mut Map<String, Value>,
    name: &str,
    doc: Result<Value, sonde_model::schema::RuleError>,
) {
    fn rewrite(v: &mut Value, name: &str) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get_mut("$ref") {
                    if r == "#" {
                        *r = format!("#/components/schemas/{name}");
                    } else if let Some(def) = r.strip_prefix("#/$defs/") {
                        *r = format!("#/components/schemas/{name}.{def}");
                    }
                }
                m.values_mut().for_each(|x| rewrite(x, name));
            }
            Value::Array(a) => a.iter_mut().for_each(|x| rewrite(x, name)),
            _ => {}
        }
    }
    // A rule naming a field the types lack fails the committed
    // document's test (an error schema where the document should be).
    let mut doc = doc.unwrap_or_else(|e| json!({ "description": e.to_string() }));
    rewrite(&mut doc, name);
    if let Some(d) = doc.as_object_mut() {
        if let Some(Value::Object(defs)) = d.remove("$defs") {
            for (k, v) in defs {
                schemas.insert(format!("{name}.{k}"), v);
            }
        }
        d.remove("$schema");
        d.remove("$id");
    }
    schemas.insert(name.into(), doc);
}

#[cfg(test)]
mod tests;
