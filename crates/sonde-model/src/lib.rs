//! sonde's typed model: what to measure ([`TcpSpec`]) and what was measured
//! ([`TcpResult`]), with the units and names they are written in.
//!
//! This crate does no I/O. Every other crate speaks in these types: a flag,
//! a campaign line and a JSON body are three spellings of one Spec, and a
//! Result is printed, stored and charted from one struct.

pub mod assemble;
pub mod dscp;
pub mod env;
pub mod ping;
pub mod profile;
pub mod report;
pub mod result;
pub mod rtt;
pub mod serde_secs;
pub mod spec;
pub mod udp_assemble;
pub mod udp_report;
pub mod udp_result;
pub mod udp_spec;
pub mod units;

pub use dscp::Dscp;
pub use env::HostEnv;
pub use ping::{PingProto, PingResult, PingSpec};
pub use profile::Profile;
pub use report::{
    SampleWindow, SideReport, SideSample, SocketInForce, StreamRole, StreamSide, TcpInfoSnapshot,
};
pub use result::{
    DirectionSummary, Interval, IntervalSum, StreamInterval, StreamResult, TcpResult, TcpSummary,
    TestEnv, Timestamp, RESULT_FORMAT_VERSION,
};
pub use rtt::{LatencyUnderLoad, PingCounts, RttStats};
pub use spec::{Direction, IpFamily, SpecError, StreamLayout, TcpSpec, TestSpec};
pub use udp_report::{UdpSideReport, UdpStreamSide, UdpTally};
pub use udp_result::UdpResult;
pub use udp_spec::UdpSpec;
pub use units::{ByteSize, Rate, UnitError};

/// The version of sonde that built this crate (all crates share one version).
pub const SONDE_VERSION: &str = env!("CARGO_PKG_VERSION");
