//! The JSON schemas of sonde's documents, generated from the types that
//! write them (`schemars`), so that a schema cannot drift from the
//! document. `docs/schema/*.schema.json` are these schemas as committed;
//! `tests/schema_files.rs` fails when they differ and rewrites them with
//! `SONDE_BLESS=1`.
//!
//! What a type cannot say — which fields a tcp result must have that a
//! ping result must not — is added as rules on the generated schema, kept
//! beside it as JSON (`schema/*.rules.json`), whose every property name is
//! checked against the generated schema when the rules are applied.
//!
//! The types whose JSON is written by hand (a rate as an integer of bits
//! per second, a DSCP as its number, a timestamp as RFC 3339) describe
//! themselves with [`leaf_schema!`].

use schemars::generate::SchemaSettings;
use schemars::transform::{transform_subschemas, Transform};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// `impl JsonSchema` for a type serialized by hand: its schema name and
/// its schema, as JSON.
macro_rules! leaf_schema {
    ($ty:ty, $name:literal, $schema:tt) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}
pub(crate) use leaf_schema;

/// A whole result document where another schema holds one: a reference
/// to its schema (`result-v3.schema.json`), which the OpenAPI document
/// resolves to its `TestResult`. For `#[schemars(with = ...)]`.
pub struct ResultDocument;

/// A whole method document, as [`ResultDocument`] is a result
/// (`method-v1.schema.json`; `MethodResult` in the OpenAPI document).
pub struct MethodDocument;

impl JsonSchema for ResultDocument {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ResultDocument".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> Schema {
        schemars::json_schema!({ "$ref": RESULT_SCHEMA })
    }
}

impl JsonSchema for MethodDocument {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MethodDocument".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> Schema {
        schemars::json_schema!({ "$ref": METHOD_SCHEMA })
    }
}

/// The result schema's file, as other schemas refer to it.
pub const RESULT_SCHEMA: &str = "result-v3.schema.json";
/// The method schema's file.
pub const METHOD_SCHEMA: &str = "method-v1.schema.json";

/// A document's schema: `T`'s, for what sonde writes (every field it
/// always writes is required), objects closed to other properties, with
/// its `$id`, title and description.
pub fn document<T: JsonSchema>(id: &str, title: &str, description: &str) -> Value {
    let settings = SchemaSettings::draft2020_12();
    let settings = settings.for_serialize().with_transform(Closed);
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut doc = schema.to_value();
    if let Value::Object(m) = &mut doc {
        let mut head = Map::new();
        head.insert("$schema".into(), m.remove("$schema").unwrap_or(Value::Null));
        head.insert("$id".into(), Value::String(id.into()));
        head.insert("title".into(), Value::String(title.into()));
        head.insert("description".into(), Value::String(description.into()));
        m.remove("title");
        m.remove("description");
        head.extend(std::mem::take(m));
        *m = head;
    }
    doc
}

/// A generator of the API's schemas, as [`document`]'s (what sonde writes,
/// objects closed), with its definitions under `definitions_path` (a JSON
/// pointer: `/components/schemas` for an OpenAPI document).
pub fn generator(definitions_path: &'static str) -> schemars::SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(Closed);
    settings.definitions_path = definitions_path.into();
    settings.into_generator()
}

/// A generator for what sonde reads rather than writes (a query's
/// parameters: a field that may be left out is not required), objects
/// closed as in [`generator`].
pub fn reading_generator(definitions_path: &'static str) -> schemars::SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with_transform(Closed);
    settings.definitions_path = definitions_path.into();
    settings.into_generator()
}

/// A document's schema says what is written, not what a reader would
/// fill in (no `default`); an address's format is one a validator checks, every object with
/// named properties allows no others (what a reader of
/// an older sonde would not know is a new format version, not a field it
/// may skip), and a property sonde leaves out when it has no value is
/// never `null` (an `Option` skipped when `None`: absent, never null).
#[derive(Clone)]
struct Closed;

