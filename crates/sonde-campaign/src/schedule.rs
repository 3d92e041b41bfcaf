//! When a campaign runs: every ISO 8601 `repeat` (`PT1H`) from `start`,
//! or at each match of a `cron` line (UTC); until `until`, or for
//! `max_runs` occurrences; each run may start up to `slip` late, and is
//! moved by a random `spread` (the same for a given occurrence on every
//! restart, so that a restart does not move it).
//!
//! An occurrence is named by its nominal time (before the spread): the
//! archive's runs are unique by campaign and nominal time, which is what
//! keeps a run from starting twice.

use crate::CampaignError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The `[schedule]` table as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repeat: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_runs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spread: Option<String>,
}

/// What repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cadence {
    Every(Duration),
    /// A cron line (5 fields, or 6 with seconds first), in UTC; kept as
    /// written, checked when read.
    Cron(String),
}

/// A read schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub cadence: Cadence,
    /// The first occurrence (ns since the epoch); `None`: when the
    /// campaign was first loaded into the archive.
    pub start_ns: Option<i64>,
    /// No occurrence at or after this.
    pub until_ns: Option<i64>,
    pub max_runs: Option<u64>,
    pub slip: Duration,
    pub spread: Duration,
}

/// A mistake in `[schedule]`, at the key its message starts with.
fn bad(message: impl Into<String>) -> CampaignError {
    let message = message.into();
    let key: String = message
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    crate::plan_where::at(
        crate::PlanPlace::Schedule {
            key: (!key.is_empty()).then_some(key),
        },
        message,
    )
}

/// An ISO 8601 duration (`PT1H`, `P1D`, `PT90S`) or sonde's spelling
/// (`1h`, `90s`).
pub fn parse_span(key: &str, s: &str) -> Result<Duration, CampaignError> {
    let iso = s
        .parse::<jiff::Span>()
        .ok()
        .and_then(|span| {
            // Days as 24 h: a schedule has no calendar.
            span.to_duration(jiff::SpanRelativeTo::days_are_24_hours())
                .ok()
        })
        .and_then(|d| Duration::try_from(d).ok());
    iso.or_else(|| sonde_model::parse_duration(s).ok())
        .ok_or_else(|| bad(format!("{key} '{s}' is not a duration (PT1H, PT5M, 90s)")))
}

/// An RFC 3339 time (`2026-11-25T14:00:00Z`) in ns since the epoch.
pub fn parse_time(key: &str, s: &str) -> Result<i64, CampaignError> {
    let t: jiff::Timestamp = s.parse().map_err(|e| {
        bad(format!(
            "{key} '{s}' is not a time like 2026-11-25T14:00:00Z: {e}"
        ))
    })?;
    i64::try_from(t.as_nanosecond()).map_err(|_| bad(format!("{key} '{s}' is out of range")))
}

fn cron(line: &str) -> Result<croner::Cron, CampaignError> {
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Optional)
        .build()
        .parse(line)
        .map_err(|e| bad(format!("cron '{line}': {e}")))
}

fn scaled(d: Duration, scale: f64) -> Duration {
    Duration::from_secs_f64(d.as_secs_f64() * scale)
}

