//! Two hosts joined by one veth link, each direction shaped on its own.

use crate::netns::{LabError, Netns};
use sonde_model::Rate;

/// The shaping of one direction of a link.
#[derive(Debug, Clone, Copy, Default)]
pub struct Link {
    /// Token-bucket rate (TBF); `None`: unshaped.
    pub rate: Option<Rate>,
}

/// Hosts `a` and `b` on one link: `a` is `2001:2:0:N::1` and
/// `198.18.N.1`, `b` ends in `::2` and `.2`.
#[derive(Debug)]
pub struct Pair {
    pub a: Netns,
    pub b: Netns,
    pub a6: String,
    pub b6: String,
    pub a4: String,
    pub b4: String,
}

const IFACE: &str = "eth0";

/// Turns offloads off on `dev` and shapes its egress as `link` says.
pub(crate) fn shape(ns: &Netns, dev: &str, link: Link, queue_ms: u32) -> Result<(), LabError> {
    // Offloads off: each frame is a real packet, as on a wire, so the
    // shaper counts what a real link would carry.
    ns.run(
        "ethtool",
        &[
            "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
        ],
    )?;
    if let Some(rate) = link.rate {
        // Burst of ~2 ms at the rate (at least a few frames), queue up
        // to 50 ms: a shaped access link, not a policer.
        let burst = (rate.bytes_per_sec() / 500).max(8 * 1514);
        ns.run(
            "tc",
            &[
                "qdisc",
                "replace",
                "dev",
                dev,
                "root",
                "tbf",
                "rate",
                &format!("{}bit", rate.bps()),
                "burst",
                &burst.to_string(),
                "latency",
                &format!("{queue_ms}ms"),
            ],
        )?;
    }
    Ok(())
}

impl Pair {
    /// Builds the pair with `a_to_b` shaping on `a`'s egress and
    /// `b_to_a` on `b`'s. `net` picks the subnet (0–255).
    pub fn new(net: u8, a_to_b: Link, b_to_a: Link) -> Result<Self, LabError> {
        let a = Netns::create("a")?;
        let b = Netns::create("b")?;
        // Create the veth inside `a`, then move its peer into `b`.
        a.ip(&[
            "link",
            "add",
            IFACE,
            "type",
            "veth",
            "peer",
            "name",
            "peer0",
            "netns",
            b.name(),
        ])?;
        b.ip(&["link", "set", "peer0", "name", IFACE])?;
        let pair = Self {
            a6: format!("2001:2:0:{net:x}::1"),
            b6: format!("2001:2:0:{net:x}::2"),
            a4: format!("198.18.{net}.1"),
            b4: format!("198.18.{net}.2"),
            a,
            b,
        };
        for (ns, v6, v4) in [(&pair.a, &pair.a6, &pair.a4), (&pair.b, &pair.b6, &pair.b4)] {
            ns.ip(&["addr", "add", &format!("{v6}/64"), "dev", IFACE, "nodad"])?;
            ns.ip(&["addr", "add", &format!("{v4}/24"), "dev", IFACE])?;
            ns.ip(&["link", "set", IFACE, "up"])?;
        }
        shape(&pair.a, IFACE, a_to_b, 50)?;
        shape(&pair.b, IFACE, b_to_a, 50)?;
        Ok(pair)
    }
}
