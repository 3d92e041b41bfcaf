//! Running one end of a TCP test: a thread per stream, and on the
//! calling thread the [`crate::sampler`], which cuts the run into
//! interval windows; at each cut this end reads every stream's bytes and
//! its sender's TCP_INFO.

use crate::budget::Budget;
use crate::pacer::Pacer;
use crate::sampler::{drive, SampleSide, SamplerPlan};
use crate::sockopt::in_force;
use crate::tcp::info::read_tcp_info;
use crate::tcp::stream::{receive_loop, send_loop, LoopTiming, SendIo, StreamCounters};
use sonde_model::{
    HostEnv, Rate, SampleWindow, SideReport, SideSample, SocketInForce, StreamRole, StreamSide,
    TcpInfoSnapshot,
};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long receivers wait, after senders stop, for queued data to drain.
pub const DRAIN_GRACE: Duration = Duration::from_secs(30);

/// A connected data stream and what this end does with it.
#[derive(Debug)]
pub struct DataStream {
    pub index: u16,
    pub role: StreamRole,
    pub stream: TcpStream,
    pub flowlabel: Option<u32>,
}

/// The timing and pacing of one end's run.
#[derive(Debug, Clone, Copy)]
pub struct SidePlan {
    pub omit: Duration,
    pub time: Duration,
    /// Zero: no interval windows.
    pub interval: Duration,
    pub length: usize,
    /// Per-stream send rate; `None` is unpaced.
    pub send_rate: Option<Rate>,
    /// Per-stream receive cap (a server limit); `None` is uncapped.
    pub receive_rate: Option<Rate>,
    /// How long after the end of the time receivers go on reading (and
    /// senders wait for the peer's close). A sonde peer closes its end
    /// after the data, so this is only a limit ([`DRAIN_GRACE`]); an
    /// iperf3 peer keeps its data connections open until the test is
    /// over, so against one this is what is left for data in flight.
    pub receive_grace: Duration,
    /// Bytes this end's senders send together after the warm-up before
    /// they stop (`-n`, `-k`); `None`: until the time is up.
    pub send_budget: Option<u64>,
    /// Bytes after which this end's receivers stop together (against a
    /// peer that does not close its streams: iperf3); `None`: they read
    /// until the sender closes or the time and grace are up.
    pub receive_budget: Option<u64>,
    /// Senders `sendfile` from a memory-backed file (`-Z`).
    pub zerocopy: bool,
}

/// The budgets of a side bounded by volume, per role.
struct Budgets {
    send: Option<Arc<Budget>>,
    receive: Option<Arc<Budget>>,
}

/// One interval as this end saw it, handed out while the test runs.
#[derive(Debug, Clone)]
pub struct LiveInterval {
    pub window: SampleWindow,
    pub omitted: bool,
    pub streams: Vec<(u16, StreamRole, SideSample)>,
}

struct Running {
    index: u16,
    role: StreamRole,
    socket: SocketInForce,
    probe: Option<TcpStream>,
    counters: Arc<StreamCounters>,
    samples: Vec<SideSample>,
    last_bytes: u64,
    bytes_at_omit: u64,
    retrans_at_omit: u64,
}

