//! A campaign's plan, as written in TOML: endpoints, a battery of steps,
//! labels and a schedule (docs/campaigns.md has every key).
//!
//! A step is a test spec (`test = "tcp"`, …) or a method's spec
//! (`method = "qos_check"`, …) in the spelling `sonde run` reads, plus
//! the step's own keys: `name`, `from`, `to`, `labels`, `resource`. A
//! test step's `host` defaults to its `to` endpoint's address; anywhere in
//! a step, a string `"@NAME"` stands for endpoint NAME's address.

use crate::plan_where::{at, bad, in_step, PlanPlace};
use crate::resource::ResourceClass;
use crate::schedule::Schedule;
use crate::written::WrittenPlan;
use crate::CampaignError;
use serde::{Deserialize, Serialize};
use sonde_model::{MethodSpec, TestSpec};
use std::collections::BTreeMap;
use std::time::Duration;

/// One end of the measured path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub name: String,
    /// Host name or address, as a test's `host`; `HOST:PORT` or
    /// `[V6]:PORT` also names the port its `sonde serve` listens on (two
    /// agents on one host), read into `port`.
    pub address: String,
    /// The port the endpoint's server listens on, where not 5201: every
    /// tcp and udp step toward it goes there unless it says its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The agent (`HOST[:PORT]`) that leads this endpoint's steps when
    /// another host runs the plan: its tests go through it as third-party
    /// tests. Without one, only a scheduler running *as* this endpoint
    /// runs its steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// What a step measures: sonde's one request type, a test or a method.
pub use sonde_model::Spec as StepBody;

/// One step of the battery.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub name: String,
    /// The endpoint the step runs from.
    pub from: String,
    /// The endpoint it measures toward.
    pub to: String,
    pub labels: BTreeMap<String, String>,
    pub resource: ResourceClass,
    pub body: StepBody,
}

/// A whole plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub name: String,
    pub description: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub endpoints: Vec<Endpoint>,
    pub steps: Vec<Step>,
    pub schedule: Schedule,
}

/// The keys a step has besides its spec's.
const STEP_KEYS: [&str; 5] = ["name", "from", "to", "labels", "resource"];

impl Plan {
    /// Reads a plan from TOML with the command line's overrides (none:
    /// `&Overrides::default()`): its scale, schedule and endpoints'
    /// addresses win over the plan's.
    /// A mistake found after the TOML was read starts with its line.
    pub fn parse(text: &str, over: &crate::Overrides) -> Result<Plan, CampaignError> {
        Self::read(text, over).map_err(|e| crate::plan_where::located(e, text))
    }

    /// The plan's desk form (`--quick`, with `over`'s other overrides),
    /// when it has a `[quick]` table; a way in that keeps a plan checks
    /// it too, since its operator may run it so.
    pub fn desk_form(text: &str, over: &crate::Overrides) -> Result<Option<Plan>, CampaignError> {
        let has_quick = WrittenPlan::read(text).is_ok_and(|p| p.quick.is_some());
        if !has_quick {
            return Ok(None);
        }
        let quick = crate::Overrides {
            quick: true,
            ..over.clone()
        };
        Plan::parse(text, &quick).map(Some)
    }