impl ScheduleFile {
    /// The schedule, scaled; `repeat` (given unscaled) replaces the
    /// plan's cadence and spread, `max_runs` its count.
    pub(crate) fn read(
        mut self,
        scale: f64,
        repeat: Option<Duration>,
        max_runs: Option<u64>,
    ) -> Result<Schedule, CampaignError> {
        if max_runs.is_some() {
            self.max_runs = max_runs;
        }
        let cadence = match (self.repeat, self.cron) {
            _ if repeat.is_some() => {
                self.spread = None;
                Cadence::Every(repeat.unwrap_or_default())
            }
            (Some(r), None) => {
                let every = scaled(parse_span("repeat", &r)?, scale);
                if every < Duration::from_secs(1) {
                    return Err(bad(format!("repeat '{r}' (scaled): at least 1 s")));
                }
                Cadence::Every(every)
            }
            (None, Some(c)) => {
                if scale != 1.0 {
                    return Err(bad("a cron schedule cannot be scaled; use repeat"));
                }
                cron(&c)?;
                Cadence::Cron(c)
            }
            (Some(_), Some(_)) => return Err(bad("give repeat or cron, not both")),
            (None, None) => return Err(bad("give repeat (PT1H) or cron (0 * * * *)")),
        };
        let start_ns = self
            .start
            .as_deref()
            .map(|s| parse_time("start", s))
            .transpose()?;
        let until_ns = match self.until.as_deref() {
            None => None,
            // `until` as a time, or as a span after the start.
            Some(u) if u.starts_with('P') => {
                let span = scaled(parse_span("until", u)?, scale);
                let Some(start) = start_ns else {
                    return Err(bad("until as a span (P1D) needs a start"));
                };
                Some(start.saturating_add(span.as_nanos() as i64))
            }
            Some(u) => Some(parse_time("until", u)?),
        };
        if let (Some(s), Some(u)) = (start_ns, until_ns) {
            if u <= s {
                return Err(bad("until is not after start"));
            }
        }
        if self.max_runs == Some(0) {
            return Err(bad("max_runs is 0"));
        }
        let slip = match &self.slip {
            Some(s) => scaled(parse_span("slip", s)?, scale),
            // Default: a tenth of the period, at least 1 s, at most 10 min.
            None => match &cadence {
                Cadence::Every(e) => {
                    (*e / 10).clamp(Duration::from_secs(1), Duration::from_secs(600))
                }
                Cadence::Cron(_) => Duration::from_secs(60),
            },
        };
        let spread = match &self.spread {
            Some(s) => scaled(parse_span("spread", s)?, scale),
            None => Duration::ZERO,
        };
        if let Cadence::Every(e) = cadence {
            if spread >= e {
                return Err(bad("spread must be shorter than repeat"));
            }
        }
        Ok(Schedule {
            cadence,
            start_ns,
            until_ns,
            max_runs: self.max_runs,
            slip,
            spread,
        })
    }
}

fn ts(ns: i64) -> jiff::Zoned {
    jiff::Timestamp::from_nanosecond(i128::from(ns))
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_zoned(jiff::tz::TimeZone::UTC)
}

fn ns_of(z: &jiff::Zoned) -> i64 {
    i64::try_from(z.timestamp().as_nanosecond()).unwrap_or(i64::MAX)
}

impl Schedule {
    /// The first occurrence at or after `t_ns`, for a campaign anchored at
    /// `anchor_ns` (its `start`, else when it was first loaded); `None`
    /// when the schedule has ended.
    pub fn next_at_or_after(&self, anchor_ns: i64, t_ns: i64) -> Option<i64> {
        let anchor = self.start_ns.unwrap_or(anchor_ns);
        let t = t_ns.max(anchor);
        let (occ, index) = match &self.cadence {
            Cadence::Every(every) => {
                let every = every.as_nanos() as i64;
                let k = (t - anchor + every - 1) / every;
                (anchor + k * every, Some(k as u64))
            }
            Cadence::Cron(line) => {
                let c = cron(line).ok()?;
                // Cron matches whole seconds: from the next whole one.
                let t = (t.saturating_add(999_999_999)).div_euclid(1_000_000_000) * 1_000_000_000;
                let next = c.find_next_occurrence(&ts(t), true).ok()?;
                (ns_of(&next), None)
            }
        };
        if self.until_ns.is_some_and(|u| occ >= u) {
            return None;
        }
        if let Some(max) = self.max_runs {
            let index = match index {
                Some(i) => i,
                None => self.cron_index(anchor, occ, max)?,
            };
            if index >= max {
                return None;
            }
        }
        Some(occ)
    }

    /// How many cron occurrences come before `occ` from `anchor`, counting
    /// at most to `max`.
    fn cron_index(&self, anchor: i64, occ: i64, max: u64) -> Option<u64> {
        let Cadence::Cron(line) = &self.cadence else {
            return None;
        };
        let c = cron(line).ok()?;
        let mut at = ts(anchor);
        let mut n = 0;
        while n <= max {
            let next = c.find_next_occurrence(&at, n == 0).ok()?;
            if ns_of(&next) >= occ {
                return Some(n);
            }
            n += 1;
            at = next;
        }
        Some(n)
    }

    /// When the occurrence `occ` of campaign `name` is due: its nominal
    /// time moved by the spread (a hash of both, so the same every time).
    pub fn due_ns(&self, name: &str, occ: i64) -> i64 {
        if self.spread.is_zero() {
            return occ;
        }
        // FNV-1a: a stable hash (std's is seeded per process).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes().chain(occ.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        occ + (h % self.spread.as_nanos().max(1) as u64) as i64
    }

