//! Building, listing and removing labs from a [`Topology`]: one network
//! namespace per node (`sonde-lab-LAB-NODE`), one veth pair per link
//! (interface `lN` on both ends for link N), addresses from 2001:2::/48 and
//! 198.18.0.0/15 (link N: `2001:2:0:N::/64`, `198.18.N.0/24`, end `a` is
//! `::1`/`.1`, end `b` `::2`/`.2`), static routes so every node reaches
//! every other through routers, and each link direction shaped on its
//! sending interface. A lab outlives the process that built it.

use crate::ingress;
pub use crate::names::{link_addrs, list};
use crate::names::{link_mac, namespaces, ns_name};
use crate::netns::{run_cmd, LabError, Netns};
use crate::shaper::{shape, Queue, Shaping};
use crate::topology::{LinkSpec, NodeKind, Topology, TopologyError};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

/// Removes every namespace (and so every link, emulator and process) of
/// `lab`; returns how many nodes it had.
pub fn down(lab: &str) -> usize {
    let all = namespaces().remove(lab).unwrap_or_default();
    for n in &all {
        Netns::delete(&ns_name(lab, n));
    }
    all.iter().filter(|n| !n.starts_with('_')).count()
}

/// The namespace of `node` in `lab`, if it exists.
pub fn node(lab: &str, node: &str) -> Option<Netns> {
    list()
        .get(lab)
        .filter(|nodes| nodes.iter().any(|n| n == node))
        .map(|_| Netns::adopt(&ns_name(lab, node)))
}

/// Builds `topo` as lab `lab`, first removing what a crashed or earlier
/// run of the same lab left. On failure, nothing of the new lab is left.
/// A topology that does not validate ([`LabError::Topology`]), or that
/// needs the emulator when `emulator` is `None` ([`LabError::NoEmulator`]),
/// is refused before anything is touched.
pub fn up(topo: &Topology, lab: &str, emulator: Option<&Path>) -> Result<(), LabError> {
    topo.validate()?;
    if emulator.is_none() {
        if let Some(i) = topo.links.iter().position(LinkSpec::emulated) {
            return Err(LabError::NoEmulator { link: i + 1 });
        }
    }
    down(lab);
    let built = build(topo, lab, emulator);
    if built.is_err() {
        down(lab);
    }
    built
}

