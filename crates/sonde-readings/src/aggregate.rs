//! How readings fold into summaries: 15-minute buckets (aligned on the
//! hour, UTC), days (UTC) and months, each a [`Summary`] of count, mean,
//! min and max, when the min and the max were read, and the companion
//! value read with the max (the wind's direction at its peak). A tie goes
//! to the earliest reading. A bucket is summarized from its readings; a
//! day from its buckets; a month or a year from its days: the same
//! figures as from the readings themselves (the mean weighted by count).

use serde::Serialize;

/// A bucket's span: 15 minutes.
pub const BUCKET_NS: i64 = 900_000_000_000;
/// A day's span (UTC days: no leap seconds in Unix time).
pub const DAY_NS: i64 = 86_400_000_000_000;

/// The start of the 15-minute bucket `at_ns` falls in.
pub fn bucket_start(at_ns: i64) -> i64 {
    at_ns.div_euclid(BUCKET_NS) * BUCKET_NS
}

/// The start (00:00 UTC) of the day `at_ns` falls in.
pub fn day_start(at_ns: i64) -> i64 {
    at_ns.div_euclid(DAY_NS) * DAY_NS
}

/// One reading's figures, as the aggregates read them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub at_ns: i64,
    pub value: f64,
    pub with: Option<f64>,
}

/// The summary of a span's readings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Where the span starts, ns since the epoch.
    pub start_ns: i64,
    pub count: i64,
    pub mean: f64,
    pub min: f64,
    pub min_at_ns: i64,
    pub max: f64,
    pub max_at_ns: i64,
    /// The companion value of the reading that is the max.
    pub with_at_max: Option<f64>,
}

impl Summary {
    /// The summary of `samples` (in any order), for the span starting at
    /// `start_ns`; `None` if there are none.
    pub fn of_samples(start_ns: i64, samples: &[Sample]) -> Option<Summary> {
        // Each reading is a span of one; min, max and the tie rules are
        // then those of `combine`, in one place.
        let ones: Vec<Summary> = samples
            .iter()
            .map(|x| Summary {
                start_ns,
                count: 1,
                mean: x.value,
                min: x.value,
                min_at_ns: x.at_ns,
                max: x.value,
                max_at_ns: x.at_ns,
                with_at_max: x.with,
            })
            .collect();
        Summary::combine(start_ns, &ones)
    }

    /// The summary of a span made of the spans `parts` (its buckets, its
    /// days), starting at `start_ns`; `None` if there are none.
    pub fn combine(start_ns: i64, parts: &[Summary]) -> Option<Summary> {
        let first = parts.first()?;
        let mut s = Summary {
            start_ns,
            count: 0,
            mean: 0.0,
            ..*first
        };
        let mut sum = 0.0;
        for p in parts {
            s.count += p.count;
            sum += p.mean * p.count as f64;
            if p.min < s.min || (p.min == s.min && p.min_at_ns < s.min_at_ns) {
                s.min = p.min;
                s.min_at_ns = p.min_at_ns;
            }
            if p.max > s.max || (p.max == s.max && p.max_at_ns < s.max_at_ns) {
                s.max = p.max;
                s.max_at_ns = p.max_at_ns;
                s.with_at_max = p.with_at_max;
            }
        }
        s.mean = if s.count > 0 {
            sum / s.count as f64
        } else {
            0.0
        };
        Some(s)
    }
}

/// What a query's series covers, and the span of each of its points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    /// A day of 96 15-minute points.
    Day,
    /// A month of daily points (the days' lows, highs and means).
    Month,
    /// A year of 12 monthly points.
    Year,
}

/// Why a query's interval or date is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntervalError {
    #[error("interval {0:?}: day, month or year")]
    Interval(String),
    #[error("date {0:?}: a date YYYY-MM-DD from 1970 to 2200")]
    Date(String),
}

impl std::str::FromStr for Interval {
    type Err = IntervalError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "day" => Ok(Interval::Day),
            "month" => Ok(Interval::Month),
            "year" => Ok(Interval::Year),
            _ => Err(IntervalError::Interval(s.to_string())),
        }
    }
}

