//! Results by month: an archive of schema 17 moved into monthly
//! partitions on PostgreSQL (every row kept, each in its month), months
//! made ahead, and retention dropping whole months (and only them) on
//! both backends.

mod common;
use common::{back_to_17, on_both, raw};
use sonde_archive::{Month, Placement, Store};
use sonde_model::{
    Direction, Figures, HostEnv, Interval, PeerKind, Summary, TcpSpec, TestEnv, TestResult,
    TestSpec, Timestamp,
};
use std::time::{Duration, UNIX_EPOCH};

/// A TCP result at `ns` with three intervals.
fn tcp(host: &str, ns: i64) -> TestResult {
    let spec = TcpSpec {
        host: host.into(),
        ..TcpSpec::default()
    };
    let mut r = TestResult::new(
        TestSpec::Tcp(spec),
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        Timestamp(UNIX_EPOCH + Duration::from_nanos(ns as u64)),
    );
    let f = Figures {
        direction: Some(Direction::Forward),
        throughput_bps: Some(9_000_000),
        ..Figures::default()
    };
    r.intervals = (0..3)
        .map(|i| Interval {
            start_s: f64::from(i),
            end_s: f64::from(i + 1),
            omitted: false,
            size_bytes: None,
            streams: vec![f.clone()],
            sums: vec![f.clone()],
            round_trip: None,
        })
        .collect();
    r.summary = Summary {
        forward: Some(f),
        ..Summary::default()
    };
    r
}

fn labelled(step: &str) -> Placement {
    Placement {
        campaign: Some("mesh".into()),
        labels: [("step".to_string(), step.to_string())].into(),
        ..Placement::default()
    }
}

/// Rows of each table the results live in, of results in `[lo, hi)`.
fn rows_between(location: &str, lo: i64, hi: i64) -> [i64; 4] {
    let of = |t: &str| {
        common::count(
            location,
            &format!(
                "SELECT COUNT(*) FROM {t} WHERE result_id IN (SELECT id FROM results WHERE \
                 start_ns >= {lo} AND start_ns < {hi})"
            ),
        )
    };
    [
        common::count(
            location,
            &format!("SELECT COUNT(*) FROM results WHERE start_ns >= {lo} AND start_ns < {hi}"),
        ),
        of("intervals"),
        of("result_figures"),
        of("result_labels"),
    ]
}

/// Results in four months (one of them 1970's, which no partition is
/// made for), kept the way `sonde serve` keeps them.
fn four_months(s: &mut Store) -> Vec<(Month, TestResult)> {
    let now = Month::now();
    let months = [now.plus(-3), now.plus(-1), now, Month::of_ns(5_000_000_000)];
    let mut kept = Vec::new();
    for (i, m) in months.into_iter().enumerate() {
        // Two results a month, the second an hour into it.
        for k in 0..2 {
            let r = tcp(
                &format!("h{i}"),
                m.start_ns() + 1_000_000_000 + k * 3_600_000_000_000,
            );
            assert!(s.put_result(&r, &labelled(&format!("s{i}"))).unwrap());
            kept.push((m, r));
        }
    }
    kept
}

