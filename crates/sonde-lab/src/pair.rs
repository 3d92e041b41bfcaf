//! Two hosts joined by one veth link, each direction shaped on its own.

use crate::netns::{LabError, Netns};
use crate::shaper::{shape, Queue, Shaping};
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

impl From<Link> for Shaping {
    fn from(l: Link) -> Self {
        Shaping {
            rate: l.rate,
            queue: Queue::Ms(50),
            diffserv: None,
        }
    }
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
        shape(&pair.a, IFACE, &a_to_b.into())?;
        shape(&pair.b, IFACE, &b_to_a.into())?;
        Ok(pair)
    }
}