impl Interval {
    pub fn name(self) -> &'static str {
        match self {
            Interval::Day => "day",
            Interval::Month => "month",
            Interval::Year => "year",
        }
    }

    /// The spans `[start_ns, end_ns)` of the points of this interval
    /// around `date` (`YYYY-MM-DD`, UTC): the day's 96 buckets, the
    /// month's days, or the year's months.
    pub fn periods(self, date: &str) -> Result<Vec<(i64, i64)>, IntervalError> {
        let bad = || IntervalError::Date(date.to_string());
        let d: jiff::civil::Date = date.parse().map_err(|_| bad())?;
        // Unix time in i64 ns ends in 2262.
        if !(1970..=2200).contains(&d.year()) {
            return Err(bad());
        }
        let ns = |d: jiff::civil::Date| -> Result<i64, IntervalError> {
            let z = d.to_zoned(jiff::tz::TimeZone::UTC).map_err(|_| bad())?;
            i64::try_from(z.timestamp().as_nanosecond()).map_err(|_| bad())
        };
        Ok(match self {
            Interval::Day => {
                let start = ns(d)?;
                (0..96)
                    .map(|i| (start + i * BUCKET_NS, start + (i + 1) * BUCKET_NS))
                    .collect()
            }
            Interval::Month => {
                let start = ns(d.first_of_month())?;
                (0..i64::from(d.days_in_month()))
                    .map(|i| (start + i * DAY_NS, start + (i + 1) * DAY_NS))
                    .collect()
            }
            Interval::Year => {
                let mut out = Vec::with_capacity(12);
                for m in 1..=12i8 {
                    let first = jiff::civil::Date::new(d.year(), m, 1).map_err(|_| bad())?;
                    let start = ns(first)?;
                    out.push((start, start + i64::from(first.days_in_month()) * DAY_NS));
                }
                out
            }
        })
    }
}

/// One point of a series: its span and the summary of what was read in
/// it (`None`: nothing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub start_ns: i64,
    pub end_ns: i64,
    pub summary: Option<Summary>,
}

