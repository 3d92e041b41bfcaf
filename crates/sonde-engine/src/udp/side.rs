//! Running one end of a UDP test: a thread per stream (sending on a
//! schedule or receiving into the estimators) and, on the calling
//! thread, the [`crate::sampler`], which cuts the run into interval
//! windows; at each cut this end reads its senders' tallies and cuts its
//! receivers' estimators.

use crate::budget::Budget;
use crate::control::Control;
use crate::sampler::{drive, SampleSide, SamplerPlan};
use crate::udp::flow::{Credits, ACK_EVERY};
use crate::udp::frames::VideoRx;
use crate::udp::recv::{udp_receive_loop, RxAcc, RxStream};
use crate::udp::schedule::Schedule;
use crate::udp::send::{sent_since, udp_send_loop, SendLimits, UdpSendCounters, UdpSendPlan};
use crate::EngineError;
use sonde_model::udp_report::{ReceivedSum, ReceiverTally, SenderTally, UdpTally};
use sonde_model::video::{add_counts, VideoLayout};
use sonde_model::{
    HostEnv, Profile, Rate, SampleWindow, SocketInForce, StreamRole, UdpSideReport, UdpStreamSide,
};
use sonde_wire::StreamAck;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a receiver waits past the planned end when no end marker
/// arrives (all of them lost).
pub const UDP_RX_GRACE: Duration = Duration::from_secs(2);

/// A UDP socket connected to its peer and what this end does with it.
#[derive(Debug)]
pub struct UdpDataStream {
    pub index: u16,
    pub role: StreamRole,
    pub socket: UdpSocket,
    pub info: SocketInForce,
    /// DSCP set on the socket (0 if none).
    pub dscp: u8,
}

/// Timing, pacing and profile of one end's run.
#[derive(Debug, Clone, Copy)]
pub struct UdpSidePlan {
    pub omit: Duration,
    pub time: Duration,
    pub interval: Duration,
    pub profile: Profile,
    pub rate: Rate,
    pub length: u32,
    pub clock_synced: bool,
    /// Datagrams this end's senders send together after the warm-up
    /// before they stop (`-n`, `-k`); `None`: until the time is up.
    pub send_budget: Option<u64>,
}

/// Sends this end's receivers' progress to the peer; `false` once the
/// peer is gone.
pub type PublishAcks = Box<dyn FnMut(&[StreamAck]) -> bool + Send>;

/// Flow control wiring of an unpaced test (`-b 0`) for this end.
pub struct UdpFlow {
    /// Progress heard from the peer, read by this end's senders.
    pub credits: Arc<Credits>,
    pub publish: PublishAcks,
}

impl std::fmt::Debug for UdpFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpFlow")
            .field("credits", &self.credits)
            .finish_non_exhaustive()
    }
}

impl UdpFlow {
    /// Flow control whose progress reports go out on `control`, each
    /// wrapped by `message` (a client or a server message).
    pub fn over_control<M: serde::Serialize + Send + 'static>(
        control: &Control,
        credits: Arc<Credits>,
        message: fn(Vec<StreamAck>) -> M,
    ) -> Result<Self, EngineError> {
        let mut w = control.try_clone()?;
        Ok(Self {
            credits,
            publish: Box::new(move |acks: &[StreamAck]| w.send(&message(acks.to_vec())).is_ok()),
        })
    }
}

/// Reports the receivers' progress every [`ACK_EVERY`] until `done`.
fn spawn_publisher(
    receivers: Vec<(u16, Arc<Mutex<RxStream>>)>,
    mut publish: PublishAcks,
    done: Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    if receivers.is_empty() {
        return None;
    }
    std::thread::Builder::new()
        .name("sonde-udp-acks".into())
        .spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let acks: Vec<StreamAck> = receivers
                    .iter()
                    .filter_map(|(stream, st)| {
                        let next_expected = st.lock().ok()?.next_expected();
                        Some(StreamAck {
                            stream: *stream,
                            next_expected,
                        })
                    })
                    .collect();
                if !publish(&acks) {
                    break;
                }
                std::thread::sleep(ACK_EVERY);
            }
        })
        .ok()
}

/// One interval as this end saw it, while the test runs.
#[derive(Debug, Clone)]
pub struct UdpLive {
    pub window: SampleWindow,
    pub omitted: bool,
    pub streams: Vec<(u16, UdpTally)>,
}

enum Worker {
    Sender(Arc<UdpSendCounters>, SenderTally),
    Receiver(Arc<Mutex<RxStream>>),
}

struct Running {
    index: u16,
    role: StreamRole,
    info: SocketInForce,
    worker: Worker,
    windows: Vec<UdpTally>,
}