    /// Whether the schedule can have no occurrence at or after `t_ns`.
    pub fn ended(&self, anchor_ns: i64, t_ns: i64) -> bool {
        self.next_at_or_after(anchor_ns, t_ns).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(repeat: Option<&str>, cron: Option<&str>) -> ScheduleFile {
        ScheduleFile {
            repeat: repeat.map(str::to_string),
            cron: cron.map(str::to_string),
            start: Some("2026-11-25T00:00:00Z".into()),
            until: None,
            max_runs: None,
            slip: None,
            spread: None,
        }
    }

    const START: i64 = 1_795_564_800_000_000_000; // 2026-11-25T00:00:00Z
    const HOUR: i64 = 3_600_000_000_000;

    #[test]
    fn iso_spans_and_sonde_spans_read_alike() {
        assert_eq!(parse_span("r", "PT1H").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_span("r", "P1D").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_span("r", "PT1M30S").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_span("r", "90s").unwrap(), Duration::from_secs(90));
        let e = parse_span("slip", "soon").unwrap_err().to_string();
        assert!(e.contains("slip 'soon'"), "{e}");
        assert_eq!(parse_time("start", "2026-11-25T00:00:00Z").unwrap(), START);
    }

    #[test]
    fn hourly_occurrences_count_from_the_start_and_stop_at_max_runs() {
        let mut f = file(Some("PT1H"), None);
        f.max_runs = Some(24);
        let s = f.read(1.0, None, None).unwrap();
        assert_eq!(s.slip, Duration::from_secs(360));
        assert_eq!(s.next_at_or_after(0, START - 5), Some(START));
        assert_eq!(s.next_at_or_after(0, START + 1), Some(START + HOUR));
        assert_eq!(
            s.next_at_or_after(0, START + 23 * HOUR),
            Some(START + 23 * HOUR)
        );
        assert_eq!(s.next_at_or_after(0, START + 23 * HOUR + 1), None);
    }

    #[test]
    fn a_scale_shrinks_the_period_and_until_ends_it() {
        let mut f = file(Some("PT1H"), None);
        f.until = Some("P1D".into());
        let s = f.read(1.0 / 30.0, None, None).unwrap();
        assert_eq!(s.cadence, Cadence::Every(Duration::from_secs(120)));
        // A day scaled by 1/30 is 48 min: 24 runs, 2 min apart.
        let last = START + 23 * 120_000_000_000;
        assert_eq!(s.next_at_or_after(0, last), Some(last));
        assert_eq!(s.next_at_or_after(0, last + 1), None);
    }

    #[test]
    fn cron_lines_match_in_utc() {
        let mut f = file(None, Some("15 * * * *"));
        f.max_runs = Some(2);
        let s = f.read(1.0, None, None).unwrap();
        let quarter = 15 * 60_000_000_000;
        assert_eq!(s.next_at_or_after(0, START), Some(START + quarter));
        assert_eq!(
            s.next_at_or_after(0, START + quarter + 1),
            Some(START + HOUR + quarter)
        );
        assert_eq!(s.next_at_or_after(0, START + HOUR + quarter + 1), None);
        let e = file(None, Some("61 * * * *"))
            .read(1.0, None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cron '61 * * * *'"), "{e}");
    }

    #[test]
    fn the_spread_is_the_same_on_every_restart_and_within_bounds() {
        let mut f = file(Some("PT1H"), None);
        f.spread = Some("PT5M".into());
        let s = f.read(1.0, None, None).unwrap();
        let a = s.due_ns("geant", START);
        assert_eq!(a, s.due_ns("geant", START));
        assert!((START..START + 300_000_000_000).contains(&a));
        assert!((0..24).any(|k| s.due_ns("geant", START + k * HOUR) != START + k * HOUR));
    }

    #[test]
    fn bad_schedules_say_what_is_wrong() {
        let e = file(Some("PT1H"), Some("0 * * * *"))
            .read(1.0, None, None)
            .unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let e = file(None, None).read(1.0, None, None).unwrap_err();
        assert!(e.to_string().contains("give repeat"), "{e}");
        let mut f = file(Some("PT1H"), None);
        f.spread = Some("PT2H".into());
        assert!(f
            .read(1.0, None, None)
            .unwrap_err()
            .to_string()
            .contains("spread"));
    }

    #[test]
    fn a_repeat_override_replaces_cron_and_spread_unscaled() {
        let mut f = file(None, Some("0 * * * *"));
        f.spread = Some("PT5M".into());
        f.slip = Some("PT10M".into());
        let s = f
            .read(1.0 / 100.0, Some(Duration::from_secs(40)), Some(3))
            .unwrap();
        assert_eq!(s.cadence, Cadence::Every(Duration::from_secs(40)));
        assert_eq!(s.spread, Duration::ZERO);
        // The plan's slip, scaled like every other time of the plan.
        assert_eq!(s.slip, Duration::from_secs(6));
        assert_eq!(s.max_runs, Some(3));
    }
}
