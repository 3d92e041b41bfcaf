//! A path's route changes: when a trace is kept, its route is compared
//! with the trace before it on the same path (the same two addresses, the
//! same probes: a TCP trace may pass where ICMP does not), hop by hop with
//! unanswered hops as wildcards ([`sonde_model::route_change`]), a hop
//! the trace before got no answer from taken from an earlier one; a change
//! is a row of `path_changes`, which `sonde results changes` lists.
//!
//! A trace is compared with the one that started before it among those
//! kept by then: a trace that arrives late (a mesh backlog) is compared
//! with its own predecessor, and the one after it keeps the comparison it
//! was given when it came.

use crate::row::ns;
use crate::sql::{Sql, Value};
use crate::ArchiveError;
use sonde_model::{route_change, RouteChange, TestResult, TestSpec, TraceSpec};
use std::net::IpAddr;

/// Traces looked back through for one with the same probes.
const LOOK_BACK: i64 = 20;

/// One change, as kept: a route change (docs/trace.md, Path changes).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "PathChange")]
pub struct PathChangeRow {
    /// The trace that found the new route, and the one before it.
    pub result_id: String,
    pub previous_id: String,
    pub source_addr: Option<String>,
    pub target_addr: String,
    /// When the new trace started (ns since the epoch).
    pub at_ns: i64,
    /// The first hop (TTL) that differs.
    pub at_hop: u8,
    /// Each hop's address, `None` where none answered.
    pub before: Vec<Option<IpAddr>>,
    pub after: Vec<Option<IpAddr>>,
}

/// Whether two traces probed alike: the same probes to the same port
/// from the same first hop (their routes are comparable).
fn alike(a: &TraceSpec, b: &TraceSpec) -> bool {
    a.proto == b.proto && a.port == b.port && a.first_hop == b.first_hop && !b.multipath
}

/// The change `r` (a trace just kept) makes to its path's route, if
/// any: compared with the latest trace before it on the same path.
fn change_of(
    tx: &mut dyn Sql,
    r: &TestResult,
) -> Result<Option<(String, RouteChange)>, ArchiveError> {
    let (TestSpec::Trace(spec), Some(figures), Some(target)) = (&r.spec, &r.trace, r.env.target)
    else {
        return Ok(None);
    };
    // A multipath trace's hops hold every interface its flows found: it
    // has no one route to compare (docs/trace.md, "Multipath").
    if r.interrupted || spec.multipath {
        return Ok(None);
    }
    let source = r.env.source.map(|s| s.to_string()).unwrap_or_default();
    let rows = tx.rows(
        "SELECT id, doc FROM results WHERE test = 'trace' AND target_addr = $1 \
         AND COALESCE(source_addr, '') = $2 AND start_ns < $3 AND id <> $4 \
         ORDER BY start_ns DESC LIMIT $5",
        &[
            Value::Text(Some(target.to_string())),
            Value::Text(Some(source)),
            Value::Int(Some(ns(&r.start))),
            Value::Text(Some(r.id.to_string())),
            Value::Int(Some(LOOK_BACK)),
        ],
    )?;
    // The route before: the latest alike trace's, each hop it got no
    // answer from filled with what an earlier one heard there (a silent
    // hop is not a change, and does not hide one that comes after it).
    let mut known: Option<(String, Vec<Option<IpAddr>>, bool)> = None;
    for row in rows {
        let (Some(id), Some(doc)) = (
            row.first().and_then(Value::text),
            row.get(1).and_then(Value::text),
        ) else {
            continue;
        };
        // A document that does not read is no route to compare with.
        let Ok(before) = sonde_model::load_result(doc) else {
            continue;
        };
        let (TestSpec::Trace(was), Some(had)) = (&before.spec, &before.trace) else {
            continue;
        };
        if before.interrupted || !alike(was, spec) {
            continue;
        }
        match &mut known {
            None => known = Some((id.to_string(), had.route(), had.arrived)),
            Some((_, route, _)) => {
                for (hop, earlier) in route.iter_mut().zip(had.route()) {
                    if hop.is_none() {
                        *hop = earlier;
                    }
                }
            }
        }
        if known
            .as_ref()
            .is_some_and(|(_, r, _)| r.iter().all(Option::is_some))
        {
            break;
        }
    }
    let Some((previous, route, arrived)) = known else {
        return Ok(None);
    };
    let change = route_change(
        &route,
        arrived,
        &figures.route(),
        figures.arrived,
        spec.first_hop,
    );
    Ok(change.map(|c| (previous, c)))
}

/// Keeps the change `r` makes to its path's route, in the transaction
/// that keeps `r`; whether there was one.
pub fn record(tx: &mut dyn Sql, r: &TestResult) -> Result<bool, ArchiveError> {
    let Some((previous, c)) = change_of(tx, r)? else {
        return Ok(false);
    };
    let route = |hops: &[Option<IpAddr>]| serde_json::to_string(hops).unwrap_or_default();
    tx.execute(
        "INSERT INTO path_changes (result_id, previous_id, source_addr, target_addr, at_ns, \
         at_hop, route_before, route_after) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (result_id) DO NOTHING",
        &[
            Value::Text(Some(r.id.to_string())),
            Value::Text(Some(previous)),
            Value::Text(r.env.source.map(|s| s.to_string())),
            Value::Text(r.env.target.map(|t| t.to_string())),
            Value::Int(Some(ns(&r.start))),
            Value::Int(Some(i64::from(c.at_hop))),
            Value::Text(Some(route(&c.before))),
            Value::Text(Some(route(&c.after))),
        ],
    )?;
    Ok(true)
}

/// The changes kept, newest first; toward `target` only when given.
pub fn list(
    sql: &mut dyn Sql,
    target: Option<&str>,
    limit: i64,
) -> Result<Vec<PathChangeRow>, ArchiveError> {
    let rows = sql.rows(
        "SELECT result_id, previous_id, source_addr, target_addr, at_ns, at_hop, route_before, \
         route_after FROM path_changes WHERE ($1 = '' OR target_addr = $1) \
         ORDER BY at_ns DESC, result_id LIMIT $2",
        &[
            Value::Text(Some(target.unwrap_or("").to_string())),
            Value::Int(Some(limit.max(1))),
        ],
    )?;
    let route = |v: Option<&Value>| -> Vec<Option<IpAddr>> {
        v.and_then(Value::text)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    };
    Ok(rows
        .iter()
        .map(|row| PathChangeRow {
            result_id: row[0].text().unwrap_or_default().to_string(),
            previous_id: row[1].text().unwrap_or_default().to_string(),
            source_addr: row[2].text().map(str::to_string),
            target_addr: row[3].text().unwrap_or_default().to_string(),
            at_ns: row[4].int().unwrap_or(0),
            at_hop: u8::try_from(row[5].int().unwrap_or(0)).unwrap_or(0),
            before: route(row.get(6)),
            after: route(row.get(7)),
        })
        .collect())
}
