//! `sonde serve --user NAME`: started as root, the daemon becomes NAME
//! before it binds or opens anything, keeping only the capabilities it
//! needs (docs/install.md):
//!
//! - `CAP_NET_RAW`: traces' raw sockets, and ICMP pings where the kernel
//!   gives the user no ping socket (`net.ipv4.ping_group_range`);
//! - `CAP_NET_BIND_SERVICE`: only when a port it listens on is below 1024
//!   (the STAMP reflector's 862 is).
//!
//! Every other capability leaves the bounding set, the supplementary
//! groups go, and no-new-privs is set: nothing the process runs later can
//! gain a privilege back.

use caps::{CapSet, Capability, CapsHashSet};
use nix::unistd::{Gid, Uid, User};

/// Why the daemon could not become its user.
#[derive(Debug, thiserror::Error)]
pub enum PrivilegeError {
    /// The name is no user of this system.
    #[error("--user {0}: no such user")]
    NoUser(String),
    /// Only root can become another user.
    #[error("--user {user}: only root can become another user (sonde runs as uid {uid})")]
    NotRoot { user: String, uid: u32 },
    /// A step of the switch failed (the process is stopped by the caller).
    #[error("--user {user}: cannot {step}: {why}")]
    Switch {
        user: String,
        step: &'static str,
        why: String,
    },
}

/// The capabilities a daemon keeps: `CAP_NET_RAW`, and
/// `CAP_NET_BIND_SERVICE` if it binds a port below 1024.
pub fn needed(ports: impl IntoIterator<Item = u16>) -> CapsHashSet {
    let mut keep = CapsHashSet::from([Capability::CAP_NET_RAW]);
    if ports.into_iter().any(|p| p != 0 && p < 1024) {
        keep.insert(Capability::CAP_NET_BIND_SERVICE);
    }
    keep
}

/// Becomes user `name` (its uid, its primary group only) keeping `keep`
/// alone, effective and permitted; call it before any thread starts
/// (capabilities are each thread's own).
pub fn become_user(name: &str, keep: &CapsHashSet) -> Result<(), PrivilegeError> {
    let switch = |step: &'static str| {
        move |why: &dyn std::fmt::Display| PrivilegeError::Switch {
            user: name.to_string(),
            step,
            why: why.to_string(),
        }
    };
    let user = User::from_name(name)
        .map_err(|e| switch("look the user up")(&e))?
        .ok_or_else(|| PrivilegeError::NoUser(name.to_string()))?;
    let uid = Uid::effective();
    if !uid.is_root() {
        return Err(PrivilegeError::NotRoot {
            user: name.to_string(),
            uid: uid.as_raw(),
        });
    }
    // The bounding set first: dropping from it needs CAP_SETPCAP, which
    // root holds until the switch.
    let supported = caps::runtime::thread_all_supported();
    for cap in supported.iter().filter(|c| !keep.contains(c)) {
        caps::drop(None, CapSet::Bounding, *cap)
            .map_err(|e| switch("shrink the bounding set")(&e))?;
    }
    // Kept across the change of uid, permitted only (effective is
    // cleared by it, and set again below).
    nix::sys::prctl::set_keepcaps(true).map_err(|e| switch("keep capabilities")(&e))?;
    let gid: Gid = user.gid;
    nix::unistd::setgroups(&[gid]).map_err(|e| switch("drop the supplementary groups")(&e))?;
    nix::unistd::setresgid(gid, gid, gid).map_err(|e| switch("set the group")(&e))?;
    nix::unistd::setresuid(user.uid, user.uid, user.uid).map_err(|e| switch("set the user")(&e))?;
    nix::sys::prctl::set_keepcaps(false).map_err(|e| switch("stop keeping capabilities")(&e))?;
    caps::clear(None, CapSet::Inheritable).map_err(|e| switch("clear inheritable")(&e))?;
    caps::set(None, CapSet::Permitted, keep).map_err(|e| switch("set permitted")(&e))?;
    caps::set(None, CapSet::Effective, keep).map_err(|e| switch("set effective")(&e))?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| switch("set no-new-privs")(&e))?;
    // Root is gone for good: a switch back must fail.
    if nix::unistd::setuid(Uid::from_raw(0)).is_ok() {
        return Err(switch("give up root")(&"setuid(0) still works"));
    }
    tracing::info!(
        name: "privileges_dropped",
        user = name,
        uid = user.uid.as_raw(),
        capabilities = ?keep.iter().map(ToString::to_string).collect::<std::collections::BTreeSet<_>>(),
        "running as {name}"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_service_is_kept_only_for_a_port_below_1024() {
        assert_eq!(
            needed([5201, 0]),
            CapsHashSet::from([Capability::CAP_NET_RAW])
        );
        assert!(needed([5201, 862]).contains(&Capability::CAP_NET_BIND_SERVICE));
        assert!(needed([1023]).contains(&Capability::CAP_NET_BIND_SERVICE));
        assert!(!needed([1024]).contains(&Capability::CAP_NET_BIND_SERVICE));
    }

    #[test]
    fn an_unknown_user_is_named() {
        let e = become_user("no-such-sonde-user", &needed([])).unwrap_err();
        assert_eq!(e.to_string(), "--user no-such-sonde-user: no such user");
    }
}
