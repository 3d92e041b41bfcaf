//! Each direction's own figures, on both backends: a bidirectional test
//! of 10 Mbit/s one way and 5 Mbit/s the other is two values, 10 and 5,
//! in stats, charts and heat maps, and never 15; an archive from before
//! the figures' table is filled with them as it is opened.

mod common;
use common::{on_both, raw, UNDO_AFTER_11};
use sonde_archive::{Grouping, Placement, ResultFilter};
use sonde_model::Metric;
use sonde_model::{
    Direction, Figures, HostEnv, PeerKind, Summary, TestEnv, TestResult, TestSpec, Timestamp,
    UdpSpec,
};
use std::time::{Duration, UNIX_EPOCH};

/// 2026-01-05, 10:00 UTC, plus `s` seconds.
fn at(s: u64) -> Timestamp {
    Timestamp(UNIX_EPOCH + Duration::from_secs(1_767_607_200 + s))
}

fn fig(d: Direction, mbps: u64, loss_pct: f64) -> Figures {
    Figures {
        direction: Some(d),
        throughput_bps: Some(mbps * 1_000_000),
        loss_pct: Some(loss_pct),
        pdr_pct: Some(100.0 - loss_pct),
        ..Figures::default()
    }
}

/// A UDP test toward `host` in `direction`: 10 Mbit/s and 1 % loss
/// forward, 5 Mbit/s and 3 % reverse, each where it ran.
fn udp(host: &str, direction: Direction, s: u64) -> TestResult {
    let spec = UdpSpec {
        host: host.into(),
        direction,
        ..UdpSpec::default()
    };
    let mut r = TestResult::new(
        TestSpec::Udp(spec),
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        at(s),
    );
    let forward = Some(fig(Direction::Forward, 10, 1.0));
    let reverse = Some(fig(Direction::Reverse, 5, 3.0));
    r.summary = match direction {
        Direction::Forward => Summary {
            forward,
            ..Summary::default()
        },
        Direction::Reverse => Summary {
            reverse,
            ..Summary::default()
        },
        Direction::Bidir => Summary {
            forward,
            reverse,
            ..Summary::default()
        },
    };
    r
}

fn points(
    s: &mut sonde_archive::Store,
    direction: Option<&str>,
    metric: Metric,
) -> Vec<(String, f64)> {
    let filter = ResultFilter {
        direction: direction.map(str::to_string),
        ..ResultFilter::default()
    };
    s.metric_points(&filter, metric, &Grouping::Direction)
        .unwrap()
        .into_iter()
        .map(|p| (p.group, p.value))
        .collect()
}

#[test]
fn a_bidirectional_test_is_two_values_and_never_their_sum() {
    on_both("figures", |open, _| {
        let mut s = open();
        s.put_result(&udp("b", Direction::Bidir, 0), &Placement::default())
            .unwrap();
        let by_direction = points(&mut s, None, Metric::ThroughputBps);
        assert_eq!(
            by_direction,
            [("forward".into(), 10e6), ("reverse".into(), 5e6)]
        );
        assert_eq!(
            points(&mut s, None, Metric::LossPct),
            [("forward".into(), 1.0), ("reverse".into(), 3.0)]
        );
        // A one-way test beside it, 30 minutes later: `direction` selects
        // the figure's own direction, of either test; `bidir` the
        // bidirectional test's two.
        s.put_result(&udp("b", Direction::Forward, 1_800), &Placement::default())
            .unwrap();
        assert_eq!(
            points(&mut s, Some("forward"), Metric::ThroughputBps),
            [("forward".into(), 10e6), ("forward".into(), 10e6)]
        );
        assert_eq!(
            points(&mut s, Some("reverse"), Metric::ThroughputBps),
            [("reverse".into(), 5e6)]
        );
        assert_eq!(
            points(&mut s, Some("bidir"), Metric::ThroughputBps).len(),
            2
        );
        // The heat map's 10:00 cell: forward alone is 10, reverse 5; all
        // three figures pooled are their mean, (10 + 5 + 10) / 3, and
        // never holds a 15.
        let mut cell = |direction: Option<&str>| {
            let filter = ResultFilter {
                direction: direction.map(str::to_string),
                ..ResultFilter::default()
            };
            let cells = s.day_heat_map(&filter, Metric::ThroughputBps).unwrap();
            assert_eq!(cells.len(), 1, "{cells:?}");
            assert_eq!(cells[0].hour, 10);
            (cells[0].mean, cells[0].count)
        };
        assert_eq!(cell(Some("forward")), (10e6, 2));
        assert_eq!(cell(Some("reverse")), (5e6, 1));
        let (mean, count) = cell(None);
        assert_eq!(count, 3);
        assert!((mean - 25e6 / 3.0).abs() < 1.0, "{mean}");
    });
}

#[test]
fn an_archive_from_before_is_given_each_directions_figures() {
    on_both("figfill", |open, location| {
        let mut s = open();
        s.put_result(&udp("b", Direction::Bidir, 0), &Placement::default())
            .unwrap();
        s.put_result(&udp("c", Direction::Reverse, 60), &Placement::default())
            .unwrap();
        drop(s);
        common::back_to_17(location);
        raw(
            location,
            &format!(
                "{UNDO_AFTER_11} DROP TABLE result_figures; DELETE FROM sonde_schema WHERE \
                 version >= {};",
                sonde_archive::schema::RESULT_FIGURES
            ),
        );
        let mut s = open();
        assert_eq!(
            points(&mut s, None, Metric::ThroughputBps),
            [
                ("forward".into(), 10e6),
                ("reverse".into(), 5e6),
                ("reverse".into(), 5e6)
            ]
        );
    });
}
