//! The latest result of each path (read from the columns, and kept as
//! results are stored for `/metrics`), pausing a campaign, and interface
//! samples, on both backends (a SQLite file and the PostgreSQL on this
//! machine).

mod common;
#[path = "latest/path_changes.rs"]
mod path_changes;
use common::{on_both, raw, UNDO_AFTER_11};
use sonde_archive::{Counters, InterfaceSample, PathLatest, Placement, ResultFilter};
use sonde_model::{
    Direction, Dscp, Figures, HostEnv, PeerKind, Summary, TcpSpec, TestEnv, TestResult, TestSpec,
    Timestamp,
};
use std::time::{Duration, UNIX_EPOCH};

fn tcp(host: &str, at_s: u64, bps: u64) -> TestResult {
    let spec = TcpSpec {
        host: host.into(),
        ..TcpSpec::default()
    };
    let mut r = TestResult::new(
        TestSpec::Tcp(spec),
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        Timestamp(UNIX_EPOCH + Duration::from_secs(at_s)),
    );
    r.summary = Summary {
        forward: Some(Figures {
            direction: Some(Direction::Forward),
            throughput_bps: Some(bps),
            ..Figures::default()
        }),
        ..Summary::default()
    };
    r
}

fn step(name: &str, from: &str, to: &str) -> Placement {
    Placement {
        campaign: Some("mesh".into()),
        labels: [
            ("step".to_string(), name.to_string()),
            ("from".to_string(), from.to_string()),
            ("to".to_string(), to.to_string()),
        ]
        .into(),
        ..Placement::default()
    }
}

#[test]
fn each_path_keeps_its_newest_result_with_its_endpoints() {
    on_both("latest", |open, _| {
        let mut s = open();
        let old = tcp("b.example", 1_000, 1);
        let new = tcp("b.example", 2_000, 2);
        let other = tcp("c.example", 1_500, 3);
        s.put_result(&old, &step("ab", "a", "b")).unwrap();
        s.put_result(&new, &step("ab", "a", "b")).unwrap();
        s.put_result(&other, &Placement::default()).unwrap();
        let rows = s.latest_per_path(&ResultFilter::default(), 1000).unwrap();
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].id, new.id.to_string());
        assert_eq!(rows[0].throughput_bps, Some(2.0));
        assert_eq!(rows[0].from.as_deref(), Some("a"));
        assert_eq!(rows[0].to.as_deref(), Some("b"));
        assert_eq!(rows[0].step.as_deref(), Some("ab"));
        assert_eq!(rows[1].id, other.id.to_string());
        assert_eq!(rows[1].from, None);
        // Looking at the newest result only, the older path is not seen.
        assert_eq!(
            s.latest_per_path(&ResultFilter::default(), 1)
                .unwrap()
                .len(),
            1
        );
    });
}

fn marked(mut r: TestResult, dscp: u8) -> TestResult {
    if let TestSpec::Tcp(s) = &mut r.spec {
        s.dscp = Dscp::new(dscp);
    }
    r
}

/// `(target, dscp, result id, throughput)` of each path `path_latest`
/// keeps, most recent first.
fn kept(s: &mut sonde_archive::Store) -> Vec<(String, u8, String, Option<f64>)> {
    s.path_latest(100)
        .unwrap()
        .into_iter()
        .map(|p| {
            let bps = p.figures.get(&sonde_model::Metric::ThroughputBps).copied();
            (p.target, p.dscp, p.result_id, bps)
        })
        .collect()
}

