//! `sonde tcp|udp|ping … --repeat N | --until-stddev PCT | --families 6,4`:
//! the test run as a `repeat` method, through `sonde_methods::run_method`.
//! Text: one line per run as it finishes (its family and headline
//! figures, from the method's events; with `-V` the run's whole summary
//! first), then the statistics per
//! family and the IPv6/IPv4 ratios. `-J`: the method document (every
//! run's whole result in `trials`). Ctrl-C cuts the run in progress
//! short and prints what ran (exit 130).

use crate::failure::Failure;
use crate::output::{interrupt_flag, Output};
use crate::run_args::JsonFormat;
use crate::sink::Sink;
use crate::step_args::StepArgs;
use anyhow::anyhow;
use sonde_methods::MethodError;
use sonde_model::method::RepeatSpec;
use sonde_model::{Event, MethodEvent, MethodSpec, TestSpec};
use sonde_report::{repeat_summary, run_line, summary, with_rate_format, LiveText, RateFormat};
use sonde_run::LocalRunner;

/// The flag that sets a field of the repeat plan.
fn plan_flag(field: &str) -> &str {
    match field {
        "repeat.runs" | "step.repeat.runs" => "--repeat",
        "repeat.stddev_pct" | "step.repeat.stddev_pct" => "--until-stddev",
        "repeat.min_runs" | "repeat.max_runs" | "step.repeat.min_runs" | "step.repeat.max_runs" => {
            "--min-runs/--max-runs"
        }
        "families" | "step.families" => "--families",
        "metric" | "step.metric" => "--metric",
        other => other,
    }
}

/// Runs `test` as `step` says and prints it where `output` says.
pub fn run_repeated(test: TestSpec, step: &StepArgs, output: Output) -> Result<(), Failure> {
    if output.json == Some(JsonFormat::Iperf3) {
        let failure = Failure::Usage(anyhow!(
            "--json=iperf3 prints one test in iperf3's layout: with --repeat, \
             --until-stddev or --families use -J (sonde's method document)"
        ));
        return Err(output.fail(Some(&test), "invalid", failure));
    }
    let spec = RepeatSpec {
        test,
        step: step.plan(),
    };
    run_repeat_spec(&spec, output)
}

/// Runs a repeat method's spec (from flags, or a file given to `sonde
/// run`: then errors name the spec's keys, not flags).
pub fn run_repeat_spec(spec: &RepeatSpec, output: Output) -> Result<(), Failure> {
    let name = |field: &'static str| {
        if output.flags {
            plan_flag(field).to_string()
        } else {
            field.to_string()
        }
    };
    if let Err(e) = spec.validate() {
        let failure = Failure::Usage(anyhow!("invalid {}: {}", name(e.field), e.reason));
        return Err(output.fail(Some(&spec.test), "invalid", failure));
    }
    if let Some(failure) = missing_family(spec, &output) {
        return Err(output.fail(Some(&spec.test), "invalid", failure));
    }
    let stop = interrupt_flag();
    let print = printer(&spec.test, &output);
    let method = MethodSpec::Repeat(spec.clone());
    let outcome = crate::method_output::with_printer(print, |events| {
        sonde_methods::run_method(&LocalRunner, &method, &stop, events)
    });
    let result = match outcome {
        Ok(result) => result,
        Err(e) => return Err(method_failed(&output, &spec.test, e)),
    };
    if let Some(kept) = &output.archive {
        kept.method(&result)?;
    }
    let out = match output.json {
        Some(_) => serde_json::to_string_pretty(&result)? + "\n",
        None => with_rate_format(output.rates, || repeat_summary(&result)),
    };
    output.sink.out(&out)?;
    if result.interrupted {
        return Err(Failure::Interrupted);
    }
    Ok(())
}

fn method_failed(output: &Output, test: &TestSpec, e: MethodError) -> Failure {
    match e {
        MethodError::Trial { source, .. } => {
            let kind = source.kind();
            output.fail(Some(test), kind, Failure::from_run(source, output.flags))
        }
        MethodError::Invalid { field, detail } => {
            let field = if output.flags {
                plan_flag(field).to_string()
            } else if field.starts_with("step.") {
                field.to_string()
            } else {
                format!("step.{field}")
            };
            let failure = Failure::Usage(anyhow!("invalid {field}: {detail}"));
            output.fail(Some(test), "invalid", failure)
        }
    }
}

/// With more than one family, a host that lacks an address of one of
/// them is refused before any run (rather than after the first runs,
/// whose results would be lost with the method).
fn missing_family(spec: &RepeatSpec, output: &Output) -> Option<Failure> {
    if spec.step.families.len() < 2 {
        return None;
    }
    let host = spec.test.host();
    spec.step.families.iter().find_map(|&family| {
        let e = sonde_engine::connect::resolve(host, 0, family).err()?;
        let key = if output.flags {
            "--families"
        } else {
            "step.families"
        };
        Some(Failure::Usage(anyhow!("invalid {key}: {e}")))
    })
}

/// What prints a repeat's events: each run's line as it ends (unless
/// JSON was asked for), and the runs' warnings (standard error); their
/// interval lines are left out.
fn printer(spec: &TestSpec, output: &Output) -> impl FnMut(&Event) + Send {
    let mut text = LiveText::for_spec(spec);
    let run_lines = output.json.is_none();
    let (rates, sink, verbose): (_, Sink, _) = (output.rates, output.sink.clone(), output.verbose);
    let mut number = 0;
    move |event: &Event| {
        if let Event::Method(MethodEvent::RepeatRun(r)) = event {
            number += 1;
            if run_lines {
                // -V: each run's whole summary before its line.
                let mut out = String::new();
                if verbose {
                    out = with_rate_format(rates, || summary(r)) + "\n";
                }
                out += &with_rate_format(rates, || run_line(number, r));
                let _ = sink.out(&out);
            }
            return;
        }
        let lines = with_rate_format(RateFormat::Auto, || text.on_event(event));
        if !lines.stderr.is_empty() {
            sink.err(&lines.stderr);
        }
    }
}