    fn read(text: &str, over: &crate::Overrides) -> Result<Plan, CampaignError> {
        let file = WrittenPlan::read(text).map_err(bad)?;
        if file.mesh.is_some() {
            return Err(bad(
                "[mesh]: a mesh plan: put it in the central agent's `[mesh] plans` directory",
            ));
        }
        // The desk form: the plan's [quick] where the command line gives
        // nothing, and each step's own `quick` keys over its others.
        let over = &match (over.quick, &file.quick) {
            (false, _) => over.clone(),
            (true, Some(q)) => over.clone().with_quick(q),
            (true, None) => return Err(bad("--quick: the plan has no [quick] table")),
        };
        let (scale, endpoints) = (over.scale, &over.endpoints);
        if file.name.is_empty()
            || !file
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad(format!(
                "name '{}': use letters, digits, '-', '_' and '.'",
                file.name
            )));
        }
        let scale = scale.or(file.scale).unwrap_or(1.0);
        if !(scale.is_finite() && scale > 0.0 && scale <= 1000.0) {
            return Err(bad(format!("scale {scale}: must be more than 0")));
        }
        let mut ends = file.endpoints;
        if ends.is_empty() {
            return Err(bad("no [[endpoint]]: a plan needs at least one"));
        }
        for (name, address) in endpoints {
            let e = ends.iter_mut().find(|e| &e.name == name).ok_or_else(|| {
                bad(format!(
                    "--endpoint {name}: the plan has no endpoint {name}"
                ))
            })?;
            e.address = address.clone();
        }
        for (i, e) in ends.iter().enumerate() {
            if ends[..i].iter().any(|o| o.name == e.name) {
                return Err(bad(format!("endpoint {} is named twice", e.name)));
            }
        }
        // `HOST:PORT`: the host is the address tests go to, the port
        // where their server listens.
        for e in &mut ends {
            let (host, port) = sonde_model::host_port::split_host_port(&e.address)
                .map_err(|why| endpoint_at(&e.name, "address", format!("address {why}")))?;
            if let (Some(p), Some(q)) = (port, e.port) {
                if p != q {
                    return Err(endpoint_at(
                        &e.name,
                        "port",
                        format!("address '{}' names port {p}, port says {q}", e.address),
                    ));
                }
            }
            if e.port == Some(0) {
                return Err(endpoint_at(&e.name, "port", "port 0: 1-65535"));
            }
            e.address = host;
            e.port = e.port.or(port);
        }
        if file.steps.is_empty() {
            return Err(bad("no [[step]]: the battery is empty"));
        }
        let steps = file
            .steps
            .into_iter()
            .enumerate()
            .map(|(i, t)| read_step(i + 1, t, &ends, scale, over.quick))
            .filter_map(Result::transpose)
            .collect::<Result<Vec<_>, _>>()?;
        if steps.is_empty() {
            return Err(bad("--quick: every step has quick.skip"));
        }
        let schedule = file
            .schedule
            .read(scale, over.repeat_span()?, over.max_runs)?;
        Ok(Plan {
            name: file.name,
            description: file.description,
            labels: file.labels,
            endpoints: ends,
            steps,
            schedule,
        })
    }

    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.name == name)
    }

    /// The longest a run can take: its steps' durations (methods count
    /// as their own time limit, unknown here: a generous hour).
    pub fn run_length(&self) -> Duration {
        self.steps.iter().map(|s| step_length(&s.body)).sum()
    }
}

/// How long a step runs at most, as far as its spec says.
pub fn step_length(body: &StepBody) -> Duration {
    match body {
        StepBody::Test(TestSpec::Tcp(s)) => s.time + s.omit,
        StepBody::Test(TestSpec::Udp(s)) => s.time + s.omit,
        StepBody::Test(TestSpec::Ping(s)) => s
            .deadline
            .unwrap_or(s.interval * u32::try_from(s.count).unwrap_or(u32::MAX) + s.timeout),
        StepBody::Test(TestSpec::Http(s)) => s.send_duration() + s.timeout,
        StepBody::Test(TestSpec::Trace(s)) => s.work().duration.unwrap_or_default(),
        StepBody::Method(_) => Duration::from_secs(3600),
    }
}

/// A mistake in endpoint `name`, at `key`.
fn endpoint_at(name: &str, key: &str, message: impl Into<String>) -> CampaignError {
    at(
        PlanPlace::Endpoint {
            name: name.to_string(),
            key: Some(key.to_string()),
        },
        message,
    )
}

fn text_key(t: &mut toml::Table, key: &str, step: usize) -> Result<Option<String>, CampaignError> {
    match t.remove(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(in_step(
            step,
            Some(key),
            format!("'{key}' must be text, not {}", v.type_str()),
        )),
    }
}

