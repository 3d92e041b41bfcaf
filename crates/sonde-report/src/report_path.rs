//! A report's path tables (004 Table 2): for each group of traces, the
//! latest trace hop by hop, as traceroute prints it (the hop, the address
//! that answered, each probe's round trip, `*` for none) with the class
//! the probe arrived with there; and under it, how many traces the group
//! holds and where the route changed between them.

use crate::report_group::Group;
use crate::table::{Cell, Column, Table};
use crate::trace_text::dscp_name;
use sonde_model::{route_change, TestResult, TestSpec, TraceFigures, TraceSpec};
use std::net::IpAddr;

/// When `r` started, to the second (UTC).
fn stamp(r: &TestResult) -> String {
    sonde_model::clock::rfc3339((crate::report_group::secs(r) * 1e9) as i64)
}

/// The traces of `g`, oldest first, each with its spec.
fn traces(g: &Group) -> Vec<(&TestResult, &TraceSpec, &TraceFigures)> {
    let mut v: Vec<_> = g
        .results
        .iter()
        .filter_map(|r| match (&r.spec, &r.trace) {
            (TestSpec::Trace(s), Some(t)) => Some((r, s, t)),
            _ => None,
        })
        .collect();
    v.sort_by_key(|(r, _, _)| r.start);
    v
}

/// Where the route moved between consecutive traces of one target: "hop
/// N at STAMP" each, or `None` when it never did.
fn changes(traces: &[(&TestResult, &TraceSpec, &TraceFigures)]) -> Vec<String> {
    let mut out = Vec::new();
    for pair in traces.windows(2) {
        let ((_, _, a), (r, s, b)) = (pair[0], pair[1]);
        if a.target != b.target {
            continue;
        }
        if let Some(c) = route_change(&a.route(), a.arrived, &b.route(), b.arrived, s.first_hop) {
            out.push(format!("hop {} at {}", c.at_hop, stamp(r)));
        }
    }
    out
}

