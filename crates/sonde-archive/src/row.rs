//! What the archive indexes of a result: its columns, and its interval
//! series, taken from the [`TestResult`] it keeps whole beside them.

use crate::sql::Value;
use sonde_model::method::family_used;
use sonde_model::{Direction, Figures, IpFamily, Metric, TestResult, TestSpec, Timestamp};
use std::time::UNIX_EPOCH;

/// Nanoseconds since the Unix epoch (0 before it).
pub fn ns(t: &Timestamp) -> i64 {
    t.0.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Forward => "forward",
        Direction::Reverse => "reverse",
        Direction::Bidir => "bidir",
    }
}

fn target_of(r: &TestResult) -> String {
    r.spec.host().to_string()
}

pub(crate) fn direction_of(r: &TestResult) -> Option<&'static str> {
    match &r.spec {
        TestSpec::Tcp(s) => Some(direction_name(s.direction)),
        TestSpec::Udp(s) => Some(direction_name(s.direction)),
        TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => None,
    }
}

pub(crate) fn family_name(f: IpFamily) -> Option<&'static str> {
    match f {
        IpFamily::V6 => Some("v6"),
        IpFamily::V4 => Some("v4"),
        IpFamily::Any => None,
    }
}

fn real(v: Option<f64>) -> Value {
    Value::Real(v)
}

/// Where a result belongs: a campaign's run, a method; and the labels it
/// is kept with (a campaign's and its step's), for `stats --by label:KEY`.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct Placement {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method_id: Option<String>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, String>,
}

/// The `results` row of `r`, in the column order of [`result_insert`].
pub fn result_row(r: &TestResult, at: &Placement, doc: String) -> Vec<Value> {
    let h: Figures = r.summary.overall().unwrap_or_default();
    let source = r.env.client.hostname.clone();
    vec![
        Value::Text(Some(r.id.to_string())),
        Value::Text(Some(r.spec.kind().name().to_string())),
        Value::Text(Some(source).filter(|s| !s.is_empty())),
        Value::Text(Some(target_of(r))),
        Value::Text(family_name(family_used(r)).map(str::to_string)),
        Value::Text(direction_of(r).map(str::to_string)),
        Value::Int(Some(ns(&r.start))),
        Value::Real(Some(r.duration_s)),
        Value::Bool(r.interrupted),
        Value::Text(at.campaign.clone()),
        Value::Text(at.run_id.clone()),
        Value::Text(at.method_id.clone()),
        real(h.throughput_bps.map(|v| v as f64)),
        real(h.loss_pct),
        real(h.pdr_pct),
        real(h.jitter_ms),
        real(h.rtt_ms.as_ref().map(|r| r.p50)),
        Value::Text(Some(doc)),
        Value::Text(r.env.source.map(|a| a.to_string())),
        Value::Text(r.env.target.map(|a| a.to_string())),
    ]
}

/// The statement that writes `rows` results rows (in the column order of
/// [`result_row`]) and names those that were new: an id already kept is
/// left as it is.
pub fn result_insert(rows: usize) -> String {
    format!(
        "INSERT INTO results (id, test, source, target, family, direction, start_ns, \
         duration_s, interrupted, campaign, run_id, method_id, throughput_bps, loss_pct, \
         pdr_pct, jitter_ms, rtt_p50_ms, doc, source_addr, target_addr) VALUES {} ON CONFLICT DO \
         NOTHING RETURNING id",
        value_rows(rows, 20)
    )
}

/// `rows` rows of `columns` numbered parameters for a multi-row `VALUES`:
/// `($1, $2), ($3, $4)`.
pub fn value_rows(rows: usize, columns: usize) -> String {
    let mut out = String::with_capacity(rows * columns * 6);
    for r in 0..rows {
        if r > 0 {
            out.push_str(", ");
        }
        out.push('(');
        for c in 1..=columns {
            if c > 1 {
                out.push_str(", ");
            }
            out.push('$');
            out.push_str(&(r * columns + c).to_string());
        }
        out.push(')');
    }
    out
}

