//! Link load from routers over SNMP (docs/snmp.md): the agent polls each
//! `[[snmp]]` target's IF-MIB octet counters (64-bit `ifHC*Octets`, or
//! 32-bit on old agents) over SNMPv2c or v3, follows them through wraps
//! and restarts, and keeps what they say twice: as interface samples
//! (`r1:eth1`, the portal's load beside latency) and as readings (Mbit/s
//! each way and the share of the interface's speed, which alert rules on
//! readings watch).
//!
//! - [`snmp_config`]: the `[[snmp]]` section and its checks;
//! - [`counter`]: bytes moved between two polls, wraps and breaks;
//! - [`poller`]: one target's interfaces, found by name and polled.

pub mod counter;
pub mod poller;
pub mod snmp_config;

pub use poller::{Polled, Poller, SnmpError};
pub use snmp_config::{validate_all, SnmpConfigError, SnmpTarget};

use sonde_archive::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Starts one thread per target that polls it every `every` into the
/// archive at `archive` until `stop`. An agent that does not answer, or an
/// archive that cannot be written, is logged and tried again at the next
/// poll.
pub fn spawn(
    archive: &str,
    targets: &[SnmpTarget],
    stop: &Arc<AtomicBool>,
) -> Result<Vec<JoinHandle<()>>, String> {
    validate_all(targets).map_err(|e| e.to_string())?;
    let mut threads = Vec::new();
    for target in targets {
        let (archive, target, stop) = (archive.to_string(), target.clone(), Arc::clone(stop));
        let name = target.name.clone();
        let handle = std::thread::Builder::new()
            .name(format!("sonde-snmp-{name}"))
            .spawn(move || follow(&archive, target, &stop))
            .map_err(|e| format!("snmp '{name}': {e}"))?;
        threads.push(handle);
    }
    Ok(threads)
}

fn follow(archive: &str, target: SnmpTarget, stop: &AtomicBool) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(name: "snmp_failed", target = %target.name, error = %e, "cannot start the SNMP poller");
            return;
        }
    };
    let every = target.every;
    let name = target.name.clone();
    let mut poller: Option<Poller> = None;
    let mut failed = false;
    let mut store: Option<Store> = None;
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        sonde_model::clock::sleep_until_or(next, stop);
        if stop.load(Ordering::Relaxed) {
            break;
        }
        next += every;
        // A poll that took longer than the interval is not caught up.
        if next < Instant::now() {
            next = Instant::now() + every;
        }
        if poller.is_none() {
            match runtime.block_on(Poller::connect(target.clone())) {
                Ok(p) => poller = Some(p),
                Err(e) => {
                    tracing::warn!(name: "snmp_poll_failed", target = %name, reason = %e, "SNMP poll failed");
                    continue;
                }
            }
        }
        let Some(p) = poller.as_mut() else { continue };
        if failed {
            if let Err(e) = runtime.block_on(p.reconnect()) {
                tracing::warn!(name: "snmp_poll_failed", target = %name, reason = %e, "SNMP poll failed");
                continue;
            }
        }
        let polled = match runtime.block_on(p.poll()) {
            Ok(polled) => polled,
            Err(e) => {
                tracing::warn!(name: "snmp_poll_failed", target = %name, reason = %e, "SNMP poll failed");
                failed = true;
                continue;
            }
        };
        failed = false;
        for w in &polled.warnings {
            tracing::warn!(name: "snmp_counters_too_narrow", target = %name, "{w}");
        }
        for (interface, why) in &polled.breaks {
            tracing::info!(name: "snmp_counter_break", target = %name, interface = %interface, reason = %why, "no rate for this interval");
        }
        keep(archive, &mut store, &name, &polled);
    }
}

/// Writes a poll's samples and readings; an archive that fails is opened
/// again at the next poll.
fn keep(archive: &str, store: &mut Option<Store>, name: &str, polled: &Polled) {
    if store.is_none() {
        *store = Store::open(archive)
            .map_err(|e| tracing::warn!(name: "snmp_archive_failed", target = %name, error = %e, "cannot open the archive"))
            .ok();
    }
    let Some(s) = store.as_mut() else { return };
    let written = s
        .put_interface_samples(&polled.samples)
        .and_then(|()| s.put_readings(&polled.readings, sonde_model::clock::now_ns()));
    match written {
        Ok(sonde_archive::ReadingsWrite::UnitConflict { message, .. }) => {
            tracing::warn!(name: "snmp_archive_failed", target = %name, error = %message, "readings refused");
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(name: "snmp_archive_failed", target = %name, error = %e, "cannot write the archive");
            *store = None;
        }
    }
}
