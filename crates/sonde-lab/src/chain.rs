//! Three hosts in a line, sender `a` — router `r` — receiver `b`, so a
//! shaper, a policer or a rule can sit on the path between them (the
//! sender feels no back-pressure, as on a real network).

use crate::netns::{LabError, Netns};
use crate::pair::Link;
use crate::shaper::{shape, Shaping};

/// `a` (`2001:2:0:N::1`, `198.18.N.1`) — `r` — `b` (`2001:2:0:N+1::2`,
/// `198.18.N+1.2`). `r`'s interface towards `a` is `to_a`, towards `b`
/// is `to_b`; shaping a direction shapes the router's egress.
#[derive(Debug)]
pub struct Chain {
    pub a: Netns,
    pub r: Netns,
    pub b: Netns,
    pub a6: String,
    pub b6: String,
    pub a4: String,
    pub b4: String,
}

impl Chain {
    /// Builds the chain on subnets `net` and `net + 1`; `a_to_b` shapes
    /// the router's egress towards `b`, `b_to_a` towards `a`.
    pub fn new(net: u8, a_to_b: Link, b_to_a: Link) -> Result<Self, LabError> {
        let a = Netns::create("a")?;
        let r = Netns::create("r")?;
        let b = Netns::create("b")?;
        let n2 = net.wrapping_add(1);
        // Each link is a veth created in the router, one end moved out.
        for (peer, router_if) in [(&a, "to_a"), (&b, "to_b")] {
            r.ip(&[
                "link",
                "add",
                router_if,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                peer.name(),
            ])?;
        }
        let chain = Self {
            a6: format!("2001:2:0:{net:x}::1"),
            b6: format!("2001:2:0:{n2:x}::2"),
            a4: format!("198.18.{net}.1"),
            b4: format!("198.18.{n2}.2"),
            a,
            r,
            b,
        };
        let plan = [
            (
                &chain.a,
                "eth0",
                format!("{}/64", chain.a6),
                format!("{}/24", chain.a4),
            ),
            (
                &chain.r,
                "to_a",
                format!("2001:2:0:{net:x}::ff/64"),
                format!("198.18.{net}.254/24"),
            ),
            (
                &chain.r,
                "to_b",
                format!("2001:2:0:{n2:x}::ff/64"),
                format!("198.18.{n2}.254/24"),
            ),
            (
                &chain.b,
                "eth0",
                format!("{}/64", chain.b6),
                format!("{}/24", chain.b4),
            ),
        ];
        for (ns, dev, v6, v4) in &plan {
            ns.ip(&["addr", "add", v6, "dev", dev, "nodad"])?;
            ns.ip(&["addr", "add", v4, "dev", dev])?;
            ns.ip(&["link", "set", dev, "up"])?;
        }
        chain
            .r
            .run("sysctl", &["-qw", "net.ipv6.conf.all.forwarding=1"])?;
        chain.r.run("sysctl", &["-qw", "net.ipv4.ip_forward=1"])?;
        for (ns, gw6, gw4) in [
            (
                &chain.a,
                format!("2001:2:0:{net:x}::ff"),
                format!("198.18.{net}.254"),
            ),
            (
                &chain.b,
                format!("2001:2:0:{n2:x}::ff"),
                format!("198.18.{n2}.254"),
            ),
        ] {
            ns.ip(&["-6", "route", "add", "default", "via", &gw6])?;
            ns.ip(&["route", "add", "default", "via", &gw4])?;
        }
        shape(&chain.a, "eth0", &Shaping::from(Link::default()))?;
        shape(&chain.b, "eth0", &Shaping::from(Link::default()))?;
        shape(&chain.r, "to_b", &Shaping::from(a_to_b))?;
        shape(&chain.r, "to_a", &Shaping::from(b_to_a))?;
        Ok(chain)
    }

    /// Runs `nft` in the router with one command string.
    pub fn router_nft(&self, command: &str) -> Result<(), LabError> {
        self.r.run("nft", &[command]).map(|_| ())
    }
}