#[test]
fn each_paths_latest_figures_are_kept_as_results_are_stored() {
    on_both("pathlatest", |open, _| {
        let mut s = open();
        let new = tcp("b.example", 2_000, 16);
        let old = tcp("b.example", 1_000, 8);
        let ef = marked(tcp("b.example", 1_500, 24), 46);
        let other = tcp("c.example", 500, 32);
        // Stored out of order: a backlog forwarded late never replaces a
        // newer figure.
        for r in [&new, &old, &ef, &other] {
            s.put_result(r, &Placement::default()).unwrap();
        }
        // A method's trial is not its path's latest.
        let trial = tcp("c.example", 3_000, 64);
        let in_method = Placement {
            method_id: Some("m1".into()),
            ..Placement::default()
        };
        s.put_result(&trial, &in_method).unwrap();
        let id = |r: &TestResult| r.id.to_string();
        assert_eq!(
            kept(&mut s),
            [
                ("b.example".to_string(), 0, id(&new), Some(16.0)),
                ("b.example".to_string(), 46, id(&ef), Some(24.0)),
                ("c.example".to_string(), 0, id(&other), Some(32.0)),
            ]
        );
        // The row is the one the result's own labels make.
        let all = s.path_latest(100).unwrap();
        assert_eq!(all[0], PathLatest::of(&new)[0]);
        assert_eq!(all[0].direction, "forward");
        assert_eq!(s.path_latest(1).unwrap().len(), 1, "the limit holds");
        // A newer result replaces its path's row, in another process too.
        let newer = tcp("c.example", 4_000, 40);
        open().put_result(&newer, &Placement::default()).unwrap();
        assert_eq!(
            kept(&mut s)[0],
            ("c.example".into(), 0, id(&newer), Some(40.0))
        );
    });
}

/// A path measured once, long ago, among many newer results of another.
fn quiet_and_busy(s: &mut sonde_archive::Store) -> (TestResult, TestResult) {
    let quiet = tcp("quiet.example", 1_000, 1);
    s.put_result(&quiet, &step("q", "a", "quiet")).unwrap();
    let mut busy = quiet.clone();
    for i in 0..30 {
        busy = tcp("busy.example", 2_000 + i, 2);
        s.put_result(&busy, &step("b", "a", "busy")).unwrap();
    }
    // Kept late, started early: not the busy path's latest.
    let late = tcp("busy.example", 1_500, 3);
    s.put_result(&late, &step("b", "a", "busy")).unwrap();
    (quiet, busy)
}

#[test]
fn every_paths_latest_is_found_however_many_newer_results_others_have() {
    on_both("every", |open, _| {
        let mut s = open();
        let (quiet, busy) = quiet_and_busy(&mut s);
        // Ten paths at most, not the ten newest results: both paths.
        let rows = s.latest_per_path(&ResultFilter::default(), 10).unwrap();
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, [busy.id.to_string(), quiet.id.to_string()]);
        // Filtered on what names a path, too.
        let tcp_only = ResultFilter {
            test: Some("tcp".into()),
            ..ResultFilter::default()
        };
        assert_eq!(s.latest_per_path(&tcp_only, 10).unwrap().len(), 2);
        // A campaign or a time is not part of a path: those look through
        // the newest results they select, as many as asked.
        let in_campaign = ResultFilter {
            campaign: Some("mesh".into()),
            ..ResultFilter::default()
        };
        let rows = s.latest_per_path(&in_campaign, 10).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].id, busy.id.to_string());
        assert_eq!(s.latest_per_path(&in_campaign, 100).unwrap().len(), 2);
    });
}

#[test]
fn an_archive_from_before_result_latest_is_filled_from_every_result() {
    on_both("fill15", |open, location| {
        let mut s = open();
        let (quiet, busy) = quiet_and_busy(&mut s);
        drop(s);
        // As schema 14 left it.
        common::back_to_17(location);
        raw(
            location,
            "DROP TABLE result_latest; DELETE FROM sonde_schema WHERE version >= 15;",
        );
        let mut s = open();
        assert_eq!(
            s.schema_version().unwrap(),
            i64::from(sonde_archive::schema::current())
        );
        let rows = s.latest_per_path(&ResultFilter::default(), 10).unwrap();
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, [busy.id.to_string(), quiet.id.to_string()]);
        // Emptied (a filling cut short): filled again on opening.
        drop(s);
        raw(location, "DELETE FROM result_latest;");
        let mut s = open();
        assert_eq!(
            s.latest_per_path(&ResultFilter::default(), 10)
                .unwrap()
                .len(),
            2
        );
    });
}

