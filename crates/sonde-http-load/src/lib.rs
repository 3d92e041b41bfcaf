//! The HTTP benchmark (`sonde http`): connections spread over sender
//! threads, each thread its own single-threaded event loop (tokio), each
//! connection a task sending requests one after another.
//!
//! - Closed loop: the next request goes when the last answer is in; its
//!   latency counts from its send (connecting included when it had to
//!   connect, as ab's total).
//! - Open loop (`rate`): connection `i` of `c` sends its `k`-th request at
//!   `start + (k·c + i) / rate`, whatever the answers do. A request sent
//!   late because its connection was still waiting counts its latency
//!   from when it should have gone (wrk2's correction for coordinated
//!   omission); the uncorrected latency, from its actual send, is kept
//!   beside it.

mod conn;
mod error;
mod http2;
mod recorder;
pub mod response;
pub mod target;

pub use error::HttpLoadError;

pub use recorder::{percentiles, phase_stats, Recorder};

use conn::{Dialer, Failure};
use recorder::Phase;
use sonde_model::{HttpSpec, IpFamily};
use std::cell::RefCell;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use target::{request_bytes, Target};

/// One sender thread's totals so far, on a cache line of its own and
/// written by that thread alone: the threads never write to the same line,
/// whatever the request rate, and need no locked instruction to count.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct LiveSlot {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub bytes: AtomicU64,
}

/// Totals so far, for live progress (read once a second): a slot per
/// sender thread.
#[derive(Debug)]
pub struct Live {
    slots: Vec<LiveSlot>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            slots: (0..sonde_model::MAX_HTTP_THREADS)
                .map(|_| LiveSlot::default())
                .collect(),
        }
    }
}

impl Live {
    /// Thread `t`'s slot (a spec allows no more threads than slots).
    fn slot(&self, t: usize) -> &LiveSlot {
        &self.slots[t % self.slots.len()]
    }

    /// (requests, errors, bytes) over every thread.
    pub fn totals(&self) -> (u64, u64, u64) {
        self.slots.iter().fold((0, 0, 0), |(r, e, b), s| {
            (
                r + s.requests.load(Ordering::Relaxed),
                e + s.errors.load(Ordering::Relaxed),
                b + s.bytes.load(Ordering::Relaxed),
            )
        })
    }
}

/// One step's load: connections, and the rate in an open loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub connections: u32,
    pub rate: Option<f64>,
}

/// What a step measured, merged over threads, and how long it ran.
#[derive(Debug)]
pub struct StepRun {
    pub recorder: Recorder,
    pub elapsed: Duration,
    pub interrupted: bool,
}

/// Everything a step's tasks share.
struct Shared {
    dialer: Dialer,
    request: Vec<u8>,
    /// HTTP/2's request, when the test speaks it.
    http2: Option<http2::Template>,
    head_request: bool,
    keep_alive: bool,
    timeout: Duration,
    load: Load,
    start: Instant,
    deadline: Option<Instant>,
    /// Requests left to send (`-n`), if counted.
    budget: Option<AtomicU64>,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
}

impl Shared {
    /// Takes one request from the budget; false when none is left.
    fn claim(&self) -> bool {
        match &self.budget {
            None => true,
            Some(b) => b
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok(),
        }
    }

    fn second(&self, at: Instant) -> usize {
        at.saturating_duration_since(self.start).as_secs() as usize
    }
}

