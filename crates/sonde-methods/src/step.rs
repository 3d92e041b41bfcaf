//! One step of a method (or one test on the command line), run as its
//! [`StepPlan`] says: once, `N` times, or until stable (seed 001: until
//! the standard deviation is under 0.5 % of the mean, at least 30 and at
//! most 200 runs), over each family in turn, alternating run by run so
//! that drift in the path hits IPv6 and IPv4 alike.

use crate::MethodError;
use sonde_model::method::{FamilyRatio, Metric, RepeatRule, Stats, StepPlan, StepStats};
use sonde_model::{Direction, Figures, IpFamily, TestKind, TestResult, TestSpec};
use sonde_run::{Events, RunError, Runner, Stop};
use std::collections::BTreeMap;

/// The runs of one family.
#[derive(Debug, Clone)]
pub struct FamilyRuns {
    pub family: IpFamily,
    pub results: Vec<TestResult>,
    /// `until_stable` met (`None` for a fixed count).
    pub stable: Option<bool>,
}

/// Everything a step ran.
#[derive(Debug, Clone, Default)]
pub struct StepRuns {
    pub families: Vec<FamilyRuns>,
    /// A stop ended the step before its plan was done.
    pub interrupted: bool,
    /// The run order: (index in `families`, index in its `results`).
    pub order: Vec<(usize, usize)>,
}

impl StepRuns {
    /// Every result, in the order the runs finished.
    pub fn results_in_order(&self) -> Vec<&TestResult> {
        if self.order.is_empty() {
            let mut all: Vec<&TestResult> = self.families.iter().flat_map(|f| &f.results).collect();
            all.sort_by_key(|r| r.start);
            return all;
        }
        self.order
            .iter()
            .filter_map(|&(f, i)| self.families.get(f)?.results.get(i))
            .collect()
    }
}

/// The figure a test is judged by when the plan names none: goodput for
/// tcp and udp, the RTT median for ping.
pub fn default_metric(kind: TestKind) -> Metric {
    match kind {
        TestKind::Tcp | TestKind::Udp => Metric::ThroughputBps,
        TestKind::Ping | TestKind::Http | TestKind::Trace => Metric::RttP50Ms,
    }
}

/// The families a plan runs `spec` over: the plan's, or the spec's own.
pub fn families_of(spec: &TestSpec, plan: &StepPlan) -> Vec<IpFamily> {
    if plan.families.is_empty() {
        vec![spec.family()]
    } else {
        plan.families.clone()
    }
}

/// Runs `spec` as `plan` says. `on_result` sees each result as it
/// finishes (to print, or keep, at once). A failed run ends the step
/// with its error; a stop ends it with what ran (a run cut short by the
/// stop is kept, but left out of the statistics). The plan is checked
/// first ([`StepPlan::validate`]); an `until_stable` metric the test
/// does not measure is a usage error after the first run.
pub fn run_step(
    runner: &dyn Runner,
    spec: &TestSpec,
    plan: &StepPlan,
    stop: &Stop,
    events: &Events,
    on_result: &mut dyn FnMut(&TestResult),
) -> Result<StepRuns, MethodError> {
    plan.validate().map_err(MethodError::from)?;
    let metric = plan.metric.unwrap_or(default_metric(spec.kind()));
    let mut runs = StepRuns {
        families: families_of(spec, plan)
            .into_iter()
            .map(|family| FamilyRuns {
                family,
                results: Vec::new(),
                stable: match plan.repeat {
                    RepeatRule::UntilStable { .. } => Some(false),
                    _ => None,
                },
            })
            .collect(),
        ..StepRuns::default()
    };
    let mut trial = 0;
    loop {
        let mut ran_any = false;
        for (index, fam) in runs.families.iter_mut().enumerate() {
            if !wants_more(&plan.repeat, metric, fam) {
                continue;
            }
            if stop.is_stopped() {
                runs.interrupted = true;
                return Ok(runs);
            }
            trial += 1;
            match runner.run(&spec.with_family(fam.family), stop, events) {
                Ok(result) => {
                    on_result(&result);
                    let interrupted = result.interrupted;
                    runs.order.push((index, fam.results.len()));
                    fam.results.push(result);
                    if interrupted {
                        runs.interrupted = true;
                        return Ok(runs);
                    }
                }
                Err(RunError::Interrupted) => {
                    runs.interrupted = true;
                    return Ok(runs);
                }
                Err(source) => return Err(MethodError::Trial { trial, source }),
            }
            ran_any = true;
            if let RepeatRule::UntilStable { .. } = plan.repeat {
                if judged(metric, &fam.results).is_empty() {
                    return Err(MethodError::Invalid {
                        field: "metric",
                        detail: format!(
                            "a {} test does not measure {}: until-stable cannot judge it",
                            spec.kind().name(),
                            metric.name()
                        ),
                    });
                }
                fam.stable = Some(is_stable(&plan.repeat, metric, &fam.results));
            }
        }
        if !ran_any {
            return Ok(runs);
        }
    }
}