/// Replaces every `"@NAME"` string in `v` by endpoint NAME's address.
fn resolve_names(v: &mut toml::Value, ends: &[Endpoint], step: usize) -> Result<(), CampaignError> {
    match v {
        toml::Value::String(s) => {
            if let Some(name) = s.strip_prefix('@') {
                let e = ends
                    .iter()
                    .find(|e| e.name == name)
                    .ok_or_else(|| in_step(step, None, format!("'@{name}' names no endpoint")))?;
                *s = e.address.clone();
            }
        }
        toml::Value::Array(a) => {
            for x in a {
                resolve_names(x, ends, step)?;
            }
        }
        toml::Value::Table(t) => {
            for (_, x) in t.iter_mut() {
                resolve_names(x, ends, step)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// A step's request, read by sonde's one parser: a mistake is named by
/// the step's number and the pointer of the value at fault.
fn read_spec(n: usize, t: toml::Table) -> Result<StepBody, CampaignError> {
    let value = serde_json::to_value(&t).map_err(|e| in_step(n, None, e.to_string()))?;
    StepBody::from_value(value).map_err(|e| {
        // A plan is TOML: the key, dotted, not a pointer.
        let key = e.at.trim_start_matches('/').replace('/', ".");
        match key.is_empty() {
            true => in_step(n, None, e.message),
            false => in_step(n, Some(&key), format!("{key}: {}", e.message)),
        }
    })
}

fn read_step(
    n: usize,
    mut t: toml::Table,
    ends: &[Endpoint],
    scale: f64,
    quick: bool,
) -> Result<Option<Step>, CampaignError> {
    match t.remove("quick") {
        Some(toml::Value::Table(mut q)) => {
            // `skip = true`: the desk form leaves the step out.
            let skip = match q.remove("skip") {
                None => false,
                Some(toml::Value::Boolean(b)) => b,
                Some(_) => return Err(in_step(n, Some("quick.skip"), "quick.skip: true or false")),
            };
            if quick && skip {
                return Ok(None);
            }
            if quick {
                t = overlay(t, q);
            }
        }
        None => {}
        Some(_) => {
            return Err(in_step(
                n,
                Some("quick"),
                "quick: give a table of the step's keys",
            ))
        }
    }
    let name = text_key(&mut t, "name", n)?;
    let from = text_key(&mut t, "from", n)?.unwrap_or_else(|| ends[0].name.clone());
    let to = match text_key(&mut t, "to", n)? {
        Some(to) => to,
        None => ends
            .iter()
            .find(|e| e.name != from)
            .unwrap_or(&ends[0])
            .name
            .clone(),
    };
    for end in [&from, &to] {
        if !ends.iter().any(|e| &e.name == end) {
            return Err(in_step(n, None, format!("no endpoint named '{end}'")));
        }
    }
    let labels: BTreeMap<String, String> = match t.remove("labels") {
        None => BTreeMap::new(),
        Some(v) => v
            .try_into()
            .map_err(|e| in_step(n, Some("labels"), format!("labels: {e}")))?,
    };
    let resource =
        match text_key(&mut t, "resource", n)? {
            None => None,
            Some(r) => Some(ResourceClass::parse(&r).ok_or_else(|| {
                in_step(n, None, format!("resource '{r}': use throughput or probe"))
            })?),
        };
    debug_assert!(STEP_KEYS.iter().all(|k| !t.contains_key(*k)));
    let mut v = toml::Value::Table(t);
    resolve_names(&mut v, ends, n)?;
    let toml::Value::Table(mut t) = v else {
        unreachable!("a table stays a table")
    };
    let to_end = ends.iter().find(|e| e.name == to);
    let to_address = to_end.map(|e| e.address.clone());
    let to_port = to_end.and_then(|e| e.port);
    let mut body = if t.contains_key("method") {
        if let Some(defaults) = method_defaults(&t, to_address.as_deref().unwrap_or_default()) {
            t = overlay(defaults, t);
        }
        read_spec(n, t)?
    } else if t.contains_key("test") {
        // An HTTP step goes where its URL says (the parser takes the
        // host from it); any other test to its `to` endpoint.
        let http_with_url =
            t.get("test").and_then(toml::Value::as_str) == Some("http") && t.contains_key("url");
        if !t.contains_key("host") && !http_with_url {
            t.insert(
                "host".into(),
                toml::Value::String(to_address.unwrap_or_default()),
            );
            // Toward an endpoint on its own port: tcp and udp tests
            // go there (a step's own `port` wins).
            let test = t.get("test").and_then(toml::Value::as_str);
            if let (Some(p), Some("tcp" | "udp")) = (to_port, test) {
                t.entry("port")
                    .or_insert(toml::Value::Integer(i64::from(p)));
            }
        }
        let mut body = read_spec(n, t)?;
        if let StepBody::Test(spec) = &mut body {
            scale_test(spec, scale);
            spec.validate()
                .map_err(|e| in_step(n, Some(e.field), format!("{}: {}", e.field, e.reason)))?;
        }
        body
    } else {
        return Err(in_step(
            n,
            None,
            "say what it runs: test = \"tcp\"|\"udp\"|\"ping\", or method = …",
        ));
    };
    if let StepBody::Method(m) = &mut body {
        scale_method(m, scale);
        m.validate()
            .map_err(|e| in_step(n, Some(e.field), format!("{}: {}", e.field, e.reason)))?;
    }
    let resource = resource.unwrap_or_else(|| ResourceClass::of(&body));
    let name = name.unwrap_or_else(|| default_name(&body, &from, &to));
    Ok(Some(Step {
        name,
        from,
        to,
        labels,
        resource,
        body,
    }))
}

/// A method whose spec has defaults of its own (`qos_check`: seed 004's
/// checks toward the step's `to`; `qos_scenario`: `sonde qos scenario`'s
/// flags' defaults), as a table the step's keys go over.
fn method_defaults(t: &toml::Table, host: &str) -> Option<toml::Table> {
    let toward = sonde_model::UdpSpec {
        host: host.to_string(),
        ..sonde_model::UdpSpec::default()
    };
    let spec = match t.get("method").and_then(toml::Value::as_str)? {
        "qos_check" => MethodSpec::QosCheck(sonde_model::method::QosCheckSpec::new(toward)),
        "qos_scenario" => {
            MethodSpec::QosScenario(sonde_model::method::QosScenarioSpec::new(toward))
        }
        _ => return None,
    };
    match toml::Value::try_from(&spec) {
        Ok(toml::Value::Table(d)) => Some(d),
        _ => None,
    }
}

/// `over` laid on `base`, tables merged key by key.
fn overlay(mut base: toml::Table, over: toml::Table) -> toml::Table {
    for (k, v) in over {
        match (base.remove(&k), v) {
            // A table that names its rule (`repeat = { rule = "once" }`)
            // replaces the one it overrides: another rule's keys would
            // not fit it.
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) if !o.contains_key("rule") => {
                base.insert(k, toml::Value::Table(overlay(b, o)));
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
    base
}

/// Scales a test's duration (a ping: its count) by `scale`.
fn scale_test(spec: &mut TestSpec, scale: f64) {
    if scale == 1.0 {
        return;
    }
    let scaled = |d: Duration| Duration::from_secs_f64((d.as_secs_f64() * scale).max(1.0));
    match spec {
        TestSpec::Tcp(s) => s.time = scaled(s.time),
        TestSpec::Udp(s) => s.time = scaled(s.time),
        TestSpec::Ping(s) => s.count = ((s.count as f64 * scale).round() as u64).max(1),
        TestSpec::Http(s) => s.time = scaled(s.time),
        // A trace is as long as its path: nothing to scale.
        TestSpec::Trace(_) => {}
    }
}

/// Scales the times of a QoS method's trials by `scale` (other methods
/// run as their spec says: a search or a sweep is as long as it needs).
fn scale_method(spec: &mut MethodSpec, scale: f64) {
    if scale == 1.0 {
        return;
    }
    let scaled = |d: Duration| Duration::from_secs_f64((d.as_secs_f64() * scale).max(1.0));
    match spec {
        MethodSpec::QosScenario(s) => {
            s.udp_foreground.time = scaled(s.udp_foreground.time);
            s.tcp_foreground.time = scaled(s.tcp_foreground.time);
        }
        MethodSpec::QosCheck(s) => {
            s.probe_time = scaled(s.probe_time);
            s.shaping_time = scaled(s.shaping_time);
        }
        _ => {}
    }
}

fn default_name(body: &StepBody, from: &str, to: &str) -> String {
    match body {
        StepBody::Test(t) => {
            let dir = match t {
                TestSpec::Tcp(s) => Some(s.direction),
                TestSpec::Udp(s) => Some(s.direction),
                TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => None,
            };
            let arrow = match dir {
                Some(sonde_model::Direction::Reverse) => format!("{to} to {from}"),
                Some(sonde_model::Direction::Bidir) => format!("{from} and {to} both ways"),
                _ => format!("{from} to {to}"),
            };
            format!("{} {arrow}", t.kind().name())
        }
        StepBody::Method(m) => format!("{} {from} to {to}", m.kind().name()),
    }
}
