//! The agent's interface counters: read from the kernel
//! (`/sys/class/net/IF/statistics`) every `http.interface_interval`, kept
//! in the archive, and turned into bit rates for the portal's link load.

use sonde_archive::{Counters, InterfaceSample, Store};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The counters of `interface` now, from `root` (`/sys/class/net`).
pub fn read(root: &Path, interface: &str) -> Option<Counters> {
    let dir = root.join(interface).join("statistics");
    let n = |name: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some(Counters {
        rx_bytes: n("rx_bytes")?,
        tx_bytes: n("tx_bytes")?,
        rx_packets: n("rx_packets")?,
        tx_packets: n("tx_packets")?,
        rx_dropped: n("rx_dropped")?,
        tx_dropped: n("tx_dropped")?,
    })
}

/// The interfaces to sample: `wanted`, or every one but loopback.
pub fn chosen(root: &Path, wanted: &[String]) -> Vec<String> {
    if !wanted.is_empty() {
        return wanted.to_vec();
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lo")
        .collect();
    names.sort();
    names
}

/// Samples the interfaces every `every` into the archive at `archive`
/// until `stop`; an archive that cannot be written is logged and tried
/// again at the next sample.
pub fn spawn_sampler(
    archive: String,
    wanted: Vec<String>,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("sonde-interfaces".into())
        .spawn(move || {
            let root = Path::new("/sys/class/net");
            let mut store = None;
            while !stop.load(Ordering::Relaxed) {
                let at_ns = sonde_campaign::now_ns();
                let samples: Vec<InterfaceSample> = chosen(root, &wanted)
                    .into_iter()
                    .filter_map(|interface| {
                        let counters = read(root, &interface)?;
                        Some(InterfaceSample {
                            interface,
                            at_ns,
                            counters,
                        })
                    })
                    .collect();
                if store.is_none() {
                    store = Store::open(&archive)
                        .map_err(|e| tracing::warn!("interface samples: {e}"))
                        .ok();
                }
                if let Some(s) = store.as_mut() {
                    if let Err(e) = s.put_interface_samples(&samples) {
                        tracing::warn!("interface samples: {e}");
                        store = None;
                    }
                }
                sonde_model::clock::sleep_until_or(std::time::Instant::now() + every, &stop);
            }
        })
}

/// A line's points: (Unix seconds, value).
pub type Points = Vec<(f64, f64)>;

/// Receive and transmit rates (Mbit/s) between successive samples, at
/// the later one's time (Unix seconds). A counter that went down (the
/// interface was reset) gives no point.
pub fn rates(samples: &[InterfaceSample]) -> (Points, Points) {
    let mut rx = Vec::new();
    let mut tx = Vec::new();
    for w in samples.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let dt = (b.at_ns - a.at_ns) as f64 / 1e9;
        if dt <= 0.0 {
            continue;
        }
        let t = b.at_ns as f64 / 1e9;
        let rate = |x: u64, y: u64| y.checked_sub(x).map(|d| d as f64 * 8.0 / dt / 1e6);
        if let Some(r) = rate(a.counters.rx_bytes, b.counters.rx_bytes) {
            rx.push((t, r));
        }
        if let Some(r) = rate(a.counters.tx_bytes, b.counters.tx_bytes) {
            tx.push((t, r));
        }
    }
    (rx, tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_s: i64, rx: u64, tx: u64) -> InterfaceSample {
        InterfaceSample {
            interface: "eth0".into(),
            at_ns: at_s * 1_000_000_000,
            counters: Counters {
                rx_bytes: rx,
                tx_bytes: tx,
                ..Counters::default()
            },
        }
    }

    #[test]
    fn rates_are_bits_per_second_between_samples() {
        let s = [
            sample(100, 0, 0),
            sample(110, 12_500_000, 1_250_000),
            sample(120, 100, 2_500_000),
        ];
        let (rx, tx) = rates(&s);
        // 12.5 MB in 10 s = 10 Mbit/s; the reset counter gives no point.
        assert_eq!(rx, vec![(110.0, 10.0)]);
        assert_eq!(tx, vec![(110.0, 1.0), (120.0, 1.0)]);
    }

    #[test]
    fn loopback_counters_read_from_the_kernel() {
        let root = Path::new("/sys/class/net");
        let before = read(root, "lo").expect("lo has statistics");
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = sock.local_addr().unwrap();
        for _ in 0..20 {
            sock.send_to(&[0u8; 100], to).unwrap();
        }
        let after = read(root, "lo").unwrap();
        assert!(
            after.tx_packets >= before.tx_packets + 20,
            "{before:?} {after:?}"
        );
        assert!(after.tx_bytes >= before.tx_bytes + 20 * 100);
        assert!(!chosen(root, &[]).contains(&"lo".to_string()));
        assert_eq!(read(root, "no-such-if0"), None);
    }
}