/// Whether a family needs another run.
fn wants_more(rule: &RepeatRule, metric: Metric, fam: &FamilyRuns) -> bool {
    let n = fam.results.len() as u32;
    match *rule {
        RepeatRule::Once => n < 1,
        RepeatRule::Times { runs } => n < runs.max(1),
        RepeatRule::UntilStable {
            min_runs, max_runs, ..
        } => n < min_runs.max(2) || (n < max_runs && !is_stable(rule, metric, &fam.results)),
    }
}

/// The values of `metric` that until-stable judges, one set per part of
/// the result that measures it: the headline, and each direction of a
/// test of both at once (so that both directions must settle). Runs cut
/// short by a stop are left out.
fn judged(metric: Metric, results: &[TestResult]) -> Vec<Vec<f64>> {
    [None, Some(Direction::Forward), Some(Direction::Reverse)]
        .into_iter()
        .map(|d| {
            results
                .iter()
                .filter(|r| !r.interrupted)
                .filter_map(|r| figures_of(r, d).and_then(|f| metric.of(f)))
                .collect::<Vec<f64>>()
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// Whether `results` meet an `until_stable` rule: at least `min_runs`,
/// and in every part measured the standard deviation within
/// `stddev_pct` of the mean.
fn is_stable(rule: &RepeatRule, metric: Metric, results: &[TestResult]) -> bool {
    let RepeatRule::UntilStable {
        stddev_pct,
        min_runs,
        ..
    } = *rule
    else {
        return false;
    };
    let sets = judged(metric, results);
    !sets.is_empty()
        && sets.iter().all(|values| {
            values.len() as u32 >= min_runs.max(2)
                && stats(values).is_some_and(|s| s.stddev_pct <= stddev_pct)
        })
}

/// Waits `gap` (between the trials of a method, so queues drain),
/// returning early once `stop` is set.
pub fn idle(gap: std::time::Duration, stop: &Stop) {
    let end = std::time::Instant::now() + gap;
    while !stop.is_stopped() {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
    }
}

/// Mean, sample standard deviation and 95 % confidence interval of
/// `values`; `None` when empty ([`Stats::of`]).
pub fn stats(values: &[f64]) -> Option<Stats> {
    Stats::of(values)
}

/// The figures of `direction` in a result (`None`: its headline).
pub fn figures_of(result: &TestResult, direction: Option<Direction>) -> Option<&Figures> {
    match direction {
        Some(d) => result.summary.direction(d),
        None => result.summary.headline(),
    }
}

/// Statistics of every metric measured in `runs`' results, over the
/// figures of `direction`. A run cut short by a stop is not counted
/// (its figures cover less time); its document stays in the trials.
pub fn step_stats(runs: &FamilyRuns, direction: Option<Direction>) -> StepStats {
    let counted: Vec<&TestResult> = runs.results.iter().filter(|r| !r.interrupted).collect();
    let mut by_metric = BTreeMap::new();
    for metric in Metric::ALL {
        let values: Vec<f64> = counted
            .iter()
            .filter_map(|r| figures_of(r, direction).and_then(|f| metric.of(f)))
            .collect();
        if let Some(s) = stats(&values) {
            by_metric.insert(metric.name().to_string(), s);
        }
    }
    StepStats {
        family: runs.family,
        direction,
        result_ids: counted.iter().map(|r| r.id).collect(),
        stable: runs.stable,
        stats: by_metric,
    }
}

/// IPv6 over IPv4 for every metric both families measured.
pub fn family_ratios(stats: &[StepStats], at: Option<&str>) -> Vec<FamilyRatio> {
    let of = |fam: IpFamily| stats.iter().find(|s| s.family == fam);
    let (Some(v6), Some(v4)) = (of(IpFamily::V6), of(IpFamily::V4)) else {
        return Vec::new();
    };
    Metric::ALL
        .into_iter()
        .filter_map(|m| {
            let a = v6.stats.get(m.name())?.mean;
            let b = v4.stats.get(m.name())?.mean;
            (b != 0.0).then(|| FamilyRatio {
                metric: m,
                at: at.map(str::to_string),
                ipv6: a,
                ipv4: b,
                ratio: a / b,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::{Limit, PathDir, ScriptedPath};
    use sonde_model::{Rate, UdpSpec};
    use std::time::Duration;

    fn udp(family: IpFamily) -> TestSpec {
        UdpSpec {
            host: "path".into(),
            bitrate: Rate::from_bps(20_000_000),
            length: 64,
            family,
            time: Duration::from_secs(1),
            ..UdpSpec::default()
        }
        .into()
    }

    #[test]
    fn stats_of_known_values() {
        let s = stats(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        assert!((s.stddev - 2.138_089_935).abs() < 1e-6, "{s:?}");
        assert!((s.ci95.unwrap() - 2.365 * 2.138_089_935 / 8f64.sqrt()).abs() < 1e-6);
        assert_eq!(stats(&[3.0]).unwrap().ci95, None);
        assert!(stats(&[]).is_none());
    }

    #[test]
    fn families_alternate_and_the_ratio_follows_the_headers() {
        // A 10 Mbit/s policer on IP bytes, 20 Mbit/s of 64-byte payloads
        // offered: IPv6 delivers 10 × 64/112, IPv4 10 × 64/92.
        let mut dir = PathDir::new(Limit::Policer, 10e6);
        dir.noise_pct = 0.0;
        let path = ScriptedPath::symmetric(dir);
        let plan = StepPlan {
            repeat: RepeatRule::Times { runs: 3 },
            families: vec![IpFamily::V6, IpFamily::V4],
            ..StepPlan::default()
        };
        let runs = run_step(
            &path,
            &udp(IpFamily::Any),
            &plan,
            &Stop::new(),
            &Events::new(),
            &mut |_| {},
        )
        .unwrap();
        let order: Vec<IpFamily> = path.asked().iter().map(TestSpec::family).collect();
        use IpFamily::{V4, V6};
        assert_eq!(order, [V6, V4, V6, V4, V6, V4]);
        let stats: Vec<StepStats> = runs.families.iter().map(|f| step_stats(f, None)).collect();
        let ratio = family_ratios(&stats, None)
            .into_iter()
            .find(|r| r.metric == Metric::ThroughputBps)
            .unwrap();
        assert!((ratio.ratio - 92.0 / 112.0).abs() < 1e-3, "{ratio:?}");
    }

    #[test]
    fn until_stable_stops_once_the_spread_is_small() {
        let mut dir = PathDir::new(Limit::Policer, 10e6);
        dir.noise_pct = 1.0;
        let path = ScriptedPath::symmetric(dir);
        let plan = StepPlan {
            repeat: RepeatRule::UntilStable {
                stddev_pct: 2.0,
                min_runs: 5,
                max_runs: 50,
            },
            ..StepPlan::default()
        };
        let runs = run_step(
            &path,
            &udp(IpFamily::V6),
            &plan,
            &Stop::new(),
            &Events::new(),
            &mut |_| {},
        )
        .unwrap();
        let fam = &runs.families[0];
        assert_eq!(fam.stable, Some(true));
        assert_eq!(fam.results.len(), 5, "1 % noise is under 2 % at once");

        // A spread that never narrows enough runs to the maximum.
        let plan = StepPlan {
            repeat: RepeatRule::UntilStable {
                stddev_pct: 0.01,
                min_runs: 3,
                max_runs: 12,
            },
            ..plan
        };
        let runs = run_step(
            &path,
            &udp(IpFamily::V6),
            &plan,
            &Stop::new(),
            &Events::new(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(runs.families[0].results.len(), 12);
        assert_eq!(runs.families[0].stable, Some(false));
    }
}
