//! The receiving end of a link direction, in nftables: random loss, DSCP
//! marking and the IPv6 flow label of arriving packets (prerouting, so a router forwards and
//! classifies what the marking left).

use crate::netns::{LabError, Netns};
use crate::profile::Marking;
use ipnet::IpNet;

const TABLE: &str = "inet sonde_lab";

fn rule(node: &Netns, chain: &str, hook_priority: i32, rule: &str) -> Result<(), LabError> {
    // `add` of an existing table or chain is a no-op.
    node.run("nft", &[&format!("add table {TABLE}")])?;
    node.run(
        "nft",
        &[&format!(
            "add chain {TABLE} {chain} {{ type filter hook prerouting priority {hook_priority}; }}"
        )],
    )?;
    node.run("nft", &[&format!("add rule {TABLE} {chain} {rule}")])
        .map(drop)
}

/// Random loss of packets arriving on `dev` (`numgen random`). Dropping
/// on arrival, not on departure, keeps the sender's own stack out of it (a
/// local drop would fail its send with EPERM).
pub(crate) fn random_loss(node: &Netns, dev: &str, p: f64) -> Result<(), LabError> {
    let per_million = (p * 1e6).round() as u64;
    rule(
        node,
        "loss",
        0,
        &format!("iifname \"{dev}\" numgen random mod 1000000 < {per_million} drop"),
    )
}

/// The flow label of IPv6 packets arriving on `dev` set to `label`, as a
/// router that rewrites or clears it (seed 004 §6) would.
pub(crate) fn flow_label(node: &Netns, dev: &str, label: u32) -> Result<(), LabError> {
    rule(
        node,
        "marking",
        -150,
        &format!("iifname \"{dev}\" ip6 flowlabel set {label}"),
    )
}

/// DSCP marking of packets arriving on `dev`, before loss (mangle
/// priority): `reset` sets every DSCP to 0, `filter` sets EF to 0 unless
/// it comes from one of `ef_from`.
pub(crate) fn marking(
    node: &Netns,
    dev: &str,
    m: Marking,
    ef_from: &[IpNet],
) -> Result<(), LabError> {
    let mark = |r: &str| rule(node, "marking", -150, &format!("iifname \"{dev}\" {r}"));
    match m {
        Marking::Trust => Ok(()),
        Marking::Reset => {
            mark("ip dscp set cs0")?;
            mark("ip6 dscp set cs0")
        }
        Marking::Filter => {
            for (family, v4) in [("ip", true), ("ip6", false)] {
                let kept: Vec<String> = ef_from
                    .iter()
                    .filter(|n| matches!(n, IpNet::V4(_)) == v4)
                    .map(ToString::to_string)
                    .collect();
                let unless = if kept.is_empty() {
                    String::new()
                } else {
                    format!("{family} saddr != {{ {} }} ", kept.join(", "))
                };
                mark(&format!("{family} dscp ef {unless}{family} dscp set cs0"))?;
            }
            Ok(())
        }
    }
}
