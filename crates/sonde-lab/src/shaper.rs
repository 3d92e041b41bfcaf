//! The sending end of a link direction: its rate, its queue and, with
//! DiffServ, its class queues (TBF, or HTB with u32 filters on the DSCP).

use crate::netns::{LabError, Netns};
use crate::profile::{DiffservSpec, QueueLimit};
use sonde_model::{Dscp, Rate};

/// How the bottleneck's queue is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// Milliseconds at the rate.
    Ms(u32),
    Limit(QueueLimit),
}

/// What the sending end of a direction does.
#[derive(Debug, Clone, PartialEq)]
pub struct Shaping {
    pub rate: Option<Rate>,
    pub queue: Queue,
    pub diffserv: Option<DiffservSpec>,
}

/// Runs `tc ARGS` in `ns`.
fn tc(ns: &Netns, args: &[&str]) -> Result<(), LabError> {
    ns.run("tc", args).map(drop)
}

/// Turns offloads off on `dev` and shapes its egress as `s` says.
pub(crate) fn shape(ns: &Netns, dev: &str, s: &Shaping) -> Result<(), LabError> {
    // Offloads off: each frame is a real packet, as on a wire, so the
    // shaper counts what a real link would carry.
    ns.run(
        "ethtool",
        &[
            "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
        ],
    )?;
    let Some(rate) = s.rate else { return Ok(()) };
    match &s.diffserv {
        None => tbf(ns, dev, rate, s.queue),
        Some(d) => classes(ns, dev, rate, s.queue, d),
    }
}

/// A leaf queue for `queue`: a packet or byte FIFO, sized from
/// milliseconds at `rate` for `Queue::Ms` (1500-byte packets, at least 10).
fn fifo(rate: Rate, queue: Queue) -> [String; 3] {
    let (kind, limit) = match queue {
        Queue::Limit(QueueLimit::Packets(n)) => ("pfifo", u64::from(n)),
        Queue::Limit(QueueLimit::Bytes(b)) => ("bfifo", b),
        Queue::Ms(ms) => (
            "pfifo",
            (rate.bytes_per_sec() * u64::from(ms) / 1000 / 1500).max(10),
        ),
    };
    [kind.to_string(), "limit".into(), limit.to_string()]
}

/// TBF: burst ~2 ms at the rate (at least 8 frames), the queue as given.
fn tbf(ns: &Netns, dev: &str, rate: Rate, queue: Queue) -> Result<(), LabError> {
    let burst = (rate.bytes_per_sec() / 500).max(8 * 1514).to_string();
    let bits = format!("{}bit", rate.bps());
    let mut args = vec![
        "qdisc", "replace", "dev", dev, "root", "handle", "1:", "tbf", "rate", &bits, "burst",
        &burst,
    ];
    let limit;
    match queue {
        Queue::Ms(ms) => {
            limit = format!("{ms}ms");
            args.extend(["latency", &limit]);
        }
        Queue::Limit(QueueLimit::Bytes(b)) => {
            limit = b.to_string();
            args.extend(["limit", &limit]);
        }
        Queue::Limit(QueueLimit::Packets(_)) => args.extend(["limit", "1000000"]),
    }
    tc(ns, &args)?;
    if let Queue::Limit(QueueLimit::Packets(_)) = queue {
        let f = fifo(rate, queue);
        let mut child = vec!["qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:"];
        child.extend(f.iter().map(String::as_str));
        tc(ns, &child)?;
    }
    Ok(())
}

/// DiffServ on `dev`: HTB classes 1:10 (priority), 1:20 (best effort, the
/// default) and 1:30 (less than best effort). Green classes are served in
/// priority order and borrowing goes by priority too, so the priority
/// class is served first whenever it has a packet (below the whole rate),
/// LBE keeps its minimum share, and best effort takes the rest.
fn classes(
    ns: &Netns,
    dev: &str,
    rate: Rate,
    queue: Queue,
    d: &DiffservSpec,
) -> Result<(), LabError> {
    let r = rate.bps();
    let lbe = ((r as f64 * d.lbe_share()) as u64).max(8_000);
    let be = (r / 1000).max(8_000);
    let prio = r.saturating_sub(lbe + be).max(8_000);
    let bit = |v: u64| format!("{v}bit");
    tc(
        ns,
        &[
            "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "20",
        ],
    )?;
    tc(
        ns,
        &[
            "class",
            "add",
            "dev",
            dev,
            "parent",
            "1:",
            "classid",
            "1:1",
            "htb",
            "rate",
            &bit(r),
            "ceil",
            &bit(r),
            "quantum",
            "9014",
        ],
    )?;
    for (id, class_rate, p) in [("1:10", prio, "0"), ("1:20", be, "1"), ("1:30", lbe, "2")] {
        tc(
            ns,
            &[
                "class",
                "add",
                "dev",
                dev,
                "parent",
                "1:1",
                "classid",
                id,
                "htb",
                "rate",
                &bit(class_rate),
                "ceil",
                &bit(r),
                "prio",
                p,
                "quantum",
                "9014",
            ],
        )?;
        let f = fifo(rate, queue);
        let mut leaf = vec!["qdisc", "add", "dev", dev, "parent", id];
        leaf.extend(f.iter().map(String::as_str));
        tc(ns, &leaf)?;
    }
    for (dscps, flow) in [(d.priority_dscps(), "1:10"), (d.lbe_dscps(), "1:30")] {
        for dscp in dscps {
            dscp_filter(ns, dev, dscp, flow)?;
        }
    }
    Ok(())
}

/// Sends IPv4 and IPv6 packets with `dscp` to class `flow`.
fn dscp_filter(ns: &Netns, dev: &str, dscp: Dscp, flow: &str) -> Result<(), LabError> {
    let tos = format!("{:#04x}", dscp.tos_byte());
    for (proto, prio, field) in [
        ("ip", "1", ["ip", "dsfield"]),
        ("ipv6", "2", ["ip6", "priority"]),
    ] {
        tc(
            ns,
            &[
                "filter", "add", "dev", dev, "parent", "1:", "protocol", proto, "prio", prio,
                "u32", "match", field[0], field[1], &tos, "0xfc", "flowid", flow,
            ],
        )?;
    }
    Ok(())
}
