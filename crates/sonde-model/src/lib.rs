//! sonde's typed model: what to measure ([`TestSpec`]) and what was
//! measured ([`TestResult`]), with the units and names they are written in.
//!
//! This crate does no I/O. Every other crate speaks in these types: a flag,
//! a campaign line and a JSON body are three spellings of one spec, and a
//! result is printed, stored and charted from one struct. [`load_result`]
//! reads every result document sonde has ever written.

pub mod assemble;
pub mod client_core;
pub mod clock;
pub mod credential;
pub mod dscp;
pub mod duration;
pub mod env;
pub mod event;
pub mod failure;
pub mod figures;
pub mod host_port;
pub mod http_figures;
pub mod http_spec;
pub mod http_target;
pub mod iperf3_import;
pub mod load;
pub mod method;
pub mod metric;
pub mod ping;
pub mod profile;
pub mod report;
pub mod request;
pub mod result;
pub mod rtt;
pub mod schema;
pub mod serde_secs;
pub mod spec;
pub mod spec_error;
pub mod spec_rules;
pub mod test_spec;
pub mod toml_where;
pub mod tos;
pub mod trace;
pub mod udp_assemble;
pub mod udp_report;
pub mod udp_spec;
pub mod units;
pub mod v1;
pub mod video;
pub mod work;

pub use client_core::ClientCore;
pub use client_core::Volume;
pub use credential::{Credential, CredentialError};
pub use dscp::Dscp;
pub use duration::{format_duration, parse_duration, DurationError};
pub use env::{HostEnv, TcpBuffers};
pub use event::{Event, MethodEvent, OpenStream, Warning};
pub use failure::{Failure, FailureDocument, FailureKind};
pub use figures::{DscpClass, Figures, FrameClass};
pub use http_figures::{HttpFigures, HttpPhases, HttpStep, LatencyPercentiles, PhaseStats};
pub use http_spec::{HttpRamp, HttpSpec, HttpVersion, RampSteps, MAX_HTTP_THREADS};
pub use http_target::HttpTarget;
pub use iperf3_import::{from_iperf3, is_iperf3, Iperf3ImportError};
pub use load::{load_result, load_value, LoadError};
pub use method::{MethodKind, MethodResult, MethodSpec, METHOD_FORMAT_VERSION};
pub use metric::{Metric, MetricInfo, Worse};
pub use ping::{ClassOfServiceSeen, OneWayDelays, PingProto, PingReply, PingSource, PingSpec};
pub use profile::Profile;
pub use report::{
    SampleWindow, SideReport, SideSample, SocketInForce, StreamRole, StreamSide, TcpInfoSnapshot,
};
pub use request::{ParseError, Spec};
pub use result::{
    Interval, PingSeries, ResultId, StreamResult, Summary, TestEnv, TestResult, Timestamp,
    RESULT_FORMAT_VERSION,
};
pub use rtt::{nearest_rank, LatencyUnderLoad, ProbeMethod, RttStats};
pub use spec::{Direction, IpFamily, PeerKind, SpecError, StreamLayout, TcpSpec};
pub use test_spec::{TestKind, TestSpec};
pub use tos::{DscpFlag, DscpFlagError};
pub use trace::{
    route_change, MplsLabel, RouteChange, TraceAnswer, TraceFigures, TraceHop, TraceMtuStep,
    TraceProbe, TraceProto, TraceSpec,
};
pub use udp_report::{UdpSideReport, UdpStreamSide, UdpTally};
pub use udp_spec::UdpSpec;
pub use units::{ByteSize, Rate, UnitError};
pub use work::Work;

/// The version of sonde that built this crate (all crates share one version).
pub const SONDE_VERSION: &str = env!("CARGO_PKG_VERSION");
