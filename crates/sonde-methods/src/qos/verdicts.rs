//! The verdicts of the QoS checks: pure functions of the trials' results,
//! each with its evidence in a sentence and its figures by name.

use sonde_model::method::{family_used, QosVerdict};
use sonde_model::{Direction, Dscp, Figures, IpFamily, TestResult};
use std::collections::BTreeMap;

/// A verdict with what shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub verdict: QosVerdict,
    pub evidence: String,
    pub figures: BTreeMap<String, f64>,
}

/// Share of packets a marking must arrive with to count as the one that
/// arrived (the rest may be a few packets of another path).
const MARKING_SHARE_PCT: f64 = 99.0;

/// The most of its share an LBE class gets under congestion and still
/// counts as squeezed.
const SQUEEZED_SHARE: f64 = 1.5;

/// Loss under which a check counts nothing as lost (a packet or two of
/// thousands is the generator, as 004 §4.1.1 found, not the network).
const NO_LOSS_PCT: f64 = 0.1;

fn forward(r: &TestResult) -> Option<&Figures> {
    r.summary.direction(Direction::Forward)
}

fn put(f: &mut BTreeMap<String, f64>, name: &str, v: Option<f64>) {
    if let Some(v) = v {
        f.insert(name.to_string(), v);
    }
}

/// IP and UDP header bytes per packet of the family a result used.
pub fn ip_udp_header_bytes(r: &TestResult) -> u32 {
    match family_used(r) {
        IpFamily::V4 => 20 + 8,
        _ => 40 + 8,
    }
}

