//! [`Event`]: what a running test tells whoever listens, as owned values
//! that cross threads. The text printer, the JSON writer, the archive and
//! the portal's live view read the same events (`sonde_run::Events`
//! hands each of them a copy). A method's progress ([`MethodEvent`])
//! goes on the same channel as its trials' own events.

use crate::method::{NdrTrial, OverheadPoint, QosCheck, QosStep, SweepStep, TuneStep};
use crate::udp_report::Remark;
use crate::{
    Direction, Figures, HostEnv, Interval, PeerKind, PingReply, ProbeMethod, StreamRole, TestResult,
};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// A data stream, connected.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenStream {
    pub stream: u16,
    pub direction: Direction,
    /// What this end (the client) does with it.
    pub role: StreamRole,
    pub local: SocketAddr,
    pub remote: SocketAddr,
}

/// Something the user should know that does not stop the test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The server turned out to speak iperf3's protocol: the test goes on
    /// in it (`peer = auto`).
    PeerIsIperf3 { host: String, port: u16 },
    /// The peer reports only totals: there are no live intervals.
    NoLiveIntervals,
    /// The test ran, but its latency under load could not be measured;
    /// the result has no latency section.
    LatencyLost { reason: String },
}

/// What a running test says, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The server accepted the test.
    Connected {
        server: SocketAddr,
        peer: PeerKind,
        /// The server as it describes itself (an iperf3 server does not).
        env: HostEnv,
    },
    /// Every data stream is connected; data flows from now.
    StreamsOpen(Vec<OpenStream>),
    /// One interval as this end measured it, while the test runs: the
    /// sender's figures on streams this end sends, the receiver's on
    /// streams it receives (the other end's half comes with the result).
    Interval(Interval),
    /// Packets of `stream` arrived with another DSCP than they were sent
    /// with, first seen in this interval.
    Remarked {
        stream: u16,
        direction: Direction,
        remark: Remark,
    },
    /// A ping series starts.
    Series {
        size_bytes: u32,
        target: IpAddr,
        method: ProbeMethod,
    },
    /// One ping answer.
    Reply(PingReply),
    /// A trace starts toward `target` (the address its host resolved to).
    Trace {
        target: IpAddr,
    },
    /// A trace's hop, all its probes answered or timed out.
    Hop(crate::TraceHop),
    /// Latency under load: the idle RTT, measured before the load.
    LatencyIdle(Figures),
    Warning(Warning),
    /// The test is over; the same result the run returns.
    Finished(Arc<TestResult>),
    /// The run gave no result: why, in words (the run returns the
    /// typed error). A subscriber sees one of `Finished` and `Failed`
    /// last.
    Failed {
        reason: String,
    },
    /// A method's progress, between (and after) the events of its trials.
    Method(MethodEvent),
}

/// What a running method says as it goes, one kind per method: each is
/// emitted once its step is over (after the events of the trials it
/// read), in the order the method's result keeps them.
#[derive(Debug, Clone, PartialEq)]
pub enum MethodEvent {
    /// An NDR search's trial, judged (one per trial in `trials`).
    NdrTrial(NdrTrial),
    /// A sweep's step, per family and flow (as in `steps`).
    SweepStep(SweepStep),
    /// A repeat method's run, ended (as in `trials`).
    RepeatRun(Arc<TestResult>),
    /// A QoS check's verdict (as in `checks`).
    QosCheck(QosCheck),
    /// A QoS scenario's step (as in `qos_steps`).
    QosStep(QosStep),
    /// An overhead measurement's point: one payload size's goodput.
    OverheadPoint(OverheadPoint),
    /// What a tune's stage found, in words.
    TuneStage(String),
    /// A cell of the tuning laboratory's matrix (as in `tune_steps`).
    TuneLabStep(TuneStep),
}
