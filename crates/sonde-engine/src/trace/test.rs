//! A [`TraceSpec`] run as a test: the trace, then the path MTU if asked,
//! as a [`TestResult`] whose `trace` holds every hop as the model keeps
//! it (each probe's answer and what the hop quoted).

use super::answer::AnswerKind;
use super::{Hop, ProbeKind, TraceOptions};
use crate::host_env::host_env;
use crate::EngineError;
use sonde_model::{
    HostEnv, TestEnv, TestResult, TestSpec, Timestamp, TraceAnswer, TraceFigures, TraceHop,
    TraceMtuStep, TraceProbe, TraceProto, TraceSpec,
};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What the trace sends, as the engine's probes.
pub fn options(spec: &TraceSpec) -> TraceOptions {
    TraceOptions {
        first_hop: spec.first_hop,
        max_hops: spec.max_hops,
        queries: spec.queries,
        wait: spec.wait,
        tos: spec.dscp_value() << 2,
        probes: match spec.proto {
            TraceProto::Icmp => ProbeKind::Icmp,
            TraceProto::Udp => ProbeKind::Udp,
            TraceProto::Tcp => ProbeKind::Tcp(spec.port),
        },
    }
}

/// A hop as the model keeps it.
pub fn model_hop(h: &Hop) -> TraceHop {
    TraceHop {
        ttl: h.ttl,
        probes: h
            .probes
            .iter()
            .map(|p| {
                p.as_ref().map(|p| TraceProbe {
                    from: p.from,
                    rtt_ms: p.rtt.as_secs_f64() * 1e3,
                    answer: match p.kind {
                        AnswerKind::EchoReply => TraceAnswer::EchoReply,
                        AnswerKind::PortUnreachable => TraceAnswer::PortUnreachable,
                        AnswerKind::TcpReply { open: true } => TraceAnswer::SynAck,
                        AnswerKind::TcpReply { open: false } => TraceAnswer::Rst,
                        AnswerKind::TimeExceeded => TraceAnswer::TimeExceeded,
                        AnswerKind::Unreachable(_) => TraceAnswer::Unreachable,
                        AnswerKind::TooBig(_) => TraceAnswer::TooBig,
                    },
                    mtu: match p.kind {
                        AnswerKind::TooBig(m) => Some(m),
                        _ => None,
                    },
                    dscp: p.quoted.map(|q| q.tos >> 2),
                    ecn: p.quoted.map(|q| q.tos & 3),
                    quoted_ttl: p.quoted.map(|q| q.ttl),
                    flow_label: p.quoted.and_then(|q| q.flow_label),
                    flow: p.flow,
                    mpls: p.quoted.map(|q| q.labels.labels()).unwrap_or_default(),
                })
            })
            .collect(),
    }
}

/// The first address `spec.host` resolves to (IPv6 first, or only the
/// spec's family).
pub fn target_of(spec: &TraceSpec) -> Result<IpAddr, EngineError> {
    crate::connect::resolve(&spec.host, 0, spec.family)?
        .first()
        .map(|s| s.ip())
        .ok_or_else(|| EngineError::Resolve {
            host: spec.host.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
        })
}

/// Runs the trace of `spec` toward `target`, telling `on_hop` each hop
/// as it is complete; the MTU search follows when asked (and not
/// stopped).
pub fn run_trace(
    spec: &TraceSpec,
    target: IpAddr,
    stop: &AtomicBool,
    on_hop: &mut dyn FnMut(&TraceHop),
) -> Result<TestResult, EngineError> {
    let start = Timestamp::now();
    let t0 = Instant::now();
    let sent = spec.dscp_value();
    let mut show = |h: &Hop| on_hop(&model_hop(h));
    let found = if spec.multipath {
        super::mda::multipath(target, &options(spec), spec.miss_chance(), stop, &mut show)?
    } else {
        super::trace(target, &options(spec), stop, &mut show)?
    };
    let hops: Vec<TraceHop> = found.iter().map(model_hop).collect();
    let arrived = hops.last().is_some_and(TraceHop::arrived);
    let dscp_changed_at = hops
        .iter()
        .find(|h| h.arrived_dscp().is_some_and(|d| d != sent))
        .map(|h| h.ttl);
    let (path_mtu, mtu_steps) = if spec.mtu && !stop.load(Ordering::Relaxed) {
        let found = super::mtu::path_mtu(target, spec.mtu_start, spec.wait, stop)?;
        let steps = found
            .steps
            .iter()
            .map(|s| TraceMtuStep {
                from: s.from,
                hop: hops
                    .iter()
                    .find(|h| h.probes.iter().flatten().any(|p| p.from == s.from))
                    .map(|h| h.ttl),
                mtu: s.mtu,
            })
            .collect();
        (found.mtu, steps)
    } else {
        (None, Vec::new())
    };
    let env = TestEnv {
        client: host_env(),
        // A trace's target does not describe itself.
        server: HostEnv::default(),
        peer: None,
        source: crate::connect::source_toward(target, None),
        target: Some(target),
        method: None,
    };
    let mut result = TestResult::new(TestSpec::Trace(spec.clone()), env, start);
    result.duration_s = t0.elapsed().as_secs_f64();
    result.interrupted = stop.load(Ordering::Relaxed);
    result.trace = Some(TraceFigures {
        target,
        dscp_sent: sent,
        hops,
        arrived,
        dscp_changed_at,
        path_mtu,
        mtu_steps,
    });
    Ok(result)
}