#[test]
fn an_archive_of_schema_18_gives_each_paths_latest_its_results_columns() {
    // 19 copies each path's latest result's columns beside it, from the
    // results kept: the grid reads the same rows as before, figures,
    // campaign and labels and all.
    on_both("fill19", |open, location| {
        let mut s = open();
        let (quiet, busy) = quiet_and_busy(&mut s);
        let before = s.latest_per_path(&ResultFilter::default(), 10).unwrap();
        let figures: Vec<Option<f64>> = before.iter().map(|r| r.throughput_bps).collect();
        assert_eq!(figures, [Some(2.0), Some(1.0)], "{before:?}");
        assert_eq!(before[0].id, busy.id.to_string());
        assert_eq!(before[1].id, quiet.id.to_string());
        assert_eq!(before[0].campaign.as_deref(), Some("mesh"));
        drop(s);
        common::back_to_18(location);
        let mut s = open();
        assert_eq!(
            s.schema_version().unwrap(),
            i64::from(sonde_archive::schema::current())
        );
        assert_eq!(
            s.latest_per_path(&ResultFilter::default(), 10).unwrap(),
            before
        );
        // And a newer result of a path replaces its row, columns and all.
        let newer = tcp("quiet.example", 9_000, 7);
        s.put_result(&newer, &step("q", "a", "quiet")).unwrap();
        let rows = s.latest_per_path(&ResultFilter::default(), 10).unwrap();
        assert_eq!(rows[0].id, newer.id.to_string());
        assert_eq!(rows[0].throughput_bps, Some(7.0));
        assert_eq!(rows[0].start_ns, 9_000_000_000_000);
    });
}

#[test]
fn an_archive_from_before_path_latest_is_filled_from_its_results() {
    on_both("backfill", |open, location| {
        let mut s = open();
        let old = tcp("b.example", 1_000, 8);
        let new = tcp("b.example", 2_000, 16);
        s.put_result(&old, &Placement::default()).unwrap();
        s.put_result(&new, &Placement::default()).unwrap();
        drop(s);
        // The archive as schema 8 left it: no table, results kept (and
        // none of the tables of the migrations after it).
        common::back_to_17(location);
        raw(
            location,
            &format!(
                "{UNDO_AFTER_11} DROP TABLE path_latest; DROP TABLE result_figures; DELETE FROM \
                 sonde_schema WHERE version >= 9;"
            ),
        );
        let mut s = open();
        assert_eq!(
            s.schema_version().unwrap(),
            i64::from(sonde_archive::schema::current())
        );
        assert_eq!(
            kept(&mut s),
            [("b.example".to_string(), 0, new.id.to_string(), Some(16.0))]
        );
    });
}

/// A bidirectional TCP test: `forward` bit/s one way, `reverse` the
/// other, and TCP's total (their sum) as sonde keeps it.
fn bidir(host: &str, at_s: u64, forward: u64, reverse: u64) -> TestResult {
    let mut r = tcp(host, at_s, forward);
    if let TestSpec::Tcp(s) = &mut r.spec {
        s.direction = Direction::Bidir;
    }
    let fig = |d, bps| Figures {
        direction: Some(d),
        throughput_bps: Some(bps),
        ..Figures::default()
    };
    r.summary.reverse = Some(fig(Direction::Reverse, reverse));
    r.summary.total = Some(fig(Direction::Bidir, forward + reverse));
    r
}

