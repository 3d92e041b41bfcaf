//! TCP tuning (seed 003 §3): [`run_tune`] measures a path's RTT and
//! bottleneck, TCP as the hosts are set, and advises buffers sized to the
//! path ([`advice`]), then verifies them; [`lab::run_tune_lab`] runs the
//! measurement laboratory's matrix of RTTs × buffers × congestion
//! controls (003 Fig 5).

pub mod advice;
pub mod lab;

#[cfg(test)]
mod tests;

use crate::MethodError;
use advice::{advise, Measured};
use sonde_model::method::{TuneFindings, TuneSpec};
use sonde_model::{
    ByteSize, Direction, Event, MethodEvent, MethodResult, MethodSpec, PingSpec, TcpSpec,
    TestResult, TestSpec, Timestamp, UdpSpec,
};
use sonde_run::{Events, Runner, Stop};
use std::time::{Duration, Instant};

/// Runs one trial, keeping it in `result`.
fn trial(
    runner: &dyn Runner,
    spec: TestSpec,
    result: &mut MethodResult,
    stop: &Stop,
    events: &Events,
) -> Result<TestResult, MethodError> {
    let n = result.trials.len() + 1;
    let r = runner
        .run(&spec, stop, events)
        .map_err(|source| MethodError::Trial { trial: n, source })?;
    result.trials.push(r.clone());
    Ok(r)
}

fn forward_bps(r: &TestResult) -> f64 {
    r.summary
        .direction(Direction::Forward)
        .and_then(|f| f.throughput_bps)
        .unwrap_or(0) as f64
}

/// The probes of a tune: the RTT's pings, and unpaced UDP through the
/// bottleneck.
pub(crate) fn probes(spec: &TuneSpec) -> (TestSpec, TestSpec) {
    let t = &spec.test;
    let ping = PingSpec {
        host: t.host.clone(),
        count: u64::from(spec.pings),
        interval: Duration::from_millis(200),
        family: t.family,
        ..PingSpec::default()
    };
    let udp = UdpSpec {
        host: t.host.clone(),
        port: t.port,
        family: t.family,
        time: spec.bottleneck_time,
        interval: Duration::ZERO,
        bitrate: sonde_model::Rate::from_bps(0),
        length: 1400,
        title: t.title.clone(),
        ..UdpSpec::default()
    };
    (ping.into(), udp.into())
}

/// Measures, advises and verifies. What each stage found goes on
/// `events` in words ([`MethodEvent::TuneStage`], to print as it goes).
/// A stop ends it with what ran.
pub fn run_tune(
    runner: &dyn Runner,
    spec: &TuneSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    let on_stage = |stage: String| events.emit(Event::Method(MethodEvent::TuneStage(stage)));
    spec.validate()?;
    let began = Instant::now();
    let mut result = MethodResult::new(MethodSpec::Tune(spec.clone()), Timestamp::now());
    let (ping, udp) = probes(spec);
    let pinged = trial(runner, ping, &mut result, stop, events)?;
    let rtt_ms = pinged
        .summary
        .round_trip
        .as_ref()
        .and_then(|f| f.rtt_ms.as_ref())
        .map(|r| r.p50)
        .filter(|v| *v > 0.0);
    let Some(rtt_ms) = rtt_ms else {
        return Err(MethodError::Invalid {
            field: "host",
            detail: format!("no echo reply from {}: the RTT is needed", spec.test.host),
        });
    };
    on_stage(format!(
        "RTT {rtt_ms:.2} ms (median of {} pings)",
        spec.pings
    ));
    let bottle = trial(runner, udp, &mut result, stop, events)?;
    let bottleneck = forward_bps(&bottle);
    on_stage(format!(
        "bottleneck {:.1} Mbit/s (unpaced UDP for {} s)",
        bottleneck / 1e6,
        spec.bottleneck_time.as_secs_f64()
    ));
    crate::step::idle(spec.gap, stop);
    let base = trial(runner, spec.test.clone().into(), &mut result, stop, events)?;
    let baseline = forward_bps(&base);
    on_stage(format!("TCP as set now: {:.1} Mbit/s", baseline / 1e6));
    let measured = Measured {
        rtt_ms,
        bottleneck_bps: bottleneck,
        baseline_bps: baseline,
        client: base.env.client.tcp_buffers.clone(),
        server: base.env.server.tcp_buffers.clone(),
    };
    let a = advise(&measured);
    let mut findings = TuneFindings {
        rtt_ms,
        bottleneck_bps: bottleneck,
        bdp_bytes: a.bdp_bytes,
        baseline_bps: baseline,
        client: measured.client,
        server: measured.server,
        ceilings: a.ceilings,
        limit: a.limit,
        limit_evidence: a.evidence,
        advised_bytes: a.advised_bytes,
        sysctl: a.sysctl,
        warnings: a.warnings,
        verified_bps: None,
        gain: None,
        trials: vec![pinged.id, bottle.id, base.id],
    };
    if !stop.is_stopped() && !base.interrupted {
        crate::step::idle(spec.gap, stop);
        let window = spec
            .window
            .unwrap_or(ByteSize::from_bytes(findings.advised_bytes));
        let verify = TcpSpec {
            window: Some(window),
            ..spec.test.clone()
        };
        let v = trial(runner, verify.into(), &mut result, stop, events)?;
        let verified = forward_bps(&v);
        findings.verified_bps = Some(verified);
        findings.gain = Some(verified / baseline.max(1.0));
        findings.trials.push(v.id);
        on_stage(format!(
            "TCP with -w {}: {:.1} Mbit/s",
            window,
            verified / 1e6
        ));
    }
    result.interrupted = result.trials.iter().any(|t| t.interrupted) || stop.is_stopped();
    result.tune = Some(findings);
    result.duration_s = began.elapsed().as_secs_f64();
    Ok(result)
}
