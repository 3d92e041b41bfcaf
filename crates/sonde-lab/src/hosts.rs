//! Node names resolve inside a lab: each node's `/etc/hosts` (`ip netns
//! exec` mounts `/etc/netns/NS/hosts` over it) names every node of the
//! lab at each of its addresses, IPv6 and IPv4, so that a test run in a
//! node may name its peer (`sonde udp b --families 6,4`, a campaign
//! plan's endpoint) as on a real network. `NODE-lN` names the node's
//! end of link N alone, both families (`b-l3`: b as link 3 reaches it).

use crate::names::link_addrs;
use crate::netns::{etc_dir, LabError};
use crate::topology::Topology;

/// The hosts file of every node of `topo`: localhost, then each node's
/// addresses in link order, IPv6 first.
pub fn hosts_text(topo: &Topology) -> String {
    let mut out = String::from("127.0.0.1 localhost\n::1 localhost\n");
    for node in &topo.nodes {
        let mut v4 = Vec::new();
        for (i, l) in topo.links.iter().enumerate() {
            for (end, is_a) in [(&l.a, true), (&l.b, false)] {
                if *end == node.name {
                    let (a6, a4) = link_addrs(i + 1, is_a);
                    out += &format!("{a6} {0} {0}-l{1}\n", node.name, i + 1);
                    v4.push((a4, i + 1));
                }
            }
        }
        for (a4, link) in v4 {
            out += &format!("{a4} {0} {0}-l{link}\n", node.name);
        }
    }
    out
}

/// Writes the hosts file into each of `namespaces`.
pub fn write(namespaces: &[String], text: &str) -> Result<(), LabError> {
    for ns in namespaces {
        let d = etc_dir(ns);
        std::fs::create_dir_all(&d)
            .and_then(|()| std::fs::write(d.join("hosts"), text))
            .map_err(|source| LabError::Write { path: d, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_is_named_at_each_of_its_addresses() {
        let topo = Topology::from_toml(
            "[[node]]\nname = \"a\"\n[[node]]\nname = \"r\"\nkind = \"router\"\n[[node]]\nname = \"b\"\n\
             [[link]]\na = \"a\"\nb = \"r\"\n[[link]]\na = \"r\"\nb = \"b\"\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(
            hosts_text(&topo),
            "127.0.0.1 localhost\n::1 localhost\n\
             2001:2:0:1::1 a a-l1\n198.18.1.1 a a-l1\n\
             2001:2:0:1::2 r r-l1\n2001:2:0:2::1 r r-l2\n198.18.1.2 r r-l1\n198.18.2.1 r r-l2\n\
             2001:2:0:2::2 b b-l2\n198.18.2.2 b b-l2\n"
        );
    }
}
