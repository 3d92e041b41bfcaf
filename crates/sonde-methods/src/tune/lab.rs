//! The measurement laboratory of seed 003 §3.1: TCP over a range of RTTs,
//! buffer sizes and congestion controls, the RTT changed between steps by
//! `set_rtt` (on the command line: the lab link's emulator, `sonde lab
//! set`), drawn as bandwidth against RTT per buffer size (003 Fig 5).

use crate::MethodError;
use sonde_model::method::{TuneLabSpec, TuneStep};
use sonde_model::{
    Direction, Event, MethodEvent, MethodResult, MethodSpec, TcpSpec, TestSpec, Timestamp,
};
use sonde_run::{Events, Runner, Stop};
use std::time::{Duration, Instant};

/// Runs the matrix: for each RTT (set through `set_rtt`), each congestion
/// control and each buffer, one TCP test. Each cell goes on `events` as
/// it ends ([`MethodEvent::TuneLabStep`]). A stop ends it with what ran;
/// a failed RTT change ends it with that error.
pub fn run_tune_lab(
    runner: &dyn Runner,
    spec: &TuneLabSpec,
    set_rtt: &mut dyn FnMut(Duration) -> Result<(), String>,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    spec.validate()?;
    let began = Instant::now();
    let mut result = MethodResult::new(MethodSpec::TuneLab(spec.clone()), Timestamp::now());
    'all: for &rtt in &spec.rtts {
        set_rtt(rtt).map_err(|detail| MethodError::Invalid {
            field: "lab",
            detail,
        })?;
        for cc in &spec.congestion {
            for &window in &spec.windows {
                if stop.is_stopped() {
                    result.interrupted = true;
                    break 'all;
                }
                // 0: the hosts' own buffers (autotuning, no -w).
                let test = TcpSpec {
                    window: (window.bytes() > 0).then_some(window),
                    congestion: Some(cc.clone()),
                    ..spec.test.clone()
                };
                let n = result.trials.len() + 1;
                let r = runner
                    .run(&TestSpec::Tcp(test), stop, events)
                    .map_err(|source| MethodError::Trial { trial: n, source })?;
                let step = TuneStep {
                    rtt_ms: rtt.as_secs_f64() * 1000.0,
                    window_bytes: window.bytes(),
                    congestion: cc.clone(),
                    goodput_bps: r
                        .summary
                        .direction(Direction::Forward)
                        .and_then(|f| f.throughput_bps),
                    trial: r.id,
                };
                let cut = r.interrupted;
                result.trials.push(r);
                if cut {
                    result.interrupted = true;
                    break 'all;
                }
                events.emit(Event::Method(MethodEvent::TuneLabStep(step.clone())));
                result.tune_steps.push(step);
                crate::step::idle(spec.gap, stop);
            }
        }
    }
    result.duration_s = began.elapsed().as_secs_f64();
    Ok(result)
}