fn build(topo: &Topology, lab: &str, emulator: Option<&Path>) -> Result<(), LabError> {
    let mut nodes = BTreeMap::new();
    for n in &topo.nodes {
        let node = Netns::create_kept(&ns_name(lab, &n.name))?;
        // No duplicate address detection: a lab's addresses are unique by
        // construction, and links are usable the moment they are up.
        node.run(
            "sysctl",
            &[
                "-qw",
                "net.ipv6.conf.all.accept_dad=0",
                "net.ipv6.conf.default.accept_dad=0",
            ],
        )?;
        nodes.insert(n.name.clone(), node);
    }
    // Every link end is a node: the topology is valid.
    let ns = |name: &str, link: usize| {
        nodes.get(name).ok_or_else(|| TopologyError::UnknownNode {
            link,
            node: name.to_string(),
        })
    };
    for (i, l) in topo.links.iter().enumerate() {
        let n = i + 1;
        let dev = format!("l{n}");
        let (a, b) = (ns(&l.a, n)?, ns(&l.b, n)?);
        // Fixed MAC addresses and permanent neighbour entries: the link
        // carries traffic the moment it is up, with no first packets held
        // back by neighbour discovery.
        let (mac_a, mac_b) = (link_mac(n, true), link_mac(n, false));
        if l.emulated() {
            let exe = emulator.ok_or(LabError::NoEmulator { link: n })?;
            let emu = Netns::create_kept(&ns_name(lab, &format!("_e{n}")))?;
            veth(a, &dev, &mac_a, "la", None, &emu)?;
            veth(b, &dev, &mac_b, "lb", None, &emu)?;
            start_emulator(&emu, exe, l, n)?;
        } else {
            veth(a, &dev, &mac_a, &dev, Some(&mac_b), b)?;
        }
        for (node, end_a) in [(a, true), (b, false)] {
            let (v6, v4) = link_addrs(n, end_a);
            node.ip(&["addr", "add", &format!("{v6}/64"), "dev", &dev, "nodad"])?;
            node.ip(&["addr", "add", &format!("{v4}/24"), "dev", &dev])?;
            let (peer6, peer4) = link_addrs(n, !end_a);
            let peer_mac = link_mac(n, !end_a);
            for peer in [&peer6, &peer4] {
                let neigh = [
                    "neigh",
                    "replace",
                    peer,
                    "lladdr",
                    &peer_mac,
                    "dev",
                    &dev,
                    "nud",
                    "permanent",
                ];
                node.ip(&neigh)?;
            }
            if let Some(mtu) = l.mtu {
                node.ip(&["link", "set", &dev, "mtu", &mtu.to_string()])?;
            }
            node.ip(&["link", "set", &dev, "up"])?;
            // This end sends the direction from it; the peer receives it.
            let p = l.direction(end_a);
            let queue = match (p.queue, p.queue_ms) {
                (Some(limit), _) => Queue::Limit(limit),
                (None, ms) => Queue::Ms(ms.unwrap_or(50)),
            };
            let shaping = Shaping {
                rate: p.rate,
                queue,
                diffserv: p.diffserv.clone(),
            };
            shape(node, &dev, &shaping)?;
            let peer = if end_a { b } else { a };
            if let Some(m) = p.marking {
                ingress::marking(peer, &dev, m, p.ef_from.as_deref().unwrap_or_default())?;
            }
            if let Some(label) = p.flow_label {
                ingress::flow_label(peer, &dev, label)?;
            }
            if let Some(loss) = p.random_loss() {
                ingress::random_loss(peer, &dev, loss)?;
            }
        }
    }
    for n in topo.nodes.iter().filter(|n| n.silent) {
        if let Some(node) = nodes.get(&n.name) {
            crate::silent::silence(node)?;
        }
    }
    for (name, node) in &nodes {
        if topo.kind_of(name) == NodeKind::Router {
            node.run("sysctl", &["-qw", "net.ipv6.conf.all.forwarding=1"])?;
            node.run("sysctl", &["-qw", "net.ipv4.ip_forward=1"])?;
        }
        for (subnet, via) in routes(topo, name) {
            let (v6, v4) = link_addrs(via.0, via.1);
            let (net6, net4) = (
                format!("2001:2:0:{subnet:x}::/64"),
                format!("198.18.{subnet}.0/24"),
            );
            node.ip(&["-6", "route", "add", &net6, "via", &v6])?;
            node.ip(&["route", "add", &net4, "via", &v4])?;
        }
    }
    // Node names resolve in every node.
    let names: Vec<String> = topo.nodes.iter().map(|n| ns_name(lab, &n.name)).collect();
    crate::hosts::write(&names, &crate::hosts::hosts_text(topo))?;
    // The emulators started above: the lab is up when each forwards.
    for (i, l) in topo.links.iter().enumerate() {
        if l.emulated() && !crate::set::wait_ready(&ns_name(lab, &format!("_e{}", i + 1))) {
            return Err(LabError::EmulatorNotReady { link: i + 1 });
        }
    }
    Ok(())
}

/// A veth pair: `dev` (with `mac`) in `node`, its peer `peer_dev` in
/// `peer_ns` (with `peer_mac` if given).
fn veth(
    node: &Netns,
    dev: &str,
    mac: &str,
    peer_dev: &str,
    peer_mac: Option<&str>,
    peer_ns: &Netns,
) -> Result<(), LabError> {
    let mut args = vec![
        "link", "add", dev, "address", mac, "type", "veth", "peer", "name", peer_dev,
    ];
    if let Some(m) = peer_mac {
        args.extend(["address", m]);
    }
    args.extend(["netns", peer_ns.name()]);
    node.ip(&args).map(|_| ())
}

