//! Readings in the archive, on both backends: raw readings kept once,
//! 15-minute and daily summaries equal to the hand-computed ones,
//! corrected by a late reading, and a unit conflict refused whole.

mod common;

use sonde_archive::ReadingsWrite;
use sonde_readings::{Interval, Reading, Summary};

const DAY: i64 = 1_764_115_200_000_000_000; // 2025-11-26T00:00:00Z
const MIN: i64 = 60_000_000_000;

fn wind(minute: i64, value: f64, with: Option<f64>) -> Reading {
    Reading {
        probe: "mast-1".into(),
        metric: "wind_speed".into(),
        unit: "m/s".into(),
        value,
        at_ns: DAY + minute * MIN,
        with,
    }
}

fn kept(new: usize, duplicate: usize) -> ReadingsWrite {
    ReadingsWrite::Kept { new, duplicate }
}

#[test]
fn summaries_are_the_hand_computed_ones_and_late_readings_correct_them() {
    common::on_both("readings", |open, _| {
        let mut s = open();
        // Out of order, over two writes.
        let w = s
            .put_readings(
                &[wind(7, 5.0, Some(180.0)), wind(23 * 60 + 59, 1.0, None)],
                0,
            )
            .unwrap();
        assert_eq!(w, kept(2, 0));
        let w = s
            .put_readings(
                &[
                    wind(20, 4.0, Some(10.0)),
                    wind(4, 9.0, Some(270.0)),
                    wind(1, 3.0, Some(90.0)),
                    wind(1, 3.0, Some(90.0)),
                ],
                0,
            )
            .unwrap();
        assert_eq!(
            w,
            kept(3, 1),
            "the same reading twice in a batch is kept once"
        );

        let day = Interval::Day.periods("2025-11-26").unwrap();
        let q = s
            .query_readings("mast-1", "wind_speed", Interval::Day, &day)
            .unwrap()
            .unwrap();
        assert_eq!(q.series.unit, "m/s");
        assert_eq!(q.points.len(), 96);
        let b0 = q.points[0].summary.unwrap();
        assert_eq!(b0.count, 3);
        assert!((b0.mean - 17.0 / 3.0).abs() < 1e-12);
        assert_eq!((b0.min, b0.min_at_ns), (3.0, DAY + MIN));
        assert_eq!(
            (b0.max, b0.max_at_ns, b0.with_at_max),
            (9.0, DAY + 4 * MIN, Some(270.0))
        );
        assert_eq!(q.points[1].summary.unwrap().mean, 4.0);
        assert_eq!(q.points[95].summary.unwrap().max, 1.0);
        assert_eq!(q.points.iter().filter(|p| p.summary.is_some()).count(), 3);

        // A duplicate with another value changes nothing.
        assert_eq!(
            s.put_readings(&[wind(4, 100.0, None)], 0).unwrap(),
            kept(0, 1)
        );
        // A late reading: the new max of bucket 0 and of the day.
        assert_eq!(
            s.put_readings(&[wind(10, 12.0, Some(45.0))], 0).unwrap(),
            kept(1, 0)
        );
        let q = s
            .query_readings("mast-1", "wind_speed", Interval::Day, &day)
            .unwrap()
            .unwrap();
        let b0 = q.points[0].summary.unwrap();
        assert_eq!((b0.count, b0.mean), (4, 7.25));
        assert_eq!((b0.max, b0.with_at_max), (12.0, Some(45.0)));

        let month = Interval::Month.periods("2025-11-26").unwrap();
        let q = s
            .query_readings("mast-1", "wind_speed", Interval::Month, &month)
            .unwrap()
            .unwrap();
        assert_eq!(q.points.len(), 30);
        let d = q.points[25].summary.unwrap();
        assert_eq!(q.points[25].start_ns, DAY);
        assert_eq!(d.count, 6);
        assert!((d.mean - 34.0 / 6.0).abs() < 1e-12);
        assert_eq!((d.min, d.min_at_ns), (1.0, DAY + (23 * 60 + 59) * MIN));
        assert_eq!((d.max, d.with_at_max), (12.0, Some(45.0)));
        assert_eq!(q.points.iter().filter(|p| p.summary.is_some()).count(), 1);

        let year = Interval::Year.periods("2025-01-01").unwrap();
        let q = s
            .query_readings("mast-1", "wind_speed", Interval::Year, &year)
            .unwrap()
            .unwrap();
        assert_eq!(q.points.len(), 12);
        assert_eq!(q.points[10].summary.unwrap().count, 6);
        assert!(q.points[11].summary.is_none());

        let all = s.reading_series().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(
            (all[0].first_ns, all[0].last_ns),
            (DAY + MIN, DAY + (23 * 60 + 59) * MIN)
        );
        assert!(s
            .query_readings("mast-2", "wind_speed", Interval::Day, &day)
            .unwrap()
            .is_none());
    });
}