#[test]
fn retention_drops_whole_months_and_nothing_newer() {
    on_both("retention", |open, location| {
        let mut s = open();
        let kept = four_months(&mut s);
        // Months before the last were not made ahead: their results
        // wait in the default partition until the next upkeep makes
        // their months.
        let made = s.prepare_months().unwrap();
        if location.contains("schema=") {
            let now = Month::now();
            assert_eq!(made, [now.plus(-3)]);
        } else {
            assert!(made.is_empty());
        }
        let now = Month::now();
        let month_rows = |m: Month| rows_between(location, m.start_ns(), m.plus(1).start_ns());
        for (m, _) in &kept {
            assert_eq!(month_rows(*m), [2, 6, 4, 2], "{m} before retention");
        }
        if location.contains("schema=") {
            // Each result is in its month's partition; 1970's in the
            // default one.
            for (m, r) in &kept {
                let part: String = {
                    let schema = location.split_once("schema=").unwrap().1;
                    let mut c = common::admin();
                    c.batch_execute(&format!("SET search_path TO {schema}"))
                        .unwrap();
                    c.query_one(
                        "SELECT tableoid::regclass::TEXT FROM results WHERE id = $1",
                        &[&r.id.to_string()],
                    )
                    .unwrap()
                    .get(0)
                };
                let want = if m.year == 1970 {
                    "results_default".to_string()
                } else {
                    format!("results_p{:04}_{:02}", m.year, m.month)
                };
                assert_eq!(part, want);
            }
            // Last month, this one and the next two are there, and the months
            // of what was kept before them are made by the next upkeep,
            // which makes none twice.
            assert!(s.prepare_months().unwrap().is_empty());
        }

        let dropped = s.drop_months_before(now.plus(-1)).unwrap();
        assert!(
            dropped.months.contains(&now.plus(-3).to_string()),
            "{dropped:?}"
        );
        for (m, r) in &kept {
            let gone = *m < now.plus(-1);
            assert_eq!(s.get_result(r.id).unwrap().is_none(), gone, "{m}");
            let want = if gone { [0, 0, 0, 0] } else { [2, 6, 4, 2] };
            assert_eq!(month_rows(*m), want, "{m} after retention");
        }
        // Every row of what was dropped is gone, not only the results.
        for t in ["intervals", "result_figures", "result_labels"] {
            assert_eq!(
                common::count(
                    location,
                    &format!(
                        "SELECT COUNT(*) FROM {t} WHERE result_id NOT IN (SELECT id FROM results)"
                    )
                ),
                0,
                "{t}"
            );
        }
        // No path's latest result is one that was dropped.
        assert_eq!(
            common::count(
                location,
                "SELECT COUNT(*) FROM result_latest WHERE result_id NOT IN (SELECT id FROM \
                 results)"
            ),
            0
        );
        // A second time, nothing is left to drop.
        assert_eq!(s.drop_months_before(now.plus(-1)).unwrap().months.len(), 0);
        // What is kept after still goes in, in its month.
        let r = tcp("later", now.start_ns() + 7_200_000_000_000);
        assert!(s.put_result(&r, &labelled("s9")).unwrap());
        assert!(!s.put_result(&r, &labelled("s9")).unwrap(), "kept once");
        assert_eq!(month_rows(now), [3, 9, 6, 3]);
    });
}

#[test]
fn retention_keeps_what_an_agent_still_owes_and_takes_route_changes_along() {
    on_both("owed", |open, location| {
        let mut s = open();
        let kept = four_months(&mut s);
        let now = Month::now();
        let (month, old) = &kept[0];
        assert_eq!(*month, now.plus(-3));
        // A route change found at the oldest result (a trace's, as
        // `sonde trace` keeps them; on SQLite it points at its result).
        raw(
            location,
            &format!(
                "INSERT INTO path_changes (result_id, previous_id, source_addr, target_addr, \
                 at_ns, at_hop, route_before, route_after) VALUES ('{}', 'x', NULL, '::1', {}, 1, \
                 '[]', '[]')",
                old.id,
                month.start_ns() + 1_000_000_000
            ),
        );
        // Everything queued for a destination that has not taken it.
        assert!(s.forward_to("central").unwrap());
        let dropped = s.drop_months_before(now.plus(-1)).unwrap();
        if location.contains("schema=") {
            // A central archive drops its months whole.
            assert!(s.get_result(old.id).unwrap().is_none());
        } else {
            // An agent keeps what it still owes.
            assert_eq!(dropped.months, Vec::<String>::new());
            assert!(s.get_result(old.id).unwrap().is_some());
            assert_eq!(
                common::count(location, "SELECT COUNT(*) FROM path_changes"),
                1
            );
        }
        // Delivered (the queue gone), it goes, its route change with it.
        s.drop_queue("central").unwrap();
        s.drop_months_before(now.plus(-1)).unwrap();
        assert!(s.get_result(old.id).unwrap().is_none());
        assert_eq!(
            common::count(location, "SELECT COUNT(*) FROM path_changes"),
            0
        );
        for (m, r) in &kept {
            assert_eq!(
                s.get_result(r.id).unwrap().is_some(),
                *m >= now.plus(-1),
                "{m}"
            );
        }
    });
}