impl Running {
    fn tcp(&self) -> Option<TcpInfoSnapshot> {
        self.probe.as_ref().and_then(read_tcp_info)
    }
    fn bytes(&self) -> u64 {
        self.counters.bytes.load(Ordering::Relaxed)
    }
    fn last_data(&self) -> Duration {
        Duration::from_nanos(self.counters.last_data_ns.load(Ordering::Relaxed))
    }
    fn last_data_s(&self) -> f64 {
        secs(self.last_data())
    }
    /// When the measured part began for a receiver: the end of the
    /// warm-up, or without one the first byte (the sender starts half a
    /// round trip after the receiver's clock).
    fn receive_start_s(&self, omit: Duration) -> f64 {
        match self.counters.first_data_ns.load(Ordering::Relaxed) {
            u64::MAX => secs(omit),
            _ if !omit.is_zero() => secs(omit),
            first => first as f64 / 1e9,
        }
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Running {
    /// Bytes since the last sample, with the sender's TCP_INFO now.
    fn take_sample(&mut self) -> SideSample {
        let now = self.bytes();
        let sample = SideSample {
            bytes: now - self.last_bytes,
            tcp: self.tcp(),
        };
        self.last_bytes = now;
        self.samples.push(sample);
        sample
    }

    fn into_side(self, plan: SidePlan, stopped_early: bool) -> StreamSide {
        let total_bytes = self.bytes();
        let measured_secs = match self.role {
            StreamRole::Sender if stopped_early || plan.send_budget.is_some() => {
                (self.last_data_s() - secs(plan.omit)).clamp(0.0, secs(plan.time))
            }
            StreamRole::Sender => secs(plan.time),
            StreamRole::Receiver => (self.last_data_s() - self.receive_start_s(plan.omit)).max(0.0),
        };
        StreamSide {
            stream: self.index,
            role: self.role,
            final_tcp: self.tcp(),
            socket: self.socket,
            total_bytes,
            measured_bytes: total_bytes.saturating_sub(self.bytes_at_omit),
            measured_secs,
            omitted_retrans: self.retrans_at_omit,
            samples: self.samples,
        }
    }
}

/// Starts the thread that moves one stream's data; `done` hears its index
/// when it ends. Without a thread (the system refused one) `stop` is set.
fn spawn_stream(
    ds: DataStream,
    plan: SidePlan,
    timing: LoopTiming,
    budget: Option<Arc<Budget>>,
    stop: &Arc<AtomicBool>,
    done: mpsc::Sender<u16>,
) -> (Running, Option<std::thread::JoinHandle<()>>) {
    let counters = Arc::new(StreamCounters::default());
    let running = Running {
        index: ds.index,
        role: ds.role,
        socket: in_force(&ds.stream, ds.flowlabel),
        probe: match ds.role {
            StreamRole::Sender => ds.stream.try_clone().ok(),
            StreamRole::Receiver => None,
        },
        counters: Arc::clone(&counters),
        samples: Vec::new(),
        last_bytes: 0,
        bytes_at_omit: 0,
        retrans_at_omit: 0,
    };
    let thread_stop = Arc::clone(stop);
    let (index, role, stream) = (ds.index, ds.role, ds.stream);
    let handle = crate::sampler::spawn_worker(
        format!("sonde-stream-{index}"),
        index,
        done,
        stop,
        move || match role {
            StreamRole::Sender => {
                let pacer = plan.send_rate.map(Pacer::new);
                let io = SendIo {
                    length: plan.length,
                    pacer,
                    budget: budget.as_deref(),
                    zerocopy: plan.zerocopy,
                };
                send_loop(stream, &counters, timing, io, &thread_stop)
            }
            StreamRole::Receiver => {
                let pacer = plan.receive_rate.map(Pacer::new);
                receive_loop(
                    stream,
                    &counters,
                    timing,
                    plan.length,
                    pacer,
                    budget.as_deref(),
                    &thread_stop,
                )
            }
        },
    );
    (running, handle)
}

/// What this end does at the sampler's events: marks the warm-up's end
/// in each stream's counters, and reads every stream at a cut.
struct Sampling<'a> {
    running: Vec<Running>,
    windows: Vec<SampleWindow>,
    /// The senders' budget, opened at the end of the warm-up.
    send_budget: Option<Arc<Budget>>,
    on_interval: &'a mut dyn FnMut(&LiveInterval),
}

impl SampleSide for Sampling<'_> {
    fn omit_end(&mut self) {
        if let Some(b) = &self.send_budget {
            b.open();
        }
        for r in &mut self.running {
            r.bytes_at_omit = r.bytes();
            r.retrans_at_omit = r.tcp().and_then(|t| t.total_retrans).unwrap_or(0);
        }
    }

    fn cut(&mut self, window: SampleWindow, omitted: bool) {
        let streams = self
            .running
            .iter_mut()
            .map(|r| (r.index, r.role, r.take_sample()))
            .collect();
        self.windows.push(window);
        (self.on_interval)(&LiveInterval {
            window,
            omitted,
            streams,
        });
    }

    fn last_data(&self) -> Duration {
        self.running
            .iter()
            .map(Running::last_data)
            .max()
            .unwrap_or_default()
    }
}

/// Runs every stream of this end from `start` until the senders have
/// sent for `omit + time` and the receivers have read to the end (or
/// `stop` is set), calling `on_interval` at each window.
pub fn run_side(
    plan: SidePlan,
    streams: Vec<DataStream>,
    env: HostEnv,
    start: Instant,
    stop: &Arc<AtomicBool>,
    on_interval: &mut dyn FnMut(&LiveInterval),
) -> SideReport {
    let nominal_end = plan.omit + plan.time;
    let timing = LoopTiming {
        start,
        send_end: start + nominal_end,
        hard_end: start + nominal_end + plan.receive_grace,
    };
    let budgets = Budgets {
        // Counted from the sampler's end of the warm-up, the moment the
        // measured bytes start from.
        send: plan.send_budget.map(|n| {
            Arc::new(if plan.omit.is_zero() {
                Budget::new(n, start)
            } else {
                Budget::gated(n)
            })
        }),
        receive: plan.receive_budget.map(|n| Arc::new(Budget::new(n, start))),
    };
    let (done_tx, done_rx) = mpsc::channel::<u16>();
    let mut running = Vec::with_capacity(streams.len());
    let mut handles = Vec::with_capacity(streams.len());
    for ds in streams {
        let budget = match ds.role {
            StreamRole::Sender => budgets.send.clone(),
            StreamRole::Receiver => budgets.receive.clone(),
        };
        let (r, handle) = spawn_stream(ds, plan, timing, budget, stop, done_tx.clone());
        running.push(r);
        handles.extend(handle);
    }
    drop(done_tx);

    let mut sampling = Sampling {
        running,
        windows: Vec::new(),
        send_budget: budgets.send.clone(),
        on_interval,
    };
    let sampler = SamplerPlan {
        omit: plan.omit,
        time: plan.time,
        interval: plan.interval,
        bounded: plan.send_budget.is_some() || plan.receive_budget.is_some(),
    };
    let stopped_early = drive(sampler, start, &done_rx, handles.len(), stop, &mut sampling);
    for h in handles {
        let _ = h.join();
    }
    let Sampling {
        running, windows, ..
    } = sampling;
    let streams = running
        .into_iter()
        .map(|r| r.into_side(plan, stopped_early))
        .collect();
    SideReport {
        env,
        windows,
        streams,
        stopped_early,
    }
}