#[test]
fn a_bidirectional_result_is_a_path_per_direction_never_their_sum() {
    on_both("pathbidir", |open, location| {
        let mut s = open();
        s.put_result(&bidir("b.example", 1_000, 10, 5), &Placement::default())
            .unwrap();
        let dirs = |s: &mut sonde_archive::Store| -> Vec<(String, Option<f64>)> {
            let mut v: Vec<_> = s
                .path_latest(100)
                .unwrap()
                .into_iter()
                .map(|p| {
                    let bps = p.figures.get(&sonde_model::Metric::ThroughputBps).copied();
                    (p.direction, bps)
                })
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        let want = [
            ("forward".to_string(), Some(10.0)),
            ("reverse".to_string(), Some(5.0)),
        ];
        assert_eq!(dirs(&mut s), want);
        // A later one-way test of the path replaces its forward figure only.
        s.put_result(&tcp("b.example", 2_000, 12), &Placement::default())
            .unwrap();
        assert_eq!(
            dirs(&mut s),
            [
                ("forward".to_string(), Some(12.0)),
                ("reverse".to_string(), Some(5.0)),
            ]
        );
        drop(s);
        // An archive of schema 10 kept the sum under `bidir`: reopened,
        // the row is gone and the directions are filled from the results.
        common::back_to_17(location);
        raw(
            location,
            &format!(
                "{UNDO_AFTER_11} DELETE FROM path_latest; INSERT INTO path_latest (test, source, \
                 target, direction, family, dscp, result_id, start_ns, throughput_bps) VALUES \
                 ('tcp', '', 'b.example', 'bidir', '', 0, 'x', 1000000000000, 15); DELETE FROM \
                 sonde_schema WHERE version >= 11;"
            ),
        );
        let mut s = open();
        assert_eq!(
            dirs(&mut s),
            [
                ("forward".to_string(), Some(12.0)),
                ("reverse".to_string(), Some(5.0)),
            ]
        );
    });
}

#[test]
fn a_campaign_is_paused_and_resumed_by_name() {
    on_both("paused", |open, _| {
        let mut s = open();
        assert!(!s.set_paused("nightly", true).unwrap(), "no such campaign");
        s.put_campaign("nightly", "name = \"nightly\"", None, 1)
            .unwrap();
        assert!(!s.is_paused("nightly").unwrap());
        assert!(s.set_paused("nightly", true).unwrap());
        assert!(s.is_paused("nightly").unwrap());
        // A new version of the plan keeps the pause.
        s.put_campaign("nightly", "name = \"nightly\" # v2", None, 2)
            .unwrap();
        assert!(s.is_paused("nightly").unwrap());
        assert!(s.set_paused("nightly", false).unwrap());
        assert!(!s.is_paused("nightly").unwrap());
    });
}

#[test]
fn interface_samples_are_kept_once_and_read_by_range() {
    on_both("ifaces", |open, _| {
        let mut s = open();
        let sample = |at_ns: i64, rx: u64| InterfaceSample {
            interface: "eth0".into(),
            at_ns,
            counters: Counters {
                rx_bytes: rx,
                tx_bytes: u64::MAX,
                ..Counters::default()
            },
        };
        let all = [sample(10, 100), sample(20, 200), sample(30, 300)];
        s.put_interface_samples(&all).unwrap();
        s.put_interface_samples(&all[..1]).unwrap();
        assert_eq!(s.interface_names().unwrap(), ["eth0"]);
        let got = s.interface_samples("eth0", 15, 31).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].counters.rx_bytes, 200);
        // Beyond what the database's BIGINT holds, kept at its top.
        assert_eq!(got[0].counters.tx_bytes, i64::MAX as u64);
        assert!(s.interface_samples("eth1", 0, 100).unwrap().is_empty());
    });
}