/// What every step of a test needs, built once from the spec.
pub struct Prepared {
    spec: HttpSpec,
    target: Target,
    literal: Option<SocketAddr>,
    body: Vec<u8>,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Prepared {
    /// Parses the URL and reads the body file.
    pub fn new(spec: &HttpSpec) -> Result<Self, HttpLoadError> {
        let target = Target::parse(&spec.url).map_err(HttpLoadError::Unavailable)?;
        let literal = target
            .host
            .parse::<IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, target.port));
        if let (Some(a), fam) = (literal, spec.family) {
            if (fam == IpFamily::V4 && a.is_ipv6()) || (fam == IpFamily::V6 && a.is_ipv4()) {
                return Err(HttpLoadError::NoAddress {
                    host: target.host.clone(),
                    family: if fam == IpFamily::V4 { "IPv4" } else { "IPv6" },
                });
            }
        }
        let body = match &spec.body_file {
            Some(p) => std::fs::read(p).map_err(|source| HttpLoadError::Io {
                context: "reading the body file",
                source,
            })?,
            None => Vec::new(),
        };
        let http2 = spec.version == sonde_model::HttpVersion::Http2;
        if http2 {
            // Checked here, before any traffic.
            http2::Template::new(spec, &target, &body).map_err(HttpLoadError::Unavailable)?;
        }
        let tls = target.tls.then(|| conn::tls_config(spec.insecure, http2));
        Ok(Self {
            spec: spec.clone(),
            target,
            literal,
            body,
            tls,
        })
    }

    fn dialer(&self) -> Result<Dialer, HttpLoadError> {
        let tls = match &self.tls {
            None => None,
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from(self.target.host.clone())
                    .map_err(|e| HttpLoadError::Unavailable(format!("TLS server name: {e}")))?;
                Some((tokio_rustls::TlsConnector::from(Arc::clone(config)), name))
            }
        };
        Ok(Dialer {
            target: self.target.clone(),
            literal: self.literal,
            family: self.spec.family,
            tls,
        })
    }

    /// Runs one step: `load` for `time` (or until the spec's count of
    /// requests), on `threads` threads.
    pub fn run_step(
        &self,
        load: Load,
        time: Option<Duration>,
        stop: &Arc<AtomicBool>,
        live: &Arc<Live>,
    ) -> Result<StepRun, HttpLoadError> {
        let threads = match self.spec.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => usize::from(n),
        }
        .clamp(1, load.connections as usize);
        let start = Instant::now();
        let shared = Arc::new(Shared {
            dialer: self.dialer()?,
            request: request_bytes(&self.spec, &self.target, &self.body),
            http2: match self.spec.version {
                sonde_model::HttpVersion::Http2 => Some(
                    http2::Template::new(&self.spec, &self.target, &self.body)
                        .map_err(HttpLoadError::Unavailable)?,
                ),
                sonde_model::HttpVersion::Http1 => None,
            },
            head_request: self.spec.method == "HEAD",
            keep_alive: self.spec.keep_alive,
            timeout: self.spec.timeout,
            load,
            start,
            deadline: time.map(|t| start + t),
            budget: self.spec.requests.map(AtomicU64::new),
            stop: Arc::clone(stop),
            live: Arc::clone(live),
        });
        let mut merged = Recorder::default();
        let outcomes: Vec<std::io::Result<Recorder>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let shared = Arc::clone(&shared);
                    let mine: Vec<u32> = (0..load.connections)
                        .filter(|c| *c as usize % threads == t)
                        .collect();
                    std::thread::Builder::new()
                        .name(format!("sonde-http-{t}"))
                        .spawn_scoped(scope, move || sender_thread(&shared, t, &mine))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a sender thread failed"))),
                    Err(e) => Err(e),
                })
                .collect()
        });
        for o in outcomes {
            let r = o.map_err(|source| HttpLoadError::Io {
                context: "running the HTTP senders",
                source,
            })?;
            merged.merge(&r);
        }
        Ok(StepRun {
            recorder: merged,
            elapsed: start.elapsed(),
            interrupted: stop.load(Ordering::Relaxed),
        })
    }
}

fn sender_thread(
    shared: &Arc<Shared>,
    thread: usize,
    connections: &[u32],
) -> std::io::Result<Recorder> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let recorder = Rc::new(RefCell::new(Recorder::default()));
    let local = tokio::task::LocalSet::new();
    // The connections are futures of one task, polled as each is woken,
    // not tasks of their own: no scheduling through the runtime's queue
    // for every answer. The LocalSet is there for HTTP/2's connection
    // drivers, which are tasks.
    //
    // Unconstrained by tokio's cooperative budget: it allows a task 128
    // socket operations a poll, then makes every further read return
    // Pending until the task is polled again. With all connections in one
    // task, a thread of 256 connections had half of them held back each
    // round, answers they had already received waiting unread: sonde's
    // p99 at 256 connections on one thread was 3.4 times wrk's at the
    // same rate (bench/http-vs-wrk). The task is the thread's only work,
    // so it has nothing to be fair to.
    local.block_on(
        &runtime,
        tokio::task::unconstrained(async {
            let mut all: futures_util::stream::FuturesUnordered<_> = connections
                .iter()
                .map(|i| connection(Arc::clone(shared), thread, *i, Rc::clone(&recorder)))
                .collect();
            while futures_util::StreamExt::next(&mut all).await.is_some() {}
        }),
    );
    let out = recorder.borrow().clone();
    Ok(out)
}

/// When request `k` of connection `index` is due in an open loop.
fn intended(shared: &Shared, index: u32, k: u64, rate: f64) -> Instant {
    let c = f64::from(shared.load.connections);
    let at_s = (k as f64 * c + f64::from(index)) / rate;
    shared.start + Duration::from_secs_f64(at_s)
}

/// `n` added to a slot only this thread writes: a load and a store, no
/// locked read-modify-write on every request.
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

/// `work`, or `None` once `deadline` has passed. The connection's one
/// timer (`watchdog`) is moved only when it fires before the request's
/// deadline, not armed and disarmed for every request: requests end long
/// before their limit, so it fires about once per `--timeout`.
/// `work` is pinned where it was made: the request's state is not moved
/// again on every request.
async fn within<F: std::future::Future>(
    watchdog: &mut std::pin::Pin<Box<tokio::time::Sleep>>,
    deadline: Instant,
    mut work: std::pin::Pin<&mut F>,
) -> Option<F::Output> {
    use std::future::Future;
    use std::task::Poll;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        while watchdog.as_mut().poll(cx).is_ready() {
            if Instant::now() >= deadline {
                return Poll::Ready(None);
            }
            watchdog.as_mut().reset(deadline.into());
        }
        Poll::Pending
    })
    .await
}

