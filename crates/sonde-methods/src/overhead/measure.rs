//! `sonde overhead --measure`: goodput at two or more payload sizes through
//! a path's bottleneck. A bottleneck of rate C counting `h` bytes per
//! packet beyond the payload p delivers g = C·p/(p + h), so 1/g is linear
//! in 1/p: 1/g = 1/C + (h/C)·(1/p). A least-squares line through the
//! points gives C and h; the stacks whose bytes per packet come within 4
//! bytes of h are named.

use super::stack::Stack;
use crate::MethodError;
use sonde_model::method::{family_used, OverheadFit, OverheadPoint, OverheadSpec, StackFit};
use sonde_model::{
    Direction, Event, IpFamily, MethodEvent, MethodResult, MethodSpec, TestResult, TestSpec,
    Timestamp, UdpSpec,
};
use sonde_run::{Events, Runner, Stop};
use std::time::Instant;

/// Stacks close enough to the measured overhead to be named.
const FIT_BYTES: f64 = 4.0;

/// `C` (bits/s of the counted bytes) and `h` (bytes) from `(payload,
/// goodput bps)` points; `None` with fewer than two sizes or no fit.
pub fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(p, g)| *p > 0.0 && *g > 0.0)
        .map(|(p, g)| (1.0 / p, 1.0 / g))
        .collect();
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    if intercept <= 0.0 {
        return None;
    }
    Some((1.0 / intercept, slope / intercept))
}

/// The stacks tried against a measured overhead: what a router's policer,
/// a Linux queue, an Ethernet line count, and common tunnels, over the
/// family the probe used.
pub fn candidates(family: IpFamily) -> Vec<Stack> {
    let ip = if family == IpFamily::V4 {
        "ipv4"
    } else {
        "ipv6"
    };
    let inner = format!("{ip}/udp");
    let mut names = vec![
        inner.clone(),
        format!("mac/{inner}"),
        format!("eth/{inner}"),
        format!("l1/eth/{inner}"),
        format!("mac/vlan/{inner}"),
        format!("l1/eth/vlan/{inner}"),
    ];
    for outer in ["mac/ipv4", "mac/ipv6"] {
        for tunnel in [
            "",
            "/gre",
            "/gre:key",
            "/udp/wireguard",
            "/udp/vxlan",
            "/udp/openvpn:aes-gcm",
            "/udp/openvpn:aes-cbc+sha1",
            "/udp/openvpn:bf-cbc+sha1",
            "/esp-tunnel:aes-gcm",
            "/esp-tunnel:aes-cbc+sha1",
            "/esp-tunnel:3des+sha1",
        ] {
            names.push(format!("{outer}{tunnel}/{inner}"));
        }
    }
    names.into_iter().filter_map(|n| n.parse().ok()).collect()
}

/// The candidates within [`FIT_BYTES`] of `per_packet` bytes at the
/// measured payloads, best first.
pub fn fitting(per_packet: f64, payloads: &[u32], family: IpFamily) -> Vec<StackFit> {
    let mut fits: Vec<StackFit> = candidates(family)
        .into_iter()
        .map(|s| {
            let bytes = payloads
                .iter()
                .map(|&p| f64::from(s.wire_bytes(p) - p))
                .sum::<f64>()
                / payloads.len().max(1) as f64;
            StackFit {
                stack: s.to_string(),
                bytes,
                delta_bytes: bytes - per_packet,
            }
        })
        .filter(|f| f.delta_bytes.abs() <= FIT_BYTES)
        .collect();
    fits.sort_by(|a, b| a.delta_bytes.abs().total_cmp(&b.delta_bytes.abs()));
    fits
}

/// Runs the probe at each payload size through `runner` and fits the
/// overhead. Each size's goodput goes on `events` as it is measured
/// ([`MethodEvent::OverheadPoint`]).
pub fn run_overhead(
    runner: &dyn Runner,
    spec: &OverheadSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    spec.validate()?;
    let began = Instant::now();
    let mut result = MethodResult::new(MethodSpec::Overhead(spec.clone()), Timestamp::now());
    let mut points = Vec::new();
    for (i, &payload) in spec.payloads.iter().enumerate() {
        if stop.is_stopped() {
            result.interrupted = true;
            break;
        }
        let probe = UdpSpec {
            length: payload,
            ..spec.probe.clone()
        };
        let r = runner
            .run(&TestSpec::Udp(probe), stop, events)
            .map_err(|source| MethodError::Trial {
                trial: i + 1,
                source,
            })?;
        let goodput = goodput_of(&r);
        result.trials.push(r.clone());
        if r.interrupted {
            result.interrupted = true;
            break;
        }
        let point = OverheadPoint {
            payload_bytes: payload,
            goodput_bps: goodput,
            trial: r.id,
        };
        events.emit(Event::Method(MethodEvent::OverheadPoint(point.clone())));
        points.push(point);
        crate::step::idle(spec.gap, stop);
    }
    let family = result.trials.first().map_or(spec.probe.family, family_used);
    result.overhead = fit_points(points, family);
    result.duration_s = began.elapsed().as_secs_f64();
    Ok(result)
}

fn goodput_of(r: &TestResult) -> f64 {
    r.summary
        .direction(Direction::Forward)
        .or(r.summary.direction(Direction::Reverse))
        .and_then(|f| f.throughput_bps)
        .unwrap_or(0) as f64
}

/// The fit of measured points, with its residual and the stacks it names.
pub fn fit_points(points: Vec<OverheadPoint>, family: IpFamily) -> Option<OverheadFit> {
    let xy: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (f64::from(p.payload_bytes), p.goodput_bps))
        .collect();
    let (capacity, h) = fit(&xy)?;
    let residual = xy
        .iter()
        .map(|(p, g)| (capacity * p / (p + h) / g - 1.0).abs() * 100.0)
        .fold(0.0, f64::max);
    let payloads: Vec<u32> = points.iter().map(|p| p.payload_bytes).collect();
    let ip_udp = if family == IpFamily::V4 { 28.0 } else { 48.0 };
    Some(OverheadFit {
        per_packet_bytes: h,
        beyond_ip_bytes: h - ip_udp,
        capacity_bps: capacity,
        residual_pct: residual,
        fits: fitting(h, &payloads, family),
        points,
    })
}