#[test]
fn a_reading_in_another_unit_refuses_the_whole_write() {
    common::on_both("readings_units", |open, _| {
        let mut s = open();
        assert_eq!(
            s.put_readings(&[wind(1, 3.0, None)], 0).unwrap(),
            kept(1, 0)
        );
        let other = Reading {
            unit: "km/h".into(),
            ..wind(2, 10.0, None)
        };
        let w = s
            .put_readings(&[wind(3, 4.0, None), other.clone()], 0)
            .unwrap();
        match w {
            ReadingsWrite::UnitConflict { index, message } => {
                assert_eq!(index, 1);
                assert!(
                    message.contains("\"km/h\"") && message.contains("\"m/s\""),
                    "{message}"
                );
            }
            w => panic!("kept: {w:?}"),
        }
        assert_eq!(
            s.count_readings("mast-1", "wind_speed", DAY, DAY + 86_400 * 1_000_000_000)
                .unwrap(),
            1
        );
        // Within one batch too.
        let w = s
            .put_readings(
                &[
                    Reading {
                        metric: "gust".into(),
                        ..wind(1, 1.0, None)
                    },
                    Reading {
                        metric: "gust".into(),
                        ..other
                    },
                ],
                0,
            )
            .unwrap();
        assert!(
            matches!(w, ReadingsWrite::UnitConflict { index: 1, .. }),
            "{w:?}"
        );
        assert_eq!(s.reading_series().unwrap().len(), 1);
    });
}

#[test]
fn a_large_batch_is_kept_whole() {
    common::on_both("readings_batch", |open, _| {
        let mut s = open();
        // 1000 readings, one a second from midnight: 0..999, so buckets 0
        // (900 readings, values 0..899) and 1 (100, values 900..999).
        let batch: Vec<Reading> = (0..1000)
            .map(|i| Reading {
                at_ns: DAY + i * 1_000_000_000,
                ..wind(0, i as f64, None)
            })
            .collect();
        assert_eq!(s.put_readings(&batch, 0).unwrap(), kept(1000, 0));
        let day = Interval::Day.periods("2025-11-26").unwrap();
        let q = s
            .query_readings("mast-1", "wind_speed", Interval::Day, &day)
            .unwrap()
            .unwrap();
        let (b0, b1) = (q.points[0].summary.unwrap(), q.points[1].summary.unwrap());
        assert_eq!((b0.count, b0.mean, b0.max), (900, 449.5, 899.0));
        assert_eq!((b1.count, b1.mean, b1.min), (100, 949.5, 900.0));
    });
}

#[test]
fn concurrent_writers_to_one_bucket_lose_no_reading_from_its_summary() {
    common::on_both("readings_concurrent", |open, _| {
        open(); // migrated once, before the writers race
                // 4 writers, 50 readings each, one transaction per reading, all in
                // the first bucket: values 0..199 at ms 0..199.
        std::thread::scope(|scope| {
            for w in 0..4i64 {
                scope.spawn(move || {
                    let mut s = open();
                    for i in 0..50i64 {
                        let n = w * 50 + i;
                        let r = Reading {
                            at_ns: DAY + n * 1_000_000,
                            ..wind(0, n as f64, None)
                        };
                        assert_eq!(s.put_readings(&[r], 0).unwrap(), kept(1, 0));
                    }
                });
            }
        });
        let day = Interval::Day.periods("2025-11-26").unwrap();
        let q = open()
            .query_readings("mast-1", "wind_speed", Interval::Day, &day)
            .unwrap()
            .unwrap();
        let b0 = q.points[0].summary.unwrap();
        assert_eq!((b0.count, b0.mean, b0.min, b0.max), (200, 99.5, 0.0, 199.0));
    });
}

