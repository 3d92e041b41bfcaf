//! `sonde qos scenario`: a foreground flow in a class against a
//! background of best effort, as seed 004 Table 4: per step the
//! foreground's rate achieved, jitter and loss, and the background's
//! (Tables 5 and 6).

use super::{background_tcp, background_udp, Senders, Trials};
use crate::MethodError;
use sonde_model::method::{QosRamp, QosScenarioSpec, QosStep};
use sonde_model::{
    Direction, Event, Figures, MethodEvent, MethodResult, MethodSpec, Rate, TestResult, TestSpec,
    Timestamp,
};
use sonde_run::{Events, Stop};
use std::time::Instant;

/// The background mix of one step: UDP then TCP, by the spec's shares
/// (a share of 0 sends nothing of that kind).
pub fn background_of(spec: &QosScenarioSpec) -> Vec<TestSpec> {
    let time = spec.step_time() + 2 * spec.lead;
    let total = spec.background_rate.bps() as f64;
    let tcp = (total * spec.background_tcp_pct / 100.0).round() as u64;
    let udp = spec.background_rate.bps().saturating_sub(tcp);
    let toward = &spec.udp_foreground;
    let mut out = Vec::new();
    if udp > 0 {
        out.push(background_udp(toward, udp, spec.background_length, time).into());
    }
    if tcp > 0 {
        out.push(background_tcp(toward, tcp, time).into());
    }
    out
}

/// The foreground test of each step, in order.
pub fn foreground_steps(spec: &QosScenarioSpec) -> Vec<TestSpec> {
    match &spec.ramp {
        QosRamp::Rates(rates) => rates
            .iter()
            .map(|&r| {
                TestSpec::Udp(sonde_model::UdpSpec {
                    bitrate: r,
                    ..spec.udp_foreground.clone()
                })
            })
            .collect(),
        QosRamp::Streams(counts) => counts
            .iter()
            .map(|&n| {
                TestSpec::Tcp(sonde_model::TcpSpec {
                    parallel: n,
                    ..spec.tcp_foreground.clone()
                })
            })
            .collect(),
    }
}

/// Runs each step of `spec`: the background from `senders`' agent (else
/// this host), the foreground from this host. Each step goes on
/// `events` as it ends ([`MethodEvent::QosStep`]). A stop ends the
/// scenario with what ran.
pub fn run_qos_scenario(
    senders: &Senders<'_>,
    spec: &QosScenarioSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    spec.validate()?;
    let began = Instant::now();
    let mut trials = Trials::new(
        MethodResult::new(MethodSpec::QosScenario(spec.clone()), Timestamp::now()),
        stop,
        events,
    );
    let background = background_of(spec);
    let bg_runner = senders.agent.map_or(senders.local, |(_, r)| r);
    for fg in foreground_steps(spec) {
        let Some((f, bg)) = trials.beside(
            senders.local,
            fg.clone(),
            bg_runner,
            background.clone(),
            spec.lead,
        )?
        else {
            break;
        };
        let step = step_of(&fg, &f, &bg);
        events.emit(Event::Method(MethodEvent::QosStep(step.clone())));
        trials.result.qos_steps.push(step);
        crate::step::idle(spec.gap, stop);
    }
    let mut result = trials.finish();
    result.duration_s = began.elapsed().as_secs_f64();
    Ok(result)
}

fn forward(r: &TestResult) -> Figures {
    r.summary
        .direction(Direction::Forward)
        .cloned()
        .unwrap_or_default()
}

/// One row of Table 5 or 6 from the step's results.
pub fn step_of(fg_spec: &TestSpec, fg: &TestResult, bg: &[TestResult]) -> QosStep {
    let f = forward(fg);
    let is_udp = matches!(fg_spec, TestSpec::Udp(_));
    let (offered, streams) = match fg_spec {
        TestSpec::Udp(s) => (Some(s.bitrate.bps()), s.parallel),
        TestSpec::Tcp(s) => (s.bitrate.map(Rate::bps), s.parallel),
        TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => (None, 0),
    };
    let udp_bg = bg.iter().find(|r| matches!(r.spec, TestSpec::Udp(_)));
    let tcp_bg = bg.iter().find(|r| matches!(r.spec, TestSpec::Tcp(_)));
    let b = udp_bg.map(forward).unwrap_or_default();
    let mut trials = vec![fg.id];
    trials.extend(bg.iter().map(|r| r.id));
    QosStep {
        fg_offered_bps: offered,
        fg_streams: streams,
        fg_achieved_bps: f.throughput_bps,
        fg_jitter_ms: if is_udp { f.jitter_ms } else { None },
        fg_loss_pct: if is_udp { f.loss_pct } else { None },
        bg_achieved_bps: b.throughput_bps,
        bg_jitter_ms: b.jitter_ms,
        bg_loss_pct: b.loss_pct,
        bg_tcp_bps: tcp_bg.and_then(|r| forward(r).throughput_bps),
        fg_decodable_pct: f.decodable_frames_pct,
        fg_frames: f.frames,
        trials,
    }
}