/// The addresses that answered a hop, the most frequent first.
fn addresses(h: &sonde_model::TraceHop) -> String {
    let mut seen: Vec<IpAddr> = h.address().into_iter().collect();
    for p in h.probes.iter().flatten() {
        if !seen.contains(&p.from) {
            seen.push(p.from);
        }
    }
    if seen.is_empty() {
        "*".into()
    } else {
        seen.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The path table of `g`'s latest trace; `None` when `g` holds no trace.
fn path_table(g: &Group) -> Option<Table> {
    let all = traces(g);
    let &(last, spec, t) = all.last()?;
    let probes = t.hops.iter().map(|h| h.probes.len()).max().unwrap_or(0);
    let mut columns = vec![Column::new("hop", ""), Column::new("address", "")];
    for k in 1..=probes {
        columns.push(Column::new(&format!("probe {k}"), "ms"));
    }
    columns.push(Column::new("DSCP arrived", ""));
    let rows = t
        .hops
        .iter()
        .map(|h| {
            let mut row = vec![Cell::num(f64::from(h.ttl), 0), Cell::text(addresses(h))];
            for k in 0..probes {
                row.push(match h.probes.get(k) {
                    Some(Some(p)) => Cell::num(p.rtt_ms, 3),
                    Some(None) => Cell::text("*"),
                    None => Cell::Empty,
                });
            }
            let dscp = h.arrived_dscp().map_or(Cell::Empty, |d| {
                let mut s = dscp_name(d);
                if t.dscp_changed_at == Some(h.ttl) {
                    s += &format!(" (changed from {})", dscp_name(t.dscp_sent));
                }
                Cell::text(s)
            });
            row.push(dscp);
            row
        })
        .collect();
    let moved = changes(&all);
    let mut note = format!(
        "the latest of {} trace{} ({} hops max, {} probe{} each, DSCP {} sent); ",
        all.len(),
        if all.len() == 1 { "" } else { "s" },
        spec.max_hops,
        spec.queries,
        if spec.queries == 1 { "" } else { "s" },
        dscp_name(t.dscp_sent),
    );
    note += &if all.len() < 2 {
        "one trace: no route to compare".to_string()
    } else if moved.is_empty() {
        "the route did not change between them".to_string()
    } else {
        format!("the route changed at {}", moved.join("; "))
    };
    if !t.arrived {
        note += "; the target did not answer";
    }
    if let Some(m) = t.path_mtu {
        note += &format!("; path MTU {m} bytes");
    }
    Some(Table {
        title: format!(
            "{}: the path to {} ({}), traced {}",
            g.name,
            spec.host,
            t.target,
            stamp(last)
        ),
        columns,
        rows,
        note: Some(note),
    })
}

/// A path table for every group that holds traces, in the groups' order.
pub fn path_tables(groups: &[Group]) -> Vec<Table> {
    groups.iter().filter_map(path_table).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{HostEnv, PeerKind, TestEnv, Timestamp};
    use std::time::{Duration, UNIX_EPOCH};

    const TARGET: &str = "2001:db8:9::2";

    /// A trace of `route` (`None`: a silent hop) to TARGET at `at_s`.
    fn trace(at_s: u64, route: &[Option<&str>]) -> TestResult {
        let spec = TraceSpec {
            host: "gr.example".into(),
            ..TraceSpec::default()
        };
        let mut r = TestResult::new(
            TestSpec::Trace(spec),
            TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
            Timestamp(UNIX_EPOCH + Duration::from_secs(at_s)),
        );
        let route: Vec<Option<IpAddr>> = route
            .iter()
            .map(|a| a.map(|a| a.parse().unwrap()))
            .collect();
        r.trace = Some(TraceFigures::of_route(TARGET.parse().unwrap(), &route));
        r
    }

    fn group(results: Vec<TestResult>) -> Group {
        Group {
            name: "trace to gr.example".into(),
            results,
            direction: None,
        }
    }

    #[test]
    fn the_latest_trace_is_drawn_hop_by_hop_and_the_route_changes_are_named() {
        let g = group(vec![
            // Given out of order: the table takes the latest by its start.
            trace(
                200,
                &[Some("2001:db8:1::1"), Some("2001:db8:3::1"), Some(TARGET)],
            ),
            trace(
                100,
                &[Some("2001:db8:1::1"), Some("2001:db8:2::1"), Some(TARGET)],
            ),
            trace(300, &[Some("2001:db8:1::1"), None, Some(TARGET)]),
        ]);
        let t = path_table(&g).expect("a path table");
        assert_eq!(
            t.title,
            "trace to gr.example: the path to gr.example (2001:db8:9::2), traced 1970-01-01T00:05:00Z"
        );
        let heads: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(heads, ["hop", "address", "probe 1", "DSCP arrived"]);
        let shown: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|r| r.iter().map(Cell::shown).collect())
            .collect();
        assert_eq!(shown[0][..3], ["1", "2001:db8:1::1", "1.000"]);
        assert_eq!(shown[1][..3], ["2", "*", "*"]);
        assert_eq!(shown[2][..3], ["3", TARGET, "3.000"]);
        // 100 → 200 moved at hop 2; 200 → 300 is a silent hop 2, which
        // is no change.
        let note = t.note.unwrap();
        assert!(
            note.contains("the latest of 3 traces")
                && note.contains("the route changed at hop 2 at 1970-01-01T00:03:20Z")
                && !note.contains("00:05:00"),
            "{note}"
        );
    }

    #[test]
    fn one_trace_says_there_is_nothing_to_compare_and_other_tests_make_no_table() {
        let t = path_table(&group(vec![trace(100, &[Some(TARGET)])])).unwrap();
        assert!(t.note.unwrap().contains("one trace: no route to compare"));
        let mut ping = trace(100, &[Some(TARGET)]);
        ping.trace = None;
        assert!(path_tables(&[group(vec![ping])]).is_empty());
    }
}
