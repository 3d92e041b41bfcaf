//! Cutting a test down to its class's caps (`over_limit = "cut"`): the
//! arithmetic, on the shape every test has — warm-up and time, streams
//! per direction, rate per stream. Pure; [`crate::admission`] applies it
//! and checks the cut test against the limits again.
//!
//! Duration: `time` shortened so warm-up + time is the cap (a warm-up as
//! long as the cap cannot be cut). Streams: streams per direction
//! lowered so all directions fit (fewer than one cannot be cut). Rate:
//! each stream paced at the cap over the streams (an unpaced test is
//! paced so), rounded down to a bit per second.

use crate::limits_config::Limits;
use sonde_model::Rate;
use sonde_wire::{Cut, Limit};
use std::time::Duration;

/// What of a test the caps bear on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub omit: Duration,
    pub time: Duration,
    /// Streams per direction.
    pub parallel: u16,
    /// Directions (1, or 2 for bidir).
    pub directions: u16,
    /// Rate of each stream; `None`: unpaced.
    pub per_stream: Option<Rate>,
}

impl Shape {
    fn streams(&self) -> u64 {
        u64::from(self.parallel) * u64::from(self.directions)
    }
}

fn secs(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// `shape` cut to fit `limits`, with each cut said, or `None` if it
/// cannot be made to fit.
pub(crate) fn cut(shape: Shape, limits: &Limits, class: &str) -> Option<(Shape, Vec<Cut>)> {
    let mut s = shape;
    let mut cuts = Vec::new();
    let note = |limit, value: String, requested: String| Cut {
        limit,
        class: class.to_string(),
        value,
        requested,
    };
    if s.omit + s.time > limits.max_duration {
        if s.omit >= limits.max_duration {
            return None;
        }
        s.time = limits.max_duration - s.omit;
        cuts.push(note(
            Limit::MaxDuration,
            secs(limits.max_duration),
            secs(shape.omit + shape.time),
        ));
    }
    let max_streams = u64::from(limits.max_streams);
    if s.streams() > max_streams {
        let directions = u64::from(s.directions.max(1));
        let parallel = u16::try_from(max_streams / directions).unwrap_or(u16::MAX);
        if parallel == 0 {
            return None;
        }
        s.parallel = parallel;
        cuts.push(note(
            Limit::MaxStreams,
            s.streams().to_string(),
            shape.streams().to_string(),
        ));
    }
    if let Some(max) = limits.max_rate {
        let total = s.per_stream.map(|r| r.bps().saturating_mul(s.streams()));
        if total.is_none_or(|t| t > max.bps()) {
            let per = max.bps() / s.streams().max(1);
            if per == 0 {
                return None;
            }
            s.per_stream = Some(Rate::from_bps(per));
            let asked = shape.per_stream.map_or("unpaced".to_string(), |r| {
                Rate::from_bps(r.bps().saturating_mul(shape.streams())).to_string()
            });
            cuts.push(note(Limit::MaxRate, max.to_string(), asked));
        }
    }
    Some((s, cuts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(secs: u64, streams: u16, rate: Option<u64>) -> Limits {
        Limits {
            max_duration: Duration::from_secs(secs),
            max_streams: streams,
            max_rate: rate.map(Rate::from_bps),
            ..Limits::default()
        }
    }

    fn shape(omit: u64, time: u64, parallel: u16, directions: u16, rate: Option<u64>) -> Shape {
        Shape {
            omit: Duration::from_secs(omit),
            time: Duration::from_secs(time),
            parallel,
            directions,
            per_stream: rate.map(Rate::from_bps),
        }
    }

    #[test]
    fn a_test_within_the_caps_is_left_alone() {
        let s = shape(1, 9, 2, 1, Some(1_000_000));
        assert_eq!(
            cut(s, &limits(10, 2, Some(2_000_000)), "c"),
            Some((s, vec![]))
        );
    }

    #[test]
    fn duration_streams_and_rate_are_cut_to_the_caps() {
        let s = shape(2, 60, 5, 2, Some(10_000_000));
        let (got, cuts) = cut(s, &limits(10, 6, Some(30_000_000)), "friends").unwrap();
        assert_eq!(got.time, Duration::from_secs(8), "warm-up kept, time cut");
        assert_eq!(got.parallel, 3, "6 streams over 2 directions");
        assert_eq!(
            got.per_stream,
            Some(Rate::from_bps(5_000_000)),
            "30M over 6 streams"
        );
        let names: Vec<_> = cuts.iter().map(|c| c.limit.name().to_string()).collect();
        assert_eq!(names, ["max_duration", "max_streams", "max_rate"]);
        assert_eq!(cuts[0].value, "10s");
        assert_eq!(cuts[0].requested, "1m 2s");
        assert_eq!(
            (cuts[1].value.as_str(), cuts[1].requested.as_str()),
            ("6", "10")
        );
        assert_eq!(cuts[2].requested, "100 Mbit/s", "10 streams of 10M asked");
        assert!(cuts.iter().all(|c| c.class == "friends"));
    }

    #[test]
    fn an_unpaced_test_is_paced_at_the_cap() {
        let (got, cuts) = cut(
            shape(0, 5, 4, 1, None),
            &limits(10, 8, Some(1_000_003)),
            "c",
        )
        .unwrap();
        assert_eq!(got.per_stream, Some(Rate::from_bps(250_000)));
        assert_eq!(cuts[0].requested, "unpaced");
    }

    /// Over a grid of asks and caps: a cut test always fits the caps,
    /// never asks more than the original in any respect, keeps its
    /// warm-up and directions, and says a cut for each change.
    #[test]
    fn a_cut_always_fits_and_never_grows() {
        for (omit, time, parallel, directions, rate) in (0..3u64).flat_map(|o| {
            (1..4u64).flat_map(move |t| {
                (1..5u16).flat_map(move |p| {
                    (1..3u16).flat_map(move |d| {
                        [None, Some(1u64), Some(7_000_000)]
                            .into_iter()
                            .map(move |r| (o, t * 3, p, d, r))
                    })
                })
            })
        }) {
            for (max_s, max_streams, max_rate) in [
                (1, 1, None),
                (4, 3, Some(10_000_000)),
                (10, 8, Some(5)),
                (2, 2, Some(3_000_000)),
            ] {
                let s = shape(omit, time, parallel, directions, rate);
                let l = limits(max_s, max_streams, max_rate);
                let Some((got, cuts)) = cut(s, &l, "c") else {
                    continue;
                };
                assert!(got.omit + got.time <= l.max_duration, "{s:?} → {got:?}");
                assert!(got.streams() <= u64::from(l.max_streams), "{s:?} → {got:?}");
                if let Some(max) = l.max_rate {
                    let per = got.per_stream.expect("paced under a cap");
                    assert!(per.bps() * got.streams() <= max.bps(), "{s:?} → {got:?}");
                }
                assert_eq!((got.omit, got.directions), (s.omit, s.directions));
                assert!(got.time <= s.time && got.parallel <= s.parallel);
                if let (Some(a), Some(b)) = (s.per_stream, got.per_stream) {
                    assert!(b <= a, "{s:?} → {got:?}");
                }
                let changed = usize::from(got.time != s.time)
                    + usize::from(got.parallel != s.parallel)
                    + usize::from(got.per_stream != s.per_stream);
                assert_eq!(cuts.len(), changed, "{s:?} → {got:?}: {cuts:?}");
            }
        }
    }

    #[test]
    fn what_cannot_fit_is_not_cut() {
        assert_eq!(
            cut(shape(10, 5, 1, 1, None), &limits(10, 8, None), "c"),
            None
        );
        assert_eq!(
            cut(shape(0, 5, 1, 2, None), &limits(10, 1, None), "c"),
            None
        );
        assert_eq!(
            cut(shape(0, 5, 4, 1, None), &limits(10, 8, Some(3)), "c"),
            None
        );
    }
}