impl Transform for Closed {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(m) = schema.as_object_mut() {
            // An address is an IPv4 or an IPv6 one (`ip` is no format a
            // validator checks).
            if m.get("format").and_then(Value::as_str) == Some("ip") {
                m.remove("format");
                m.insert(
                    "anyOf".into(),
                    serde_json::json!([{ "format": "ipv4" }, { "format": "ipv6" }]),
                );
            }
            // What a reader fills in for an absent field is not what a
            // written document holds.
            m.remove("default");
            // A pair of like values (a chart's point) as an array of two:
            // the form every validator and generator reads, where tuple
            // `prefixItems` are not.
            if let Some(Value::Array(items)) = m.get("prefixItems") {
                if !items.is_empty() && items.iter().all(|i| *i == items[0]) {
                    let item = items[0].clone();
                    m.remove("prefixItems");
                    m.insert("items".into(), item);
                }
            }
            if let Some(Value::String(d)) = m.get_mut("description") {
                *d = plain(d);
            }
            if m.contains_key("properties") && !m.contains_key("additionalProperties") {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            let required: Vec<String> = match m.get("required") {
                Some(Value::Array(r)) => r
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                _ => Vec::new(),
            };
            if let Some(Value::Object(props)) = m.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) {
                        not_null(prop);
                    }
                }
            }
        }
        transform_subschemas(self, schema);
    }
}

