//! Resource classes: what a step may run beside.
//!
//! - `throughput`: a test that fills the path (TCP, UDP above 1 Mbit/s in
//!   all, every method). Two throughput steps on the same path never
//!   overlap, in one process or in several sharing an archive: a step
//!   takes the path's lease in the archive first.
//! - `probe`: a test that barely loads the path (pings, UDP at 1 Mbit/s
//!   or less, as the studies' PDR probe). It runs beside anything.
//!
//! perfSONAR's one-throughput-test-at-a-time rule is per host, and it
//! starves a mesh; sonde's is per path.

use sonde_model::Spec as StepBody;
use sonde_model::TestSpec;

/// The most a probe may send, in all, bits per second.
pub const PROBE_MAX_BPS: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceClass {
    Throughput,
    Probe,
}

impl ResourceClass {
    pub fn name(self) -> &'static str {
        match self {
            ResourceClass::Throughput => "throughput",
            ResourceClass::Probe => "probe",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [ResourceClass::Throughput, ResourceClass::Probe]
            .into_iter()
            .find(|c| c.name() == s)
    }

    /// The class a step is in unless its plan says otherwise.
    pub fn of(body: &StepBody) -> Self {
        match body {
            StepBody::Test(TestSpec::Ping(_) | TestSpec::Trace(_)) => ResourceClass::Probe,
            StepBody::Test(TestSpec::Udp(u)) => {
                let total = u.bitrate.bps().saturating_mul(u64::from(u.parallel));
                if total > 0 && total <= PROBE_MAX_BPS {
                    ResourceClass::Probe
                } else {
                    ResourceClass::Throughput
                }
            }
            StepBody::Test(TestSpec::Tcp(_) | TestSpec::Http(_)) | StepBody::Method(_) => {
                ResourceClass::Throughput
            }
        }
    }
}

/// The name of the path between two addresses, the same either way (a
/// test each way loads the same links).
pub fn path_key(a: &str, b: &str) -> String {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    if a <= b {
        format!("{a} <> {b}")
    } else {
        format!("{b} <> {a}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{PingSpec, Rate, TcpSpec, UdpSpec};

    #[test]
    fn pings_and_slow_udp_are_probes_and_the_rest_fills_the_path() {
        let ping = StepBody::Test(TestSpec::Ping(PingSpec::default()));
        assert_eq!(ResourceClass::of(&ping), ResourceClass::Probe);
        let mut udp = UdpSpec {
            bitrate: Rate::from_bps(1_000_000),
            ..UdpSpec::default()
        };
        let slow = StepBody::Test(TestSpec::Udp(udp.clone()));
        assert_eq!(ResourceClass::of(&slow), ResourceClass::Probe);
        udp.parallel = 2;
        let two = StepBody::Test(TestSpec::Udp(udp));
        assert_eq!(ResourceClass::of(&two), ResourceClass::Throughput);
        let tcp = StepBody::Test(TestSpec::Tcp(TcpSpec::default()));
        assert_eq!(ResourceClass::of(&tcp), ResourceClass::Throughput);
        assert_eq!(path_key("B", "a"), path_key("A", "b"));
    }
}