/// Brings up the emulator namespace of link `n` and starts the emulator
/// process in it (it lives until `sonde lab down` kills it).
fn start_emulator(emu: &Netns, exe: &Path, l: &LinkSpec, n: usize) -> Result<(), LabError> {
    for dev in ["la", "lb"] {
        if let Some(mtu) = l.mtu {
            emu.ip(&["link", "set", dev, "mtu", &mtu.to_string()])?;
        }
        emu.ip(&["link", "set", dev, "promisc", "on"])?;
        emu.ip(&["link", "set", dev, "up"])?;
        emu.run(
            "ethtool",
            &[
                "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
            ],
        )?;
    }
    let json =
        |from_a: bool| serde_json::to_string(&l.direction(from_a).impairment()).unwrap_or_default();
    let spawned = emu
        .command(&exe.display().to_string())
        .args(["lab", "emulate", "--left", "la", "--right", "lb"])
        .args(["--l2r", &json(true), "--r2l", &json(false)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let child = spawned.map_err(|source| LabError::StartEmulator {
        link: n,
        program: exe.to_path_buf(),
        source,
    })?;
    if let Some(share) = l.cpu {
        crate::cpu_share::confine(emu.name(), child.id(), share)
            .map_err(|source| LabError::CpuShare { link: n, source })?;
    }
    Ok(())
}

/// Static routes of `from`: for each link it is not on, the link number
/// and the next hop as (link number, is end a) of the neighbour's address.
fn routes(topo: &Topology, from: &str) -> Vec<(usize, (usize, bool))> {
    // Breadth-first over links, going on only through routers: the first
    // hop to reach each node.
    let mut first_hop: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = vec![from];
    while let Some(cur) = queue.pop_front() {
        if cur != from && topo.kind_of(cur) != NodeKind::Router {
            continue;
        }
        for (i, l) in topo.links.iter().enumerate() {
            let (next, next_is_a) = if l.a == cur {
                (l.b.as_str(), false)
            } else if l.b == cur {
                (l.a.as_str(), true)
            } else {
                continue;
            };
            if seen.contains(&next) {
                continue;
            }
            seen.push(next);
            let hop = if cur == from {
                (i + 1, next_is_a)
            } else {
                first_hop[cur]
            };
            first_hop.insert(next, hop);
            queue.push_back(next);
        }
    }
    topo.links
        .iter()
        .enumerate()
        .filter(|(_, l)| l.a != from && l.b != from)
        .filter_map(|(i, l)| {
            let hop = first_hop
                .get(l.a.as_str())
                .or_else(|| first_hop.get(l.b.as_str()))?;
            Some((i + 1, *hop))
        })
        .collect()
}

/// What the kernel has for each node of `lab`: addresses, routes, queues
/// and nftables rules.
pub fn show(lab: &str) -> Result<String, LabError> {
    let nodes = list().remove(lab).ok_or_else(|| LabError::NoSuchLab {
        lab: lab.to_string(),
    })?;
    let mut out = String::new();
    for n in nodes {
        let ns = Netns::adopt(&ns_name(lab, &n));
        out.push_str(&format!("== {n} ({})\n", ns.name()));
        for (what, args) in [
            ("addresses", vec!["-br", "addr"]),
            ("routes", vec!["route"]),
            ("IPv6 routes", vec!["-6", "route"]),
        ] {
            let o = ns.ip(&args)?;
            out.push_str(&format!(
                "-- {what}\n{}",
                String::from_utf8_lossy(&o.stdout)
            ));
        }
        let q = run_cmd("tc", &["-n", ns.name(), "qdisc", "show"])?;
        out.push_str(&format!(
            "-- queues\n{}",
            String::from_utf8_lossy(&q.stdout)
        ));
        // Classes and filters hang off a device's root qdisc.
        for (what, object) in [("classes", "class"), ("filters", "filter")] {
            let text = per_device(&ns, object)?;
            if !text.trim().is_empty() {
                out.push_str(&format!("-- {what}\n{text}"));
            }
        }
        if let Ok(r) = ns.run("nft", &["list", "ruleset"]) {
            let text = String::from_utf8_lossy(&r.stdout);
            if !text.trim().is_empty() {
                out.push_str(&format!("-- nftables\n{text}"));
            }
        }
    }
    for (link, settings) in emulators(lab) {
        out.push_str(&format!("== link {link}: sonde's emulator\n{settings}"));
    }
    Ok(out)
}

/// `tc OBJECT show dev D` for every link device of `ns`.
fn per_device(ns: &Netns, object: &str) -> Result<String, LabError> {
    let links = ns.ip(&["-o", "link", "show"])?;
    let mut out = String::new();
    for line in String::from_utf8_lossy(&links.stdout).lines() {
        let Some(dev) = line
            .split(':')
            .nth(1)
            .map(|d| d.trim().split('@').next().unwrap_or(""))
        else {
            continue;
        };
        if dev.is_empty() || dev == "lo" {
            continue;
        }
        let o = run_cmd("tc", &["-n", ns.name(), object, "show", "dev", dev])?;
        out.push_str(&String::from_utf8_lossy(&o.stdout));
    }
    Ok(out)
}

/// The settings of each link emulator of `lab`, read back from the
/// running emulator's command line: link number, then one line per
/// direction.
fn emulators(lab: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for node in namespaces().remove(lab).unwrap_or_default() {
        let Some(link) = node.strip_prefix("_e") else {
            continue;
        };
        let pids = run_cmd("ip", &["netns", "pids", &ns_name(lab, &node)])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut text = String::new();
        for pid in pids.split_whitespace() {
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                continue;
            };
            let args: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            for (flag, label) in [("--l2r", "a → b"), ("--r2l", "b → a")] {
                let imp = args
                    .iter()
                    .position(|a| a == flag)
                    .and_then(|i| args.get(i + 1))
                    .and_then(|j| serde_json::from_str::<crate::emulator::Impairment>(j).ok());
                if let Some(imp) = imp {
                    text.push_str(&format!("{label}: {imp}\n"));
                }
            }
        }
        if text.is_empty() {
            text = "not running\n".into();
        }
        found.push((link.to_string(), text));
    }
    found.sort_by_key(|(l, _)| l.parse::<usize>().unwrap_or(0));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NodeSpec;

    #[test]
    fn a_lab_that_cannot_be_built_is_refused_before_anything_is_touched() {
        let node = |name: &str| NodeSpec {
            name: name.into(),
            kind: NodeKind::Host,
            silent: false,
        };
        let link = |b: &str| LinkSpec {
            a: "a".into(),
            b: b.into(),
            mtu: None,
            cpu: None,
            both: Default::default(),
            a_to_b: None,
            b_to_a: None,
        };
        let mut topo = Topology {
            name: None,
            nodes: vec![node("a"), node("b")],
            links: vec![link("b"), link("zz")],
        };
        // No namespace named like this lab is made or removed: `up`
        // stops at the check (and would need root beyond it).
        let lab = "neverbuilt";
        assert!(matches!(
            up(&topo, lab, None),
            Err(LabError::Topology(TopologyError::UnknownNode { link: 2, node })) if node == "zz"
        ));
        topo.links.pop();
        topo.links[0].both.delay = Some(std::time::Duration::from_millis(5));
        assert!(matches!(
            up(&topo, lab, None),
            Err(LabError::NoEmulator { link: 1 })
        ));
        assert!(!list().contains_key(lab));
    }

    #[test]
    fn routes_go_through_routers_only() {
        let t = Topology::from_toml(
            r#"
            [[node]]
            name = "a"
            [[node]]
            name = "r1"
            kind = "router"
            [[node]]
            name = "r2"
            kind = "router"
            [[node]]
            name = "b"
            [[node]]
            name = "c"
            [[link]]
            a = "a"
            b = "r1"
            [[link]]
            a = "r1"
            b = "r2"
            [[link]]
            a = "r2"
            b = "b"
            [[link]]
            a = "b"
            b = "c"
            "#,
            "t",
        )
        .unwrap();
        // From a: links 2, 3 and 4 via r1 (end b of link 1). Link 4's
        // subnet holds host b's own address, reached through the routers;
        // c behind b stays unreachable, as b does not forward.
        let r = routes(&t, "a");
        assert_eq!(r, vec![(2, (1, false)), (3, (1, false)), (4, (1, false))]);
        // From r2: link 1 via r1 (end a of link 2).
        assert_eq!(routes(&t, "r2"), vec![(1, (2, true)), (4, (3, false))]);
    }
}
