//! SIGHUP: the daemon reads its configuration again (the file with the
//! command line's flags laid over it, as at start) and puts `[limits]`
//! and `[auth]` (tokens, limit classes) in force for the requests from
//! then on; tests running keep the terms they were admitted under. A
//! configuration that does not read or check changes nothing and is
//! logged; sections that only a restart changes (the sockets, the
//! reflector, the HTTP side, campaigns, forwarding, the mesh, alerts,
//! readings, mail, targets, keys, the audit log's file) are named in
//! the log when they differ.

use crate::config::AgentConfig;
use sonde_server::Reloader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What reads the configuration again: the file and the flags.
pub type Reread = Arc<dyn Fn() -> Result<AgentConfig, String> + Send + Sync>;

/// Sections of `new` that differ from `old` and take a restart.
pub fn restart_needed(old: &AgentConfig, new: &AgentConfig) -> Vec<&'static str> {
    let mut differ = Vec::new();
    let mut check = |name, changed: bool| {
        if changed {
            differ.push(name);
        }
    };
    check("bind", old.bind != new.bind);
    check("port", old.port != new.port);
    check("reflector", old.reflector != new.reflector);
    check("auth.audit_log", old.auth.audit_log != new.auth.audit_log);
    check("http", old.http != new.http);
    check("forward", old.forward != new.forward);
    check("mesh", old.mesh != new.mesh);
    check("client", old.client != new.client);
    check("alert", old.alert != new.alert);
    check("readings", old.readings != new.readings);
    check("smtp", old.smtp != new.smtp);
    check("targets", old.targets != new.targets);
    check("keys", old.keys != new.keys);
    differ
}

/// Watches `hup` (set by SIGHUP) until `stop`, reloading on each.
pub fn spawn(
    mut current: AgentConfig,
    reread: Reread,
    reloader: Reloader,
    hup: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("reload".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if hup.swap(false, Ordering::AcqRel) {
                    if let Some(next) = reload(&current, &reread, &reloader) {
                        current = next;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
}

/// One reload: the configuration now in force, or `None` if it stays.
fn reload(current: &AgentConfig, reread: &Reread, reloader: &Reloader) -> Option<AgentConfig> {
    let fail = |e: &dyn std::fmt::Display| {
        tracing::warn!(name: "config_not_reloaded", reason = %e, "configuration not reloaded: {e}");
    };
    let next = match reread() {
        Ok(next) => next,
        Err(e) => {
            fail(&e);
            return None;
        }
    };
    if let Err(e) = reloader.reload(&next.server()) {
        fail(&e);
        return None;
    }
    let restart = restart_needed(current, &next);
    tracing::info!(
        name: "config_reloaded",
        limits_changed = current.limits != next.limits,
        auth_changed = current.auth != next.auth,
        "configuration reloaded: [limits] and [auth] in force for new tests"
    );
    if !restart.is_empty() {
        tracing::warn!(
            name: "config_restart_needed",
            sections = %restart.join(", "),
            "changed, kept as started until a restart: {}",
            restart.join(", ")
        );
    }
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_reload_cannot_change_is_named() {
        let old = AgentConfig::default();
        let mut new = old.clone();
        new.limits.max_duration = Duration::from_secs(7);
        assert!(restart_needed(&old, &new).is_empty());
        new.port = 5301;
        new.reflector.port = 863;
        assert_eq!(restart_needed(&old, &new), ["port", "reflector"]);
    }
}
