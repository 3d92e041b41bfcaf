//! The advice of `sonde tune`, a pure function of what was measured and
//! both ends' TCP buffer settings (seed 003 §3): the ceiling each buffer
//! puts on TCP at the path's RTT, which end limits, the four sysctl lines
//! sized to the path, and the warnings 003 gives.

use sonde_model::method::{Ceiling, TuneLimit};
use sonde_model::TcpBuffers;

/// What the measurements found.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub rtt_ms: f64,
    pub bottleneck_bps: f64,
    /// TCP as the hosts are set now, this host sending.
    pub baseline_bps: f64,
    pub client: Option<TcpBuffers>,
    pub server: Option<TcpBuffers>,
}

/// The advice.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    pub bdp_bytes: u64,
    pub ceilings: Vec<Ceiling>,
    pub limit: TuneLimit,
    pub evidence: String,
    pub advised_bytes: u64,
    pub sysctl: Vec<String>,
    pub warnings: Vec<String>,
}

const MIB: u64 = 1 << 20;

/// TCP reaching this share of the bottleneck is limited by the path.
const PATH_SHARE: f64 = 0.9;

/// The window without RFC 7323 scaling.
const UNSCALED_WINDOW: u64 = 65_535;

fn human(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB / 4) {
        format!("{} MiB", bytes as f64 / MIB as f64)
    } else if bytes >= 1024 {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// The buffer advised for a path of `bdp` bytes: twice the BDP (room for
/// the window to grow past it while losses are repaired), in whole MiB,
/// never under 4 MiB (today's kernels' own default maximum).
pub fn advised_bytes(bdp: u64) -> u64 {
    (2 * bdp).div_ceil(MIB).max(4) * MIB
}

fn ceiling(end: &str, setting: &str, bytes: u64, rtt_ms: f64) -> Ceiling {
    Ceiling {
        end: end.to_string(),
        setting: setting.to_string(),
        bytes,
        ceiling_bps: bytes as f64 * 8.0 / (rtt_ms / 1000.0).max(1e-6),
    }
}

/// The ceilings this host's send buffer and the server's receive buffer
/// put on TCP from this host at `rtt_ms`: the most data that can be in
/// flight, per round trip.
fn ceilings(m: &Measured) -> Vec<Ceiling> {
    let mut out = Vec::new();
    if let Some(s) = &m.server {
        out.push(ceiling(
            "the server (receiver)",
            "net.ipv4.tcp_rmem max",
            s.tcp_rmem[2],
            m.rtt_ms,
        ));
        if !s.window_scaling {
            out.push(ceiling(
                "the server (receiver)",
                "net.ipv4.tcp_window_scaling = 0",
                UNSCALED_WINDOW,
                m.rtt_ms,
            ));
        }
    }
    if let Some(c) = &m.client {
        out.push(ceiling(
            "this host (sender)",
            "net.ipv4.tcp_wmem max",
            c.tcp_wmem[2],
            m.rtt_ms,
        ));
        if !c.window_scaling {
            out.push(ceiling(
                "this host (sender)",
                "net.ipv4.tcp_window_scaling = 0",
                UNSCALED_WINDOW,
                m.rtt_ms,
            ));
        }
    }
    out
}

fn warnings(m: &Measured, advised: u64) -> Vec<String> {
    let mut out = Vec::new();
    let asymmetric = |who: &str, b: &TcpBuffers, out: &mut Vec<String>| {
        if b.tcp_wmem[2] > b.tcp_rmem[2] || b.wmem_max > b.rmem_max {
            out.push(format!(
                "{who}: send buffers (tcp_wmem max {}, wmem_max {}) are larger than receive \
                 buffers (tcp_rmem max {}, rmem_max {}); seed 003 found this degrades TCP once the \
                 data in flight exceeds the receive buffer: make them equal, or the receive \
                 buffers larger",
                human(b.tcp_wmem[2]),
                human(b.wmem_max),
                human(b.tcp_rmem[2]),
                human(b.rmem_max)
            ));
        }
    };
    if let Some(c) = &m.client {
        asymmetric("this host", c, &mut out);
    }
    if let Some(s) = &m.server {
        asymmetric("the server", s, &mut out);
    }
    if let (Some(c), Some(s)) = (&m.client, &m.server) {
        if c.tcp_wmem[2] > s.tcp_rmem[2] {
            out.push(format!(
                "this host's send buffer (tcp_wmem max {}) is larger than the server's receive \
                 buffer (tcp_rmem max {}): size the receiver at least as large",
                human(c.tcp_wmem[2]),
                human(s.tcp_rmem[2])
            ));
        }
    }
    for (who, b) in [("this host", &m.client), ("the server", &m.server)] {
        if let Some(b) = b {
            if !b.window_scaling {
                out.push(format!(
                    "{who}: window scaling is off (net.ipv4.tcp_window_scaling = 0): no window \
                     over 64 KiB whatever the buffers"
                ));
            }
            if b.rmem_max < advised || b.wmem_max < advised {
                out.push(format!(
                    "{who}: rmem_max {} / wmem_max {} cap what a socket may ask for (-w): the \
                     verification's {} needs them raised (or root's SO_*BUFFORCE)",
                    human(b.rmem_max),
                    human(b.wmem_max),
                    human(advised)
                ));
            }
        }
    }
    if m.server.is_none() {
        out.push(
            "the server did not say its buffers (not a sonde server): its receive buffer is not \
             judged"
                .into(),
        );
    }
    out
}

/// The four lines of seed 003 §3, sized to `advised` bytes, keeping this
/// host's minimum and default (they size every socket's first buffer).
fn sysctl(advised: u64, host: Option<&TcpBuffers>) -> Vec<String> {
    let (rmin, rdef) = host.map_or((4096, 131_072), |b| (b.tcp_rmem[0], b.tcp_rmem[1]));
    let (wmin, wdef) = host.map_or((4096, 16_384), |b| (b.tcp_wmem[0], b.tcp_wmem[1]));
    vec![
        format!("net.core.rmem_max = {advised}"),
        format!("net.core.wmem_max = {advised}"),
        format!("net.ipv4.tcp_rmem = {rmin} {rdef} {advised}"),
        format!("net.ipv4.tcp_wmem = {wmin} {wdef} {advised}"),
    ]
}

/// The advice for what `m` found.
pub fn advise(m: &Measured) -> Advice {
    let bdp = (m.bottleneck_bps * m.rtt_ms / 1000.0 / 8.0).round() as u64;
    let advised = advised_bytes(bdp);
    let ceilings = ceilings(m);
    let tightest = ceilings
        .iter()
        .min_by(|a, b| a.ceiling_bps.total_cmp(&b.ceiling_bps));
    let mbit = |v: f64| format!("{:.1} Mbit/s", v / 1e6);
    let measured = format!(
        "TCP reached {} of a {} path ({:.0} %) at {:.1} ms RTT (BDP {})",
        mbit(m.baseline_bps),
        mbit(m.bottleneck_bps),
        m.baseline_bps * 100.0 / m.bottleneck_bps.max(1.0),
        m.rtt_ms,
        human(bdp)
    );
    let (limit, evidence) = if m.baseline_bps >= PATH_SHARE * m.bottleneck_bps {
        (
            TuneLimit::Path,
            format!("{measured}: the path limits, not the hosts"),
        )
    } else {
        match tightest {
            Some(c) if c.ceiling_bps < m.bottleneck_bps => {
                let limit = if c.end.ends_with("(receiver)") {
                    TuneLimit::ReceiverBuffer
                } else {
                    TuneLimit::SenderBuffer
                };
                let also: Vec<String> = ceilings
                    .iter()
                    .filter(|o| o.end != c.end && o.ceiling_bps <= c.ceiling_bps * 1.01)
                    .map(|o| format!("; as does {} on {}", o.setting, o.end))
                    .collect();
                (
                    limit,
                    format!(
                        "{measured}: {} of {} on {} allows at most {} at this RTT{}",
                        c.setting,
                        human(c.bytes),
                        c.end,
                        mbit(c.ceiling_bps),
                        also.concat()
                    ),
                )
            }
            _ => (
                TuneLimit::Other,
                format!(
                    "{measured}: no buffer explains it (each allows more than the path): look at \
                     loss, the congestion control, or the hosts' CPU"
                ),
            ),
        }
    };
    Advice {
        bdp_bytes: bdp,
        warnings: warnings(m, advised),
        sysctl: sysctl(advised, m.client.as_ref()),
        ceilings,
        limit,
        evidence,
        advised_bytes: advised,
    }
}