/// What `sent` arrived as: kept, reset to 0, or remarked.
pub fn marking(r: &TestResult, sent: Dscp) -> Finding {
    let mut figures = BTreeMap::new();
    let Some(f) = forward(r) else {
        return no_figures(QosVerdict::Remarked, "the probe measured nothing forward");
    };
    let arrived: Vec<(u8, u64)> = f
        .dscp_received
        .as_ref()
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let total: u64 = arrived.iter().map(|(_, n)| n).sum();
    let Some(&(top, top_n)) = arrived.iter().max_by_key(|(_, n)| *n) else {
        return no_figures(QosVerdict::Remarked, "no packet arrived");
    };
    let share = top_n as f64 * 100.0 / total as f64;
    figures.insert("received_packets".into(), total as f64);
    figures.insert("arrived_dscp".into(), f64::from(top));
    figures.insert("arrived_share_pct".into(), share);
    let top_dscp = Dscp::new(top).unwrap_or_default();
    let verdict = if top == sent.value() && share >= MARKING_SHARE_PCT {
        QosVerdict::Kept
    } else if top == 0 {
        QosVerdict::Reset
    } else {
        QosVerdict::Remarked
    };
    let others = if share < MARKING_SHARE_PCT {
        format!(
            " (others: {})",
            arrived
                .iter()
                .filter(|(d, _)| *d != top)
                .map(|(d, n)| format!("{n} as {}", Dscp::new(*d).unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        String::new()
    };
    Finding {
        verdict,
        evidence: format!(
            "sent {sent}, arrived {top_dscp} in {share:.1} % of {total} packets{others}"
        ),
        figures,
    }
}

fn no_figures(verdict: QosVerdict, why: &str) -> Finding {
    Finding {
        verdict,
        evidence: why.to_string(),
        figures: BTreeMap::new(),
    }
}

/// A premium probe sent above the expected policer: what got through.
/// The policer's rate is counted, as routers count it, in bits/s of IP
/// packets (payload + UDP + IP headers).
pub fn policing(r: &TestResult, expected_bps: Option<u64>) -> Finding {
    let Some(f) = forward(r) else {
        return no_figures(QosVerdict::NotPoliced, "the probe measured nothing forward");
    };
    let payload = r.spec_payload_len();
    let scale = f64::from(payload + ip_udp_header_bytes(r)) / f64::from(payload.max(1));
    let offered = f.sender_throughput_bps.map(|v| v as f64);
    let admitted = f.throughput_bps.map(|v| v as f64);
    let loss = f.loss_pct.unwrap_or(0.0);
    let mut figures = BTreeMap::new();
    put(&mut figures, "offered_bps", offered);
    put(&mut figures, "admitted_bps", admitted);
    put(&mut figures, "loss_pct", Some(loss));
    put(&mut figures, "jitter_ms", f.jitter_ms);
    let admitted_ip = admitted.map(|a| a * scale);
    let expected = expected_bps.map(|e| e as f64);
    let vs_expected = match (admitted_ip, expected) {
        (Some(a), Some(e)) if e > 0.0 => {
            figures.insert("expected_policer_ip_bps".into(), e);
            format!(
                " (expected {:.2} Mbit/s: {:+.1} %)",
                e / 1e6,
                (a / e - 1.0) * 100.0
            )
        }
        _ => String::new(),
    };
    let mbit = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{:.2}", v / 1e6));
    if loss > 1.0 {
        put(&mut figures, "policer_ip_bps", admitted_ip);
        Finding {
            verdict: QosVerdict::Policed,
            evidence: format!(
                "offered {} Mbit/s, {} Mbit/s got through with {loss:.1} % lost: a policer at {} Mbit/s of IP packets{vs_expected}",
                mbit(offered),
                mbit(admitted),
                mbit(admitted_ip),
            ),
            figures,
        }
    } else {
        Finding {
            verdict: QosVerdict::NotPoliced,
            evidence: format!(
                "offered {} Mbit/s, {} Mbit/s got through with {loss:.2} % lost: no policer at this rate",
                mbit(offered),
                mbit(admitted)
            ),
            figures,
        }
    }
}

/// An on/off source (`on_bps` while on): smoothed, unchanged or lost,
/// from the arrival rate per interval.
pub fn shaping(r: &TestResult, on_bps: u64) -> Finding {
    let Some(f) = forward(r) else {
        return no_figures(QosVerdict::Lost, "the probe measured nothing forward");
    };
    let loss = f.loss_pct.unwrap_or(0.0);
    let arrivals: Vec<f64> = r
        .intervals
        .iter()
        .filter(|i| !i.omitted)
        .filter_map(|i| i.sum(Direction::Forward)?.throughput_bps)
        .map(|v| v as f64)
        .collect();
    let peak = arrivals.iter().copied().fold(0.0, f64::max);
    let on = on_bps as f64;
    // Intervals with some arrival but under half the on-rate: a shaper's
    // queue draining into what the source left silent.
    let between = arrivals
        .iter()
        .filter(|&&a| a > on * 0.05 && a < on * 0.5)
        .count();
    let mut figures = BTreeMap::new();
    figures.insert("on_bps".into(), on);
    figures.insert("peak_arrival_bps".into(), peak);
    figures.insert("loss_pct".into(), loss);
    figures.insert("smoothed_intervals".into(), between as f64);
    put(&mut figures, "jitter_ms", f.jitter_ms);
    let (verdict, what) = if loss > NO_LOSS_PCT {
        (
            QosVerdict::Lost,
            "bursts lost packets: policed or dropped, not smoothed",
        )
    } else if peak < on * 0.9 || between > 0 {
        (QosVerdict::Smoothed, "smoothed on arrival, nothing lost")
    } else {
        (QosVerdict::Unchanged, "arrived as sent, nothing lost")
    };
    Finding {
        verdict,
        evidence: format!(
            "{what}: on at {:.2} Mbit/s, arrival peaked at {:.2} Mbit/s per interval, {} intervals between on and off, {loss:.2} % lost",
            on / 1e6,
            peak / 1e6,
            between
        ),
        figures,
    }
}

/// Premium alone against premium beside a congesting background.
pub fn priority(alone: &TestResult, loaded: &TestResult, background: &TestResult) -> Finding {
    let fig = |r: &TestResult| forward(r).cloned().unwrap_or_default();
    let (a, l, b) = (fig(alone), fig(loaded), fig(background));
    let (la, ll, lb) = (
        a.loss_pct.unwrap_or(0.0),
        l.loss_pct.unwrap_or(0.0),
        b.loss_pct.unwrap_or(0.0),
    );
    let mut figures = BTreeMap::new();
    figures.insert("loss_alone_pct".into(), la);
    figures.insert("loss_loaded_pct".into(), ll);
    figures.insert("background_loss_pct".into(), lb);
    put(&mut figures, "jitter_alone_ms", a.jitter_ms);
    put(&mut figures, "jitter_loaded_ms", l.jitter_ms);
    put(
        &mut figures,
        "background_bps",
        b.throughput_bps.map(|v| v as f64),
    );
    let jit = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.3}"));
    let evidence = format!(
        "premium lost {la:.3} % alone and {ll:.3} % beside a background that lost {lb:.1} %; jitter {} ms alone, {} ms loaded",
        jit(a.jitter_ms),
        jit(l.jitter_ms)
    );
    let verdict = if lb < 1.0 {
        QosVerdict::NoCongestion
    } else if ll <= la + NO_LOSS_PCT {
        QosVerdict::Protected
    } else {
        QosVerdict::NotProtected
    };
    Finding {
        verdict,
        evidence,
        figures,
    }
}

/// Less than best effort beside a congesting best-effort background:
/// what it got, in bits/s of IP packets, against its minimum share of
/// the link (`share_bps`), and its loss against the background's.
/// Squeezed when, with best effort congested, it got 90 % to 150 % of
/// its share ([`SQUEEZED_SHARE`]: an LBE class borrows nothing while
/// best effort is backlogged); starved below; not squeezed above (it
/// shared the queue with best effort). Losses alone do not tell: two
/// flows in one tail-drop queue lose unlike shares when one is bursty.
pub fn lbe(loaded: &TestResult, background: &TestResult, share_bps: u64) -> Finding {
    let b = forward(background).cloned().unwrap_or_default();
    let lb = b.loss_pct.unwrap_or(0.0);
    // Only the seconds the background was congesting the path count: a
    // background that started late (a slow agent) leaves LBE alone.
    let Some(under) = under_background(loaded, background) else {
        return no_figures(
            QosVerdict::NoCongestion,
            "no second of the LBE probe fell within the background's run",
        );
    };
    let ll = under.loss_pct();
    let payload = f64::from(loaded.spec_payload_len().max(1));
    let got = under.bytes as f64 * 8.0 / under.secs
        * (payload + f64::from(ip_udp_header_bytes(loaded)))
        / payload;
    let mut figures = BTreeMap::new();
    figures.insert("lbe_ip_bps".into(), got);
    figures.insert("share_bps".into(), share_bps as f64);
    figures.insert("lbe_loss_pct".into(), ll);
    figures.insert("background_loss_pct".into(), lb);
    let evidence = format!(
        "LBE got {:.3} Mbit/s of IP packets against a minimum share of {:.3} ({:.0} %), losing {ll:.1} % beside best effort that lost {lb:.1} %",
        got / 1e6,
        share_bps as f64 / 1e6,
        got * 100.0 / (share_bps.max(1) as f64)
    );
    let verdict = if lb < 1.0 {
        QosVerdict::NoCongestion
    } else if got < 0.9 * share_bps as f64 {
        QosVerdict::Starved
    } else if got <= SQUEEZED_SHARE * share_bps as f64 {
        QosVerdict::Squeezed
    } else {
        QosVerdict::NotSqueezed
    };
    Finding {
        verdict,
        evidence,
        figures,
    }
}

/// A probe's forward figures over some of its intervals.
struct Span {
    bytes: u64,
    secs: f64,
    lost: u64,
    received: u64,
}

impl Span {
    fn loss_pct(&self) -> f64 {
        let base = self.lost + self.received;
        if base == 0 {
            0.0
        } else {
            self.lost as f64 * 100.0 / base as f64
        }
    }
}

fn epoch_s(t: &sonde_model::Timestamp) -> f64 {
    t.0.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `probe`'s forward intervals after its own first second (its queue
/// filling) that lie wholly within `background`'s run after the
/// background's first second (its queues full), added up; `None` if none
/// do.
fn under_background(probe: &TestResult, background: &TestResult) -> Option<Span> {
    let from = (epoch_s(&background.start) + 1.0).max(epoch_s(&probe.start) + 1.0);
    let to = epoch_s(&background.start) + background.duration_s;
    let t0 = epoch_s(&probe.start);
    let mut span = Span {
        bytes: 0,
        secs: 0.0,
        lost: 0,
        received: 0,
    };
    for iv in probe.intervals.iter().filter(|iv| !iv.omitted) {
        if t0 + iv.start_s < from || t0 + iv.end_s > to {
            continue;
        }
        let Some(f) = iv
            .sums
            .iter()
            .find(|f| f.direction == Some(Direction::Forward))
        else {
            continue;
        };
        span.bytes += f.received_bytes.unwrap_or(0);
        span.lost += f.lost_packets.unwrap_or(0);
        span.received += f.received_packets.unwrap_or(0);
        span.secs += iv.end_s - iv.start_s;
    }
    (span.secs > 0.0).then_some(span)
}

/// The payload size of a UDP result's spec.
trait PayloadLen {
    fn spec_payload_len(&self) -> u32;
}

impl PayloadLen for TestResult {
    fn spec_payload_len(&self) -> u32 {
        match &self.spec {
            sonde_model::TestSpec::Udp(s) => s.payload_len(),
            _ => 1400,
        }
    }
}