/// Runs every stream of this end from `start`, calling `on_interval` at
/// each window, and returns what this end measured.
pub fn run_udp_side(
    plan: UdpSidePlan,
    streams: Vec<UdpDataStream>,
    env: HostEnv,
    start: Instant,
    stop: &Arc<AtomicBool>,
    flow: Option<UdpFlow>,
    on_interval: &mut dyn FnMut(&UdpLive),
) -> UdpSideReport {
    let credits = flow.as_ref().map(|f| Arc::clone(&f.credits));
    let start_wall_ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        .saturating_sub(start.elapsed().as_nanos() as u64);
    let (done_tx, done_rx) = mpsc::channel::<u16>();
    let mut running = Vec::new();
    let mut handles = Vec::new();
    let budget = plan
        .send_budget
        .map(|n| Arc::new(Budget::new(n, start + plan.omit)));
    for ds in streams {
        let shared = SendShared {
            credits: credits.clone(),
            budget: budget.clone(),
        };
        let (worker, handle) = spawn(
            &ds,
            plan,
            start,
            start_wall_ns,
            stop,
            shared,
            done_tx.clone(),
        );
        running.push(Running {
            index: ds.index,
            role: ds.role,
            info: ds.info,
            worker,
            windows: Vec::new(),
        });
        handles.extend(handle);
    }
    drop(done_tx);
    let publisher_done = Arc::new(AtomicBool::new(false));
    let publisher = flow.and_then(|f| {
        let receivers = running
            .iter()
            .filter_map(|r| match &r.worker {
                Worker::Receiver(st) => Some((r.index, Arc::clone(st))),
                Worker::Sender(..) => None,
            })
            .collect();
        spawn_publisher(receivers, f.publish, Arc::clone(&publisher_done))
    });

    let mut sampling = Sampling {
        running,
        windows: Vec::new(),
        sums: Vec::new(),
        plan,
        start_wall_ns,
        on_interval,
    };
    let sampler = SamplerPlan {
        omit: plan.omit,
        time: plan.time,
        interval: plan.interval,
        bounded: plan.send_budget.is_some(),
    };
    let stopped_early = drive(sampler, start, &done_rx, handles.len(), stop, &mut sampling);
    for h in handles {
        let _ = h.join();
    }
    publisher_done.store(true, Ordering::Relaxed);
    if let Some(p) = publisher {
        let _ = p.join();
    }
    finish(sampling, env, stopped_early)
}

/// What this end does at the sampler's events: at a cut, each sender's
/// tally since the last cut and each receiver's estimators' cut. The
/// warm-up needs nothing here: senders and receivers count it apart by
/// each packet's warm-up flag.
struct Sampling<'a> {
    running: Vec<Running>,
    windows: Vec<SampleWindow>,
    /// Per window, the sum of this end's receivers (if it has any).
    sums: Vec<ReceiverTally>,
    plan: UdpSidePlan,
    start_wall_ns: u64,
    on_interval: &'a mut dyn FnMut(&UdpLive),
}

impl SampleSide for Sampling<'_> {
    fn omit_end(&mut self) {}

    fn cut(&mut self, window: SampleWindow, omitted: bool) {
        let secs = (window.end_s - window.start_s).max(1e-9);
        let synced = self.plan.clock_synced;
        let mut sum = RxAcc::default();
        let mut any_rx = false;
        let mut live = Vec::new();
        for r in &mut self.running {
            let tally = match &mut r.worker {
                Worker::Sender(c, last) => {
                    let now = c.sent();
                    let t = sent_since(&now, last, secs);
                    *last = now;
                    UdpTally::Sent(t)
                }
                Worker::Receiver(st) => {
                    let Ok(mut st) = st.lock() else { continue };
                    let jitter = st.jitter_ms();
                    let acc = st.cut();
                    sum.merge(&acc, jitter);
                    any_rx = true;
                    UdpTally::Received(acc.tally(Some(jitter), synced))
                }
            };
            r.windows.push(tally.clone());
            live.push((r.index, tally));
        }
        self.windows.push(window);
        self.sums.extend(any_rx.then(|| sum.tally(None, synced)));
        (self.on_interval)(&UdpLive {
            window,
            omitted,
            streams: live,
        });
    }

    fn last_data(&self) -> Duration {
        let ns = self.running.iter().filter_map(|r| match &r.worker {
            Worker::Sender(c, _) => Some(c.last_ns.load(Ordering::Relaxed)),
            Worker::Receiver(st) => {
                let wall = st.lock().ok()?.last_rx_ns()?;
                Some(u64::try_from(wall).ok()?.saturating_sub(self.start_wall_ns))
            }
        });
        Duration::from_nanos(ns.max().unwrap_or(0))
    }
}