/// The `intervals` column (or expression) of `metric`, if the intervals
/// keep it: goodput, loss (and PDR from it), jitter and the RTT median.
pub fn interval_column(metric: Metric) -> Option<&'static str> {
    match metric {
        Metric::ThroughputBps => Some("throughput_bps"),
        Metric::LossPct => Some("loss_pct"),
        Metric::PdrPct => Some("100.0 - loss_pct"),
        Metric::JitterMs => Some("jitter_ms"),
        Metric::RttP50Ms => Some("rtt_ms"),
        _ => None,
    }
}

/// The statement that writes `rows` interval rows, in the column order of
/// [`interval_rows`]. An interval kept already is left as it is: on
/// PostgreSQL intervals are kept by month of their own time, not their
/// result's, so the intervals of a result that began at a month's end
/// outlive its month's retention, and the result sent again finds them.
pub fn interval_insert(rows: usize) -> String {
    format!(
        "INSERT INTO intervals (result_id, direction, start_s, end_s, at_ns, omitted, \
         throughput_bps, loss_pct, jitter_ms, rtt_ms, size_bytes) VALUES {} ON CONFLICT DO \
         NOTHING",
        value_rows(rows, 11)
    )
}

/// The columns of a `result_figures` row ([`figure_rows`]) its key is
/// made of: result, direction, metric.
pub const FIGURE_KEY: &[usize] = &[0, 1, 2];

/// `rows` without any whose `key` columns are those of a row before it:
/// what `ON CONFLICT DO NOTHING` would have kept of them.
pub fn first_of_each<R: AsRef<[Value]>>(rows: Vec<R>, key: &[usize]) -> Vec<R> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let k: Vec<KeyPart> = key
            .iter()
            .map(|&i| KeyPart::of(r.as_ref().get(i)))
            .collect();
        if seen.insert(k) {
            out.push(r);
        }
    }
    out
}

/// A key column's value, comparable and hashable as the index compares
/// it: a real by its bits, with every zero one and every NaN one.
#[derive(PartialEq, Eq, Hash)]
enum KeyPart {
    Text(Option<String>),
    Int(Option<i64>),
    Real(Option<u64>),
    Bool(bool),
    Missing,
}

impl KeyPart {
    fn of(v: Option<&Value>) -> Self {
        match v {
            Some(Value::Text(t)) => KeyPart::Text(t.clone()),
            Some(Value::Int(i)) => KeyPart::Int(*i),
            Some(Value::Real(r)) => KeyPart::Real(r.map(|x| {
                if x.is_nan() {
                    f64::NAN.to_bits()
                } else if x == 0.0 {
                    0
                } else {
                    x.to_bits()
                }
            })),
            Some(Value::Bool(b)) => KeyPart::Bool(*b),
            // An array is a parameter of a batch, never a row's cell.
            Some(Value::Texts(_) | Value::Ints(_) | Value::Reals(_)) | None => KeyPart::Missing,
        }
    }
}

/// The statement that writes `rows` figure rows, in the column order of
/// [`figure_rows`], of results new in this transaction: none of their
/// rows can be there already (they are kept by their result's month, and
/// go with it), so no row is first looked for in the unique index (as
/// `ON CONFLICT` does, a second descent of it per row); a key twice in
/// one result is left out before ([`first_of_each`]).
pub fn figure_insert(rows: usize) -> String {
    format!(
        "INSERT INTO result_figures (result_id, direction, metric, value, start_ns) VALUES {}",
        value_rows(rows, 5)
    )
}

/// [`figure_insert`] for results kept before: a figure one of them has
/// already is left as it is.
pub fn figure_insert_kept(rows: usize) -> String {
    format!("{} ON CONFLICT DO NOTHING", figure_insert(rows))
}

/// The direction name of a result's overall figures (a bidirectional
/// test's both directions together): what alerts and the mesh grid read.
/// Stats, charts and heat maps read the directions' own rows.
pub const OVERALL: &str = "overall";