/// The series over `periods` made of the finer summaries `parts` (any
/// order): each point combines the parts that start within its span.
pub fn series(periods: &[(i64, i64)], parts: &[Summary]) -> Vec<Point> {
    let mut sorted = parts.to_vec();
    sorted.sort_by_key(|p| p.start_ns);
    periods
        .iter()
        .map(|&(start_ns, end_ns)| {
            let lo = sorted.partition_point(|p| p.start_ns < start_ns);
            let hi = sorted.partition_point(|p| p.start_ns < end_ns);
            Point {
                start_ns,
                end_ns,
                summary: Summary::combine(start_ns, &sorted[lo..hi]),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_764_115_200_000_000_000; // 2025-11-26T00:00:00Z
    const MIN: i64 = 60_000_000_000;

    fn s(min: i64, value: f64, with: Option<f64>) -> Sample {
        Sample {
            at_ns: T0 + min * MIN,
            value,
            with,
        }
    }

    #[test]
    fn buckets_and_days_are_aligned_on_utc() {
        assert_eq!(bucket_start(T0 + 14 * MIN + 59_999_999_999), T0);
        assert_eq!(bucket_start(T0 + 15 * MIN), T0 + 15 * MIN);
        assert_eq!(bucket_start(T0 - 1), T0 - 15 * MIN);
        assert_eq!(day_start(T0 + 23 * 60 * MIN), T0);
        assert_eq!(day_start(T0 - 1), T0 - DAY_NS);
    }

    #[test]
    fn a_bucket_summary_is_the_hand_computed_one() {
        // Wind speeds 3, 9, 5, 9 at minutes 1, 4, 7, 10, directions 90,
        // 270, 180, 300: mean 6.5, min 3 at minute 1, max 9 first read at
        // minute 4, with 270.
        let samples = [
            s(7, 5.0, Some(180.0)),
            s(10, 9.0, Some(300.0)),
            s(1, 3.0, Some(90.0)),
            s(4, 9.0, Some(270.0)),
        ];
        let b = Summary::of_samples(T0, &samples).unwrap();
        assert_eq!(b.count, 4);
        assert_eq!(b.mean, 6.5);
        assert_eq!((b.min, b.min_at_ns), (3.0, T0 + MIN));
        assert_eq!((b.max, b.max_at_ns), (9.0, T0 + 4 * MIN));
        assert_eq!(b.with_at_max, Some(270.0));
        assert_eq!(Summary::of_samples(T0, &[]), None);
    }

    #[test]
    fn a_day_combined_from_buckets_equals_the_day_from_its_readings() {
        let all = [
            s(1, 3.0, None),
            s(4, 8.0, Some(10.0)),
            s(20, 11.0, Some(20.0)),
            s(25, -2.0, None),
            s(26, 4.0, None),
            s(300, 11.0, Some(30.0)),
        ];
        let mut buckets = std::collections::BTreeMap::<i64, Vec<Sample>>::new();
        for x in all {
            buckets.entry(bucket_start(x.at_ns)).or_default().push(x);
        }
        let parts: Vec<Summary> = buckets
            .iter()
            .map(|(k, v)| Summary::of_samples(*k, v).unwrap())
            .collect();
        assert_eq!(parts.len(), 3);
        let day = Summary::combine(T0, &parts).unwrap();
        let direct = Summary::of_samples(T0, &all).unwrap();
        assert_eq!(day.count, 6);
        assert_eq!(day.mean, 35.0 / 6.0);
        assert_eq!(
            (day.min, day.max, day.with_at_max),
            (-2.0, 11.0, Some(20.0))
        );
        assert_eq!(day.max_at_ns, T0 + 20 * MIN);
        assert!((day.mean - direct.mean).abs() < 1e-12);
        assert_eq!(
            (day.min_at_ns, day.max_at_ns),
            (direct.min_at_ns, direct.max_at_ns)
        );
    }

    #[test]
    fn a_day_has_96_points_a_month_its_days_and_a_year_12() {
        let day = Interval::Day.periods("2025-11-26").unwrap();
        assert_eq!(day.len(), 96);
        assert_eq!(day[0], (T0, T0 + BUCKET_NS));
        assert_eq!(day[95].1, T0 + DAY_NS);
        let feb = Interval::Month.periods("2024-02-10").unwrap();
        assert_eq!(feb.len(), 29);
        let year = Interval::Year.periods("2025-11-26").unwrap();
        assert_eq!(year.len(), 12);
        assert_eq!(year[1].1 - year[1].0, 28 * DAY_NS);
        assert_eq!(year[11].1 - year[0].0, 365 * DAY_NS);
        assert!(Interval::Day.periods("2025-13-01").is_err());
        assert!(Interval::Day.periods("26/11/2025").is_err());
        assert!(Interval::Day.periods("2262-04-11").is_err());
        assert!(Interval::Year.periods("1969-12-31").is_err());
        assert!("week".parse::<Interval>().is_err());
    }

    #[test]
    fn a_series_has_a_point_per_period_empty_where_nothing_was_read() {
        let periods = Interval::Day.periods("2025-11-26").unwrap();
        let parts = [
            Summary::of_samples(T0 + BUCKET_NS, &[s(16, 2.0, None)]).unwrap(),
            Summary::of_samples(T0, &[s(1, 1.0, None)]).unwrap(),
            // The day before: not in this series.
            Summary::of_samples(T0 - BUCKET_NS, &[s(-1, 9.0, None)]).unwrap(),
        ];
        let points = series(&periods, &parts);
        assert_eq!(points.len(), 96);
        assert_eq!(points[0].summary.unwrap().max, 1.0);
        assert_eq!(points[1].summary.unwrap().max, 2.0);
        assert!(points[2..].iter().all(|p| p.summary.is_none()));
    }
}
