//! A lab's names and addresses: namespace `sonde-lab-LAB-NODE` per node,
//! link N's addresses (`2001:2:0:N::/64`, `198.18.N.0/24`, end `a` `::1`
//! and `.1`, end `b` `::2` and `.2`) and MAC addresses, and the labs this
//! host has.

use crate::netns::Netns;
use std::collections::BTreeMap;

pub(crate) const PREFIX: &str = "sonde-lab-";

/// The namespace of `node` of `lab`.
pub(crate) fn ns_name(lab: &str, node: &str) -> String {
    format!("{PREFIX}{lab}-{node}")
}

/// Addresses of end `a` (or `b`) of link `n` (1-based).
pub fn link_addrs(n: usize, end_a: bool) -> (String, String) {
    let host = if end_a { 1 } else { 2 };
    (
        format!("2001:2:0:{n:x}::{host}"),
        format!("198.18.{n}.{host}"),
    )
}

/// The MAC address of end `a` (or `b`) of link `n`: locally administered.
pub(crate) fn link_mac(n: usize, end_a: bool) -> String {
    format!(
        "02:53:00:00:{:02x}:{:02x}",
        n & 0xff,
        if end_a { 1 } else { 2 }
    )
}

/// Every lab namespace on this host, nodes and emulators (`_eN`) alike.
pub(crate) fn namespaces() -> BTreeMap<String, Vec<String>> {
    let mut labs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ns in Netns::list_all() {
        if let Some((lab, node)) = ns.strip_prefix(PREFIX).and_then(|r| r.split_once('-')) {
            labs.entry(lab.to_string())
                .or_default()
                .push(node.to_string());
        }
    }
    labs
}

/// Every lab on this host and its nodes.
pub fn list() -> BTreeMap<String, Vec<String>> {
    let mut labs = namespaces();
    for nodes in labs.values_mut() {
        nodes.retain(|n| !n.starts_with('_'));
    }
    labs
}
