//! One test repeated (`--repeat N`, `--until-stddev`), over one family or
//! over IPv6 and IPv4 in turn (`--families 6,4`): the runs read together
//! as one [`MethodResult`] with `method` "repeat".

use crate::step::{default_metric, family_ratios, run_step, step_stats, StepRuns};
use crate::MethodError;
use sonde_model::method::{family_used, RepeatOutcome, RepeatSpec, StepStats};
use sonde_model::{
    Direction, Event, IpFamily, MethodEvent, MethodResult, MethodSpec, TestResult, TestSpec,
    Timestamp,
};
use sonde_run::{Events, Runner, Stop};
use std::sync::Arc;
use std::time::Instant;

/// Runs `spec.test` as `spec.step` says and reads the runs together:
/// statistics per family (and per direction for a test of both
/// directions at once), IPv6/IPv4 ratios when both ran, and every run's
/// whole result in `trials`, in the order they ran. Each run goes on
/// `events` as it finishes ([`MethodEvent::RepeatRun`]). A stop ends
/// the method after the run in progress (cut short, kept in `trials`,
/// not counted); the result then says `interrupted`.
pub fn run_repeat(
    runner: &dyn Runner,
    spec: &RepeatSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    spec.validate()?;
    let start = Timestamp::now();
    let clock = Instant::now();
    let runs = run_step(
        runner,
        &spec.test,
        &spec.step,
        stop,
        events,
        &mut |r: &TestResult| {
            events.emit(Event::Method(MethodEvent::RepeatRun(Arc::new(r.clone()))));
        },
    )?;
    let mut result = MethodResult::new(MethodSpec::Repeat(spec.clone()), start);
    let outcome = outcome_of(spec, &runs);
    result.family_ratios = ratios_of(&outcome.stats);
    result.runs = Some(outcome);
    result.trials = runs.results_in_order().into_iter().cloned().collect();
    result.interrupted = runs.interrupted;
    result.duration_s = clock.elapsed().as_secs_f64();
    Ok(result)
}

/// The statistics of each family's runs: the headline figures, then each
/// direction of a test of both at once.
fn outcome_of(spec: &RepeatSpec, runs: &StepRuns) -> RepeatOutcome {
    let directions = match &spec.test {
        TestSpec::Tcp(s) => s.direction.flows(),
        TestSpec::Udp(s) => s.direction.flows(),
        TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => &[],
    };
    let mut stats = Vec::new();
    for fam in &runs.families {
        // A test of either family (none named, no --families): the
        // family its runs used, when they all used the same.
        let mut fam = fam.clone();
        if fam.family == IpFamily::Any {
            let used: Vec<IpFamily> = fam.results.iter().map(family_used).collect();
            if let Some(&first) = used.first() {
                if used.iter().all(|f| *f == first) {
                    fam.family = first;
                }
            }
        }
        let fam = &fam;
        let headline = step_stats(fam, None);
        if !headline.stats.is_empty() || directions.len() < 2 {
            stats.push(headline);
        }
        if directions.len() > 1 {
            for &d in directions {
                stats.push(step_stats(fam, Some(d)));
            }
        }
    }
    RepeatOutcome {
        metric: spec.step.metric.unwrap_or(default_metric(spec.test.kind())),
        stats,
    }
}

/// IPv6 over IPv4 of the headline figures, and of each direction (`at`
/// names it) for a test of both at once.
fn ratios_of(stats: &[StepStats]) -> Vec<sonde_model::method::FamilyRatio> {
    let mut ratios = Vec::new();
    for d in [None, Some(Direction::Forward), Some(Direction::Reverse)] {
        let part: Vec<StepStats> = stats.iter().filter(|s| s.direction == d).cloned().collect();
        ratios.extend(family_ratios(&part, d.map(direction_name)));
    }
    ratios
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Forward => "forward",
        Direction::Reverse => "reverse",
        Direction::Bidir => "bidir",
    }
}

#[cfg(test)]
#[path = "repeat_tests.rs"]
mod tests;