/// A doc comment as a schema's description: its lines joined (a blank
/// line stays a paragraph break) and rustdoc's links as plain code
/// (`` [`Figures`] `` is `` `Figures` ``).
fn plain(doc: &str) -> String {
    doc.split("\n\n")
        .map(|para| {
            para.split('\n')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
        .replace("[`", "`")
        .replace("`]", "`")
}

/// `schema` without its `null`: `"type": ["integer", "null"]` becomes
/// `"integer"`, an `anyOf` loses its `{"type": "null"}` branch.
fn not_null(schema: &mut Value) {
    let Value::Object(m) = schema else { return };
    if let Some(Value::Array(types)) = m.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            m.insert("type".into(), only);
        }
    }
    let null = serde_json::json!({ "type": "null" });
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get_mut(key) {
            branches.retain(|b| *b != null);
            if branches.len() == 1 {
                let only = branches.remove(0);
                m.remove(key);
                if let Value::Object(inner) = only {
                    for (k, v) in inner {
                        m.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
}

/// What a rule names that the schema does not have.
#[derive(Debug, thiserror::Error)]
#[error("the schema's rules name {0}, which the generated schema does not have")]
pub struct RuleError(pub String);

/// `rules` (a JSON array of subschemas) added to `doc`'s `allOf`, after
/// checking that every property a rule names is one of the generated
/// schema's (at any depth): a renamed field fails here, not silently.
pub fn with_rules(mut doc: Value, rules: &str) -> Result<Value, RuleError> {
    let rules: Value =
        serde_json::from_str(rules).map_err(|e| RuleError(format!("bad JSON ({e})")))?;
    let mut known = std::collections::BTreeSet::new();
    property_names(&doc, &mut known);
    let mut named = std::collections::BTreeSet::new();
    property_names(&rules, &mut named);
    if let Some(unknown) = named.difference(&known).next() {
        return Err(RuleError(format!("property '{unknown}'")));
    }
    let Value::Array(rules) = rules else {
        return Err(RuleError("something other than an array of rules".into()));
    };
    if let Value::Object(m) = &mut doc {
        match m.get_mut("allOf") {
            Some(Value::Array(all)) => all.extend(rules),
            _ => {
                m.insert("allOf".into(), Value::Array(rules));
            }
        }
    }
    Ok(doc)
}

/// The names of every `properties` and `required` in `v`.
fn property_names(v: &Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, sub) in m {
                match (k.as_str(), sub) {
                    ("properties", Value::Object(p)) => out.extend(p.keys().cloned()),
                    ("required", Value::Array(r)) => {
                        out.extend(r.iter().filter_map(Value::as_str).map(String::from))
                    }
                    _ => {}
                }
                property_names(sub, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| property_names(x, out)),
        _ => {}
    }
}

/// The result document's schema (`docs/schema/result-v3.schema.json`).
pub fn result_v3() -> Result<Value, RuleError> {
    let doc = document::<crate::TestResult>(
        "https://sonde.invalid/schema/result-v3.schema.json",
        "sonde result, format version 3",
        "The one versioned document every test produces (`sonde tcp|udp|ping -J`, the \
         archive): the same header (`id`, `format_version`, `sonde_version`, `test`, \
         `title`, `spec`, `env`, `start`, `duration_s`, `interrupted`), then `intervals` \
         and `summary`, whose figures have the same names in every test, then `streams` \
         (tcp, udp) or `series` (ping). Units are in field names: _bps bits per second \
         (payload), _bytes bytes, _s seconds, _ms milliseconds, _pct percent; _packets, \
         retransmits, duplicates and reordered are counts. A figure a test does not \
         measure, or a peer did not report, is absent, never 0. Format-1 documents (tcp-, \
         udp- and ping-result-v1.schema.json) are read by sonde's loader and converted. \
         Changes are listed in docs/result-format.md. Generated from sonde-model's types \
         (sonde_model::schema).",
    );
    with_rules(doc, include_str!("schema/result-v3.rules.json"))
}

/// A method's document's schema (`docs/schema/method-v1.schema.json`):
/// its trials are whole results, defined in it as in the result's.
pub fn method_v1() -> Result<Value, RuleError> {
    let doc = document::<crate::MethodResult>(
        "https://sonde.invalid/schema/method-v1.schema.json",
        "sonde method result, format version 1",
        "The one document a method produces (`sonde ndr|sweep -J`, `sonde tcp|udp|ping \
         -J` with --repeat, --until-stddev or --families): the header of a test's \
         result (`id`, `format_version`, `sonde_version`, `title`, `start`, \
         `duration_s`, `interrupted`), then `method` naming it and its `spec`, what it \
         found (`results` per size for ndr, `steps` and `limiters` for sweep, `runs` \
         for repeat), `family_ratios` (IPv6 over IPv4) when both families ran, and in \
         `trials` the whole result (result-v3.schema.json) of every test it ran, in the \
         order they ran. Every `result_ids`/`trial_ids` entry is the `id` of one of the \
         trials. Units are in field names as in the result document. Generated from sonde-model's types (sonde_model::schema).",
    );
    let mut doc = with_rules(doc, include_str!("schema/method-v1.rules.json"))?;
    // A trial is a result as the result's schema has it, with its rules.
    if let Some(defs) = doc.pointer_mut("/$defs").and_then(Value::as_object_mut) {
        defs.insert(
            "TestResult".into(),
            serde_json::json!({ "$ref": RESULT_SCHEMA }),
        );
    }
    prune_defs(&mut doc);
    Ok(doc)
}

/// `doc` without the `$defs` nothing refers to (any more).
fn prune_defs(doc: &mut Value) {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    if let Some(name) = r.strip_prefix("#/$defs/") {
                        out.push(name.to_string());
                    }
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let Some(Value::Object(defs)) = doc.as_object_mut().and_then(|m| m.remove("$defs")) else {
        return;
    };
    let mut todo = Vec::new();
    refs(doc, &mut todo);
    let mut kept = Map::new();
    while let Some(name) = todo.pop() {
        if kept.contains_key(&name) {
            continue;
        }
        if let Some(def) = defs.get(&name) {
            refs(def, &mut todo);
            kept.insert(name, def.clone());
        }
    }
    let kept: Map<String, Value> = defs
        .into_iter()
        .filter(|(k, _)| kept.contains_key(k))
        .collect();
    if let Value::Object(m) = doc {
        m.insert("$defs".into(), Value::Object(kept));
    }
}

/// The failure document's schema (`docs/schema/error-v3.schema.json`).
pub fn error_v3() -> Value {
    document::<crate::FailureDocument>(
        "https://sonde.invalid/schema/error-v3.schema.json",
        "sonde failure, format version 3",
        "What `sonde tcp|udp|ping|run -J` prints instead of a result when the test gave \
         none: the result's header as far as it is known, and `error`. The exit code is \
         non-zero (2 for a usage error, 1 for a failed run, 130 when interrupted). With \
         `--json=iperf3` the document is iperf3's instead: `start`, `intervals`, `end` and \
         `error` as a string. Described in docs/result-format.md. Generated from \
         sonde-model's types (sonde_model::schema).",
    )
}
