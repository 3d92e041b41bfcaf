//! A silent node (`silent = true`): it sends no ICMP of its own about the
//! path, as a router that filters its ICMP does. nftables drops, on the
//! node's output hook (its own packets only; what it forwards passes),
//! Time Exceeded, Destination Unreachable and echo replies, of both
//! families. Packet Too Big and neighbour discovery still go out: without
//! them the node would break the path, not just hide in it.

use crate::netns::{LabError, Netns};

const RULES: &str = "add table inet sonde_silent; \
    add chain inet sonde_silent out { type filter hook output priority 0; }; \
    add rule inet sonde_silent out icmp type { time-exceeded, destination-unreachable, echo-reply } drop; \
    add rule inet sonde_silent out icmpv6 type { time-exceeded, destination-unreachable, echo-reply } drop";

/// Makes `node` silent.
pub(crate) fn silence(node: &Netns) -> Result<(), LabError> {
    node.run("nft", &[RULES]).map(drop)
}