/// The `result_figures` rows of `r` for `metrics`, in the column order of
/// [`figure_insert`]: one per metric measured in each direction (never
/// their sum), and one per metric of the overall figures ([`OVERALL`]).
pub fn figure_rows(r: &TestResult, metrics: &[Metric]) -> Vec<[Value; 5]> {
    let overall = r.summary.overall();
    let directions = r
        .summary
        .by_direction()
        .into_iter()
        .chain(overall.as_ref().map(|f| (OVERALL, f)));
    let mut rows = Vec::new();
    for (direction, f) in directions {
        for m in metrics {
            if let Some(v) = m.of(f).filter(|v| v.is_finite()) {
                rows.push([
                    Value::Text(Some(r.id.to_string())),
                    Value::Text(Some(direction.to_string())),
                    Value::Text(Some(m.name().to_string())),
                    Value::Real(Some(v)),
                    Value::Int(Some(ns(&r.start))),
                ]);
            }
        }
    }
    rows
}

/// Parameters in one multi-row statement at most: well under SQLite's
/// (32,766) and PostgreSQL's (65,535) limits, and few enough that a
/// statement stays small to parse.
const PARAMS_PER_STATEMENT: usize = 4000;

/// Writes `rows` in `tx` with the statement `insert(n)` for `n` rows, as
/// many rows to a statement as [`PARAMS_PER_STATEMENT`] allows: one round
/// trip per chunk, not per row.
pub fn put_rows<R: AsRef<[Value]>>(
    tx: &mut dyn crate::sql::Sql,
    insert: impl Fn(usize) -> String,
    rows: &[R],
) -> Result<(), crate::ArchiveError> {
    let Some(first) = rows.first() else {
        return Ok(());
    };
    let per = (PARAMS_PER_STATEMENT / first.as_ref().len().max(1)).max(1);
    for chunk in rows.chunks(per) {
        let params: Vec<Value> = chunk
            .iter()
            .flat_map(|r| r.as_ref().iter().cloned())
            .collect();
        tx.execute(&insert(chunk.len()), &params)?;
    }
    Ok(())
}

/// The statement that writes `rows` label rows (result id, key, value,
/// the result's start) of results new in this transaction (as
/// [`figure_insert`]; a placement's labels are a map, each key once).
pub fn label_insert(rows: usize) -> String {
    format!(
        "INSERT INTO result_labels (result_id, key, value, start_ns) VALUES {}",
        value_rows(rows, 4)
    )
}

/// The `intervals` rows of `r`: one per interval and direction measured
/// (a ping's round trips as `round_trip`).
pub fn interval_rows(r: &TestResult) -> Vec<Vec<Value>> {
    let start = ns(&r.start);
    let mut rows = Vec::new();
    for i in &r.intervals {
        let at = start.saturating_add((i.start_s * 1e9) as i64);
        let mut push = |dir: &str, f: &Figures| {
            rows.push(vec![
                Value::Text(Some(r.id.to_string())),
                Value::Text(Some(dir.to_string())),
                Value::Real(Some(i.start_s)),
                Value::Real(Some(i.end_s)),
                Value::Int(Some(at)),
                Value::Bool(i.omitted),
                real(f.throughput_bps.map(|v| v as f64)),
                real(f.loss_pct),
                real(f.jitter_ms),
                real(f.rtt_ms.as_ref().map(|r| r.p50)),
                // 0: the interval has no size of its own.
                Value::Int(Some(i64::from(i.size_bytes.unwrap_or(0)))),
            ]);
        };
        for f in &i.sums {
            if let Some(d) = f.direction {
                push(direction_name(d), f);
            }
        }
        if let Some(f) = &i.round_trip {
            push("round_trip", f);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_of_each_keeps_the_first_row_of_a_key_as_the_index_compares_it() {
        let row = |id: &str, start: f64, value: f64| {
            vec![
                Value::Text(Some(id.into())),
                Value::Real(Some(start)),
                Value::Real(Some(value)),
            ]
        };
        let rows = vec![
            row("a", 0.0, 1.0),
            row("a", -0.0, 2.0),
            row("a", 1.0, 3.0),
            row("b", 0.0, 4.0),
            row("a", f64::NAN, 5.0),
            row("a", -f64::NAN, 6.0),
            row("a", 1.0, 7.0),
        ];
        let kept: Vec<f64> = first_of_each(rows, &[0, 1])
            .iter()
            .filter_map(|r| r[2].real())
            .collect();
        assert_eq!(kept, [1.0, 3.0, 4.0, 5.0]);
    }
}
