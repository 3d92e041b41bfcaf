//! Latency under load: a ping series to the server before a test (idle)
//! and another one while it runs (loaded).

use super::{run_ping, PingEvent};
use crate::EngineError;
use sonde_model::{Figures, IpFamily, LatencyUnderLoad, PingProto, PingSpec, ProbeMethod};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Pings every 100 ms; 10 of them idle.
const INTERVAL: Duration = Duration::from_millis(100);
const IDLE_COUNT: u64 = 10;

fn spec(host: &str, family: IpFamily, count: u64) -> PingSpec {
    PingSpec {
        host: host.to_string(),
        proto: PingProto::Icmp,
        port: 0,
        count,
        interval: INTERVAL,
        sizes: vec![56],
        dscp: None,
        family,
        report_interval: Duration::from_secs(3600),
        timeout: Duration::from_secs(1),
        ..PingSpec::default()
    }
}

/// The idle series, taken before the load starts.
#[derive(Debug)]
pub struct Idle {
    host: String,
    family: IpFamily,
    method: ProbeMethod,
    figures: Figures,
}

/// Pings `host` idle (1 s): the first half of a latency-under-load figure.
pub fn measure_idle(host: &str, family: IpFamily) -> Result<Idle, EngineError> {
    let never = AtomicBool::new(false);
    let r = run_ping(
        &spec(host, family, IDLE_COUNT),
        None,
        &never,
        &mut |_: PingEvent<'_>| {},
    )?;
    Ok(Idle {
        host: host.to_string(),
        family,
        method: r.env.method.unwrap_or(ProbeMethod::IcmpRaw),
        figures: r.summary.round_trip.unwrap_or_default(),
    })
}

/// Pings running beside a load until [`Loaded::finish`].
pub struct Loaded {
    idle: Idle,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<Figures, EngineError>>>,
}

impl Idle {
    /// The idle series' figures.
    pub fn figures(&self) -> &Figures {
        &self.figures
    }

    /// Starts pinging while the load runs.
    pub fn start_loaded(self) -> Loaded {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let s = spec(&self.host, self.family, 0);
        let handle = std::thread::spawn(move || {
            run_ping(&s, None, &flag, &mut |_: PingEvent<'_>| {})
                .map(|r| r.summary.round_trip.unwrap_or_default())
        });
        Loaded {
            idle: self,
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Loaded {
    /// A run that ends without [`Loaded::finish`] (a failed or panicking
    /// load) still stops its pinger.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Loaded {
    /// Stops the loaded pings (answers still in flight are not waited
    /// for) and puts both series together.
    pub fn finish(mut self) -> Result<LatencyUnderLoad, EngineError> {
        self.stop.store(true, Ordering::Relaxed);
        let failed = || EngineError::Unavailable("the latency pinger failed".into());
        let loaded = self
            .handle
            .take()
            .ok_or_else(failed)?
            .join()
            .map_err(|_| failed())??;
        Ok(LatencyUnderLoad::new(
            self.idle.method,
            self.idle.figures.clone(),
            loaded,
        ))
    }
}