/// mast-1's wind speed over the day (or its month) of 2025-11-26: each
/// point's summary.
fn wind_on(s: &mut sonde_archive::Store, interval: Interval) -> Vec<Option<Summary>> {
    let periods = interval.periods("2025-11-26").unwrap();
    s.query_readings("mast-1", "wind_speed", interval, &periods)
        .unwrap()
        .unwrap()
        .points
        .iter()
        .map(|p| p.summary)
        .collect()
}

#[test]
fn a_schema_19_archive_gets_its_summaries_sums_and_later_writes_add_to_them_not_to_an_older_sondes()
{
    common::on_both("readings_sums", |open, location| {
        let mut s = open();
        let first = [wind(1, 1.0, None), wind(2, 2.0, None), wind(3, 4.0, None)];
        assert_eq!(s.put_readings(&first, 0).unwrap(), kept(3, 0));
        drop(s);
        // As a sonde of schema 19 left it: summaries with no sum.
        common::back_to_19(location);
        let mut s = open();
        for table in ["readings_15min", "readings_day"] {
            assert_eq!(
                common::count(
                    location,
                    &format!("SELECT COUNT(*) FROM {table} WHERE total = 7")
                ),
                1,
                "{table}: its sum from the readings"
            );
        }
        // A late reading and one of the next bucket, added to them.
        let late = [wind(0, 5.0, Some(9.0)), wind(15, 6.0, None)];
        assert_eq!(s.put_readings(&late, 0).unwrap(), kept(2, 0));
        let q = wind_on(&mut s, Interval::Day);
        let b0 = q[0].unwrap();
        assert_eq!((b0.count, b0.mean), (4, 3.0));
        assert_eq!(
            (b0.max, b0.max_at_ns, b0.with_at_max),
            (5.0, DAY, Some(9.0))
        );
        assert_eq!((b0.min, b0.min_at_ns), (1.0, DAY + MIN));
        let b1 = q[1].unwrap();
        assert_eq!((b1.count, b1.mean), (1, 6.0));
        let q = wind_on(&mut s, Interval::Month);
        let d = q[25].unwrap();
        assert_eq!((d.count, d.mean, d.max), (5, 3.6, 6.0));

        // An older sonde still writing (schema 19's code: it recomputes a
        // bucket's count and mean from the readings, and the day's from
        // its buckets, and knows no sum) keeps 10.0 at minute 5; the next
        // write of this one does not add to the sum it left behind.
        common::raw(
            location,
            &format!(
                "INSERT INTO readings (probe, metric, at_ns, value, received_ns) VALUES \
                 ('mast-1', 'wind_speed', {}, 10.0, 0); \
                 UPDATE readings_15min SET count = 5, mean = 22.0 / 5 WHERE start_ns = {DAY}; \
                 UPDATE readings_day SET count = 6, mean = 28.0 / 6 WHERE start_ns = {DAY};",
                DAY + 5 * MIN
            ),
        );
        assert_eq!(
            s.put_readings(&[wind(6, 8.0, None)], 0).unwrap(),
            kept(1, 0)
        );
        let q = wind_on(&mut s, Interval::Day);
        let b0 = q[0].unwrap();
        assert_eq!(b0.count, 6);
        assert!((b0.mean - 30.0 / 6.0).abs() < 1e-9, "{}", b0.mean);
        let q = wind_on(&mut s, Interval::Month);
        let d = q[25].unwrap();
        assert_eq!(d.count, 7);
        assert!((d.mean - 36.0 / 7.0).abs() < 1e-9, "{}", d.mean);
    });
}