/// One connection's loop: request after request until the step ends.
async fn connection(shared: Arc<Shared>, thread: usize, index: u32, rec: Rc<RefCell<Recorder>>) {
    let live = shared.live.slot(thread);
    let mut wire = None;
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut k: u64 = 0;
    let mut watchdog = Box::pin(tokio::time::sleep(shared.timeout));
    // The clock as last read: the step's end is checked against it.
    let mut now = Instant::now();
    loop {
        if shared.stop.load(Ordering::Relaxed) || shared.deadline.is_some_and(|d| now >= d) {
            return;
        }
        // Open loop: wait for this request's time.
        let due = shared.load.rate.map(|r| intended(&shared, index, k, r));
        k += 1;
        if let Some(due) = due {
            if shared.deadline.is_some_and(|d| due >= d) {
                return;
            }
            tokio::time::sleep_until(due.into()).await;
            if shared.stop.load(Ordering::Relaxed) {
                return;
            }
        }
        if !shared.claim() {
            return;
        }
        let began = Instant::now();
        let from = due.unwrap_or(began);
        let outcome = {
            let work = std::pin::pin!(request(&shared, &mut wire, &mut buf, &rec, began));
            within(&mut watchdog, began + shared.timeout, work)
                .await
                .unwrap_or(Err(Failure::Timeout))
        };
        match outcome {
            Ok((answer, done)) => {
                now = done;
                let total = done - began;
                let uncorrected = due.map(|_| total);
                let at_s = shared.second(done);
                rec.borrow_mut().answer(
                    answer.status,
                    answer.bytes,
                    done - from,
                    uncorrected,
                    at_s,
                );
                bump(&live.requests, 1);
                bump(&live.bytes, answer.bytes);
                if answer.status >= 400 {
                    bump(&live.errors, 1);
                }
                if answer.close || !shared.keep_alive {
                    wire = None;
                }
            }
            Err(f) => {
                now = Instant::now();
                wire = None;
                rec.borrow_mut().error(f.name(), shared.second(now));
                bump(&live.errors, 1);
                // A closed loop would spin on a refused connection.
                if due.is_none() && matches!(f, Failure::Connect | Failure::Dns | Failure::Tls) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }
}

/// An open connection: HTTP/1.1's byte stream, or an HTTP/2 connection's
/// handle (its frames driven by a task of its own).
enum Session {
    Http1(Box<dyn conn::Wire>),
    Http2(h2::client::SendRequest<bytes::Bytes>),
}

/// Opens a connection and records its phases (DNS, connect, TLS).
async fn open(shared: &Shared, rec: &Rc<RefCell<Recorder>>) -> Result<Session, Failure> {
    let (w, opened) = shared.dialer.open().await?;
    {
        let mut r = rec.borrow_mut();
        if let Some(d) = opened.dns {
            r.phase(Phase::Dns, d);
        }
        r.phase(Phase::Connect, opened.connect);
        if let Some(t) = opened.tls {
            r.phase(Phase::Tls, t);
        }
    }
    if shared.http2.is_none() {
        return Ok(Session::Http1(w));
    }
    // Over TLS, the server must have agreed on h2; in clear, sonde
    // speaks it by prior knowledge.
    if opened.tls.is_some() && !opened.h2 {
        return Err(Failure::Protocol);
    }
    Ok(Session::Http2(http2::handshake(w).await?))
}

/// One request on `wire`, opening it first if needed (the request began
/// at `began`); its phases are recorded. Returns the answer and when its
/// last byte came.
async fn request(
    shared: &Shared,
    wire: &mut Option<Session>,
    buf: &mut Vec<u8>,
    rec: &Rc<RefCell<Recorder>>,
    began: Instant,
) -> Result<(conn::Answer, Instant), Failure> {
    let (mut session, ready) = match wire.take() {
        Some(s) => (s, began),
        None => (open(shared, rec).await?, Instant::now()),
    };
    let answer = match (&mut session, &shared.http2) {
        (Session::Http1(w), _) => {
            conn::exchange(w, &shared.request, shared.head_request, buf).await?
        }
        (Session::Http2(send), Some(template)) => http2::exchange(send, template).await?,
        (Session::Http2(_), None) => return Err(Failure::Protocol),
    };
    let end = answer.done;
    {
        let mut r = rec.borrow_mut();
        r.phase(Phase::Waiting, answer.waiting);
        r.phase(Phase::Transfer, answer.transfer);
        r.phase(Phase::Processing, end - ready);
    }
    *wire = Some(session);
    Ok((answer, end))
}