#[test]
fn an_archive_of_schema_17_moves_into_months_with_every_row() {
    on_both("to_months", |open, location| {
        // The archive as schema 17 left it, with results kept by this
        // build's store, then taken back: figures and labels without
        // their start, and (PostgreSQL) one table each, not partitioned.
        let kept = {
            let mut s = open();
            four_months(&mut s)
        };
        let before: Vec<[i64; 4]> = kept
            .iter()
            .map(|(m, _)| rows_between(location, m.start_ns(), m.plus(1).start_ns()))
            .collect();
        back_to_17(location);
        assert_eq!(
            common::count(location, "SELECT MAX(version) FROM sonde_schema"),
            17
        );

        let mut s = open();
        assert_eq!(
            s.schema_version().unwrap(),
            i64::from(sonde_archive::schema::current())
        );
        let after: Vec<[i64; 4]> = kept
            .iter()
            .map(|(m, _)| rows_between(location, m.start_ns(), m.plus(1).start_ns()))
            .collect();
        assert_eq!(after, before);
        for (_, r) in &kept {
            assert_eq!(s.get_result(r.id).unwrap().unwrap().id, r.id);
            assert_eq!(s.count_intervals(r.id).unwrap(), 3);
        }
        // Figures and labels carry their result's start.
        for t in ["result_figures", "result_labels"] {
            assert_eq!(
                common::count(
                    location,
                    &format!(
                        "SELECT COUNT(*) FROM {t} x JOIN results r ON r.id = x.result_id WHERE \
                         x.start_ns = r.start_ns"
                    )
                ),
                common::count(location, &format!("SELECT COUNT(*) FROM {t}")),
                "{t}"
            );
        }
        if location.contains("schema=") {
            assert_eq!(
                common::count(
                    location,
                    "SELECT COUNT(*) FROM pg_partitioned_table p JOIN pg_class c ON c.oid = \
                     p.partrelid WHERE c.relname IN ('results', 'intervals', 'result_figures', \
                     'result_labels') AND c.relnamespace = current_schema()::regnamespace"
                ),
                4
            );
            // Nothing but 1970 in the default partitions.
            assert_eq!(
                common::count(location, "SELECT COUNT(*) FROM results_default"),
                2
            );
        }
        // Retention works on what was moved.
        let now = Month::now();
        let dropped = s.drop_months_before(now).unwrap();
        assert!(dropped.months.contains(&now.plus(-1).to_string()));
        assert_eq!(common::count(location, "SELECT COUNT(*) FROM results"), 2);
    });
}

#[test]
fn a_result_sent_again_after_its_month_went_is_kept_again() {
    // A result that began a second before a month's end has an interval
    // in the next month: on PostgreSQL intervals are kept by their own
    // time, so that one outlives the month's retention. The result sent
    // again (an agent's outbox, an import) is kept again, not refused.
    on_both("again", |open, location| {
        let mut s = open();
        let next = Month::now().plus(-1);
        let r = tcp("edge", next.start_ns() - 1_500_000_000);
        assert!(s.put_result(&r, &labelled("edge")).unwrap());
        s.prepare_months().unwrap();
        s.drop_months_before(next).unwrap();
        assert_eq!(common::count(location, "SELECT COUNT(*) FROM results"), 0);
        assert!(s.put_result(&r, &labelled("edge")).unwrap());
        assert_eq!(s.get_result(r.id).unwrap().as_ref(), Some(&r));
        assert_eq!(s.count_intervals(r.id).unwrap(), 3);
    });
}