/// What this end measured, once its streams ended.
fn finish(sampled: Sampling<'_>, env: HostEnv, stopped_early: bool) -> UdpSideReport {
    let Sampling {
        running,
        windows,
        sums,
        plan,
        ..
    } = sampled;
    let mut sum = RxAcc::default();
    let mut sum_frames = Vec::new();
    let mut sum_burst = None;
    let mut any_rx = false;
    let streams = running
        .into_iter()
        .map(|r| {
            let measured = match &r.worker {
                Worker::Sender(c, _) => {
                    let mut t = c.measured();
                    let last_s = c.last_ns.load(Ordering::Relaxed) as f64 / 1e9;
                    t.secs = if stopped_early || plan.send_budget.is_some() {
                        (last_s - plan.omit.as_secs_f64()).clamp(0.0, plan.time.as_secs_f64())
                    } else {
                        plan.time.as_secs_f64()
                    };
                    UdpTally::Sent(t)
                }
                Worker::Receiver(st) => match st.lock() {
                    Ok(mut st) => {
                        let jitter = st.jitter_ms();
                        let frames = st.frame_counts();
                        let burst = st.loss_burst_max();
                        sum_burst = sum_burst.max(Some(burst));
                        add_counts(&mut sum_frames, &frames);
                        let m = st.measured();
                        sum.merge(m, jitter);
                        any_rx = true;
                        UdpTally::Received(ReceiverTally {
                            frames,
                            loss_burst_max: Some(burst),
                            ..m.tally(Some(jitter), plan.clock_synced)
                        })
                    }
                    Err(_) => UdpTally::Received(ReceiverTally::default()),
                },
            };
            UdpStreamSide {
                stream: r.index,
                role: r.role,
                socket: r.info,
                measured,
                windows: r.windows,
            }
        })
        .collect();
    UdpSideReport {
        env,
        windows,
        streams,
        received_sum: any_rx.then(|| ReceivedSum {
            measured: ReceiverTally {
                frames: sum_frames,
                // Streams are numbered apart: a direction's longest burst
                // is its streams' longest.
                loss_burst_max: sum_burst,
                ..sum.tally(None, plan.clock_synced)
            },
            windows: sums,
        }),
        stopped_early,
    }
}

/// What a side's senders share: flow-control credits (unpaced tests)
/// and the direction's datagram budget (tests bounded by volume).
struct SendShared {
    credits: Option<Arc<Credits>>,
    budget: Option<Arc<Budget>>,
}

fn spawn(
    ds: &UdpDataStream,
    plan: UdpSidePlan,
    start: Instant,
    start_wall_ns: u64,
    stop: &Arc<AtomicBool>,
    shared: SendShared,
    done: mpsc::Sender<u16>,
) -> (Worker, Option<std::thread::JoinHandle<()>>) {
    let sock = match ds.socket.try_clone() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot share a UDP socket with its thread");
            stop.store(true, Ordering::Relaxed);
            return (Worker::Receiver(Arc::default()), None);
        }
    };
    let (index, thread_stop) = (ds.index, Arc::clone(stop));
    let nominal_end = start + plan.omit + plan.time;
    let (worker, body): (Worker, Box<dyn FnOnce() -> std::io::Result<()> + Send>) = match ds.role {
        StreamRole::Sender => {
            let counters = Arc::new(UdpSendCounters::default());
            let c = Arc::clone(&counters);
            let send_plan = UdpSendPlan {
                stream: index,
                start,
                start_wall_ns,
                omit: plan.omit,
                send_end: nominal_end,
                dscp: ds.dscp,
                ipv6: crate::sockopt::is_v6_path(&ds.info.remote),
            };
            let schedule = Schedule::new(
                plan.profile,
                plan.rate,
                plan.length,
                0x5eed ^ u64::from(index),
            );
            let body = Box::new(move || {
                udp_send_loop(
                    &sock,
                    send_plan,
                    schedule,
                    &c,
                    SendLimits {
                        credits: shared.credits.as_deref(),
                        budget: shared.budget.as_deref(),
                    },
                    &thread_stop,
                )
            });
            (Worker::Sender(counters, SenderTally::default()), body)
        }
        StreamRole::Receiver => {
            let rx = match plan.profile {
                Profile::Video(v) => RxStream::video(VideoRx::new(
                    VideoLayout::new(v, plan.rate.bps(), plan.length),
                    (plan.omit + plan.time).as_secs_f64(),
                )),
                _ => RxStream::default(),
            };
            let state = Arc::new(Mutex::new(rx));
            let s = Arc::clone(&state);
            let max_len = plan.length.max(sonde_model::profile::VOIP_PAYLOAD) as usize;
            let body = Box::new(move || {
                sock.set_read_timeout(Some(Duration::from_millis(50)))?;
                udp_receive_loop(
                    &sock,
                    index,
                    &s,
                    nominal_end + UDP_RX_GRACE,
                    max_len,
                    plan.rate.bps() == 0,
                    &thread_stop,
                )
            });
            (Worker::Receiver(state), body)
        }
    };
    let handle =
        crate::sampler::spawn_worker(format!("sonde-udp-{index}"), index, done, stop, body);
    (worker, handle)
}