#[test]
fn a_batch_keeps_what_one_result_at_a_time_keeps() {
    on_both("batch", |open, location| {
        let mut s = open();
        s.forward_to("central").unwrap();
        let quiet = tcp("quiet.example", 1_000, 1);
        let plain = tcp("c.example", 1_200, 5);
        let late = tcp("busy.example", 1_500, 3);
        let (first, second) = (tcp("busy.example", 2_000, 2), tcp("busy.example", 2_000, 4));
        // Of two at once, the smaller id is the path's latest.
        let newest = if first.id < second.id {
            &first
        } else {
            &second
        };
        let batch: Vec<(TestResult, Placement)> = vec![
            (first.clone(), step("b", "a", "busy")),
            (quiet.clone(), step("q", "a", "quiet")),
            (second.clone(), step("b", "a", "busy")),
            (late.clone(), step("b", "a", "busy")),
            (plain.clone(), Placement::default()),
            // Twice in one batch: kept once.
            (first.clone(), step("b", "a", "busy")),
        ];
        assert_eq!(s.put_results(&batch).unwrap(), 5);
        assert_eq!(s.put_results(&batch).unwrap(), 0, "a batch sent again");
        let queued = s.outbox("central", 100).unwrap();
        assert_eq!(queued.items.len(), 5, "each new result queued once");

        let expect = [
            newest.id.to_string(),
            plain.id.to_string(),
            quiet.id.to_string(),
        ];
        let ids = |s: &mut sonde_archive::Store| -> Vec<String> {
            s.latest_per_path(&ResultFilter::default(), 10)
                .unwrap()
                .into_iter()
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(ids(&mut s), expect);
        let rows = s.latest_per_path(&ResultFilter::default(), 10).unwrap();
        assert_eq!(rows[0].from.as_deref(), Some("a"), "labels kept");
        assert_eq!(rows[0].step.as_deref(), Some("b"));
        assert_eq!(
            kept(&mut s)[0],
            (
                "busy.example".to_string(),
                0,
                second.id.to_string(),
                Some(4.0)
            ),
            "/metrics' row: of two at once, the later kept"
        );
        // The paths' keys the batch made are the ones the archive makes
        // from the stored rows when it fills the table itself.
        drop(s);
        raw(location, "DELETE FROM result_latest;");
        let mut s = open();
        assert_eq!(ids(&mut s), expect);
        // And one more result on a path only replaces that path's latest.
        let newer = tcp("c.example", 3_000, 6);
        s.put_results(&[(newer.clone(), Placement::default())])
            .unwrap();
        assert_eq!(
            ids(&mut s),
            [
                newer.id.to_string(),
                newest.id.to_string(),
                quiet.id.to_string()
            ]
        );
    });
}

/// The grid's read: one test's paths, each with its figure of a metric,
/// read from the row's columns where it has one and from the figures
/// otherwise; the same value either way as the result's overall figure.
#[test]
fn each_paths_figure_is_read_for_one_test() {
    on_both("latestof", |open, _| {
        let mut s = open();
        let old = tcp("b.example", 1_000, 5);
        let mut new = tcp("b.example", 2_000, 7);
        if let Some(f) = new.summary.forward.as_mut() {
            f.sender_throughput_bps = Some(9);
        }
        s.put_result(&old, &step("ab", "a", "b")).unwrap();
        s.put_result(&new, &step("ab", "a", "b")).unwrap();
        let of = |s: &mut sonde_archive::Store, test: &str, m: sonde_model::Metric| {
            let filter = ResultFilter {
                test: Some(test.into()),
                ..ResultFilter::default()
            };
            s.latest_per_path_of(&filter, 1000, m).unwrap()
        };
        let rows = of(&mut s, "tcp", sonde_model::Metric::ThroughputBps);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].0.id, new.id.to_string());
        assert_eq!(rows[0].1, Some(7.0), "from the row's column");
        let rows = of(&mut s, "tcp", sonde_model::Metric::SenderThroughputBps);
        assert_eq!(rows[0].1, Some(9.0), "from the figures");
        assert!(of(&mut s, "ping", sonde_model::Metric::RttP50Ms).is_empty());
    });
}
