//! An in-process HTTP server whose every answer's timing is set by the
//! request, for checking what `sonde http` measures against known truths.
//!
//! `GET /any/path?ttfb_ms=20&transfer_ms=10&size=1000` is answered so:
//! 1. the request is read (a request body, if any, is read in full);
//! 2. it is worked on for `work_ms` (the query's, else the server's `work`)
//!    by one of the server's `workers` when it has a limit, after waiting
//!    its turn (first come, first served);
//! 3. it waits `ttfb_ms`, and out any stall (`HttpServer::stall`);
//! 4. the status line and headers are sent and flushed (`Content-Length:
//!    size`; `status=503` sets the status);
//! 5. it waits `transfer_ms` (and out any stall), then sends `size` bytes.
//!
//! The workers are a queue worked out in time, not threads: a request that
//! arrives at `a` takes the worker free soonest, at `f`, and is done at
//! `max(a, f) + work`. A late wake-up on a busy machine then delays that
//! one answer but never the next ones' turns, so 8 workers of 5 ms serve
//! 1,600 requests a second however noisy the machine.
//!
//! With no worker limit, no work and no stall, the headers leave `ttfb_ms`
//! after the request was read and the body `transfer_ms` after them.
//! Keep-alive and `Connection: close` are hyper's (HTTP/1.1); the TLS port
//! speaks HTTP/1.1 and HTTP/2 (ALPN `h2`, `http/1.1`) with a self-signed
//! certificate for `localhost`, `::1` and `127.0.0.1`.
//!
//! Delays are exact to within a millisecond (a few hundred µs late in a
//! debug build on a busy 2-core machine, never early): tokio's timer ticks
//! in whole milliseconds and can fire up to one late, so it only takes a
//! wait to within 2 ms of its deadline, and a blocking-pool thread's
//! `std::thread::sleep` (tens of µs late on Linux) does the rest. What no
//! fixture can help is a machine too busy to wake its threads on time:
//! tests that check timing should take the quickest of a few tries
//! (tests/http/http_fixtures.rs does).

use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The server; it stops when dropped.
pub struct HttpServer {
    addr: SocketAddr,
    tls_addr: SocketAddr,
    cert_pem: String,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Settings for the whole server; `HttpServer::builder()`.
#[derive(Debug, Clone, Default)]
pub struct HttpServerBuilder {
    workers: Option<usize>,
    work: Duration,
}

struct State {
    /// When each worker is next free; empty: no limit.
    workers: Mutex<Vec<Instant>>,
    work: Duration,
    stall_until: Mutex<Option<Instant>>,
    served: AtomicU64,
    connections: AtomicU64,
    /// Requests that came over HTTP/2.
    http2: AtomicU64,
    /// The bytes of request bodies received.
    body_bytes: AtomicU64,
}

/// What one request asked for in its query.
#[derive(Debug, Default, Clone, Copy)]
struct Plan {
    ttfb: Duration,
    transfer: Duration,
    work: Option<Duration>,
    size: usize,
    status: Option<u16>,
}

impl HttpServerBuilder {
    /// At most `n` requests worked on at once across all connections; the
    /// others queue (the knee test: 8 workers).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }

    /// Each request's work, done by a worker (the knee test: 5 ms); a
    /// request's `work_ms` overrides it.
    pub fn work(mut self, work: Duration) -> Self {
        self.work = work;
        self
    }

    /// Binds a free port on `::1` and `127.0.0.1` (plain) and one on `::1`
    /// (TLS), and serves on its own thread.
    pub fn start(self) -> HttpServer {
        let (plain, plain_v4) = bind_both_families();
        let tls = TcpListener::bind("[::1]:0").expect("bind [::1]:0 for TLS");
        let (addr, tls_addr) = (plain.local_addr().unwrap(), tls.local_addr().unwrap());
        for l in [&plain, &plain_v4, &tls] {
            l.set_nonblocking(true).unwrap();
        }
        let (acceptor, cert_pem) = tls_acceptor();
        let state = Arc::new(State {
            workers: Mutex::new(vec![Instant::now(); self.workers.unwrap_or(0)]),
            work: self.work,
            stall_until: Mutex::new(None),
            served: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            http2: AtomicU64::new(0),
            body_bytes: AtomicU64::new(0),
        });
        let (stop, stopped) = oneshot::channel();
        let (ready, serving) = std::sync::mpsc::channel();
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("http-fixture".into())
            .spawn(move || serve([plain, plain_v4], tls, acceptor, shared, ready, stopped))
            .expect("spawn the fixture's thread");
        serving
            .recv_timeout(Duration::from_secs(20))
            .expect("the fixture's server started");
        HttpServer {
            addr,
            tls_addr,
            cert_pem,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl HttpServer {
    /// No worker limit, no work.
    pub fn start() -> Self {
        Self::builder().start()
    }

    pub fn builder() -> HttpServerBuilder {
        HttpServerBuilder::default()
    }

    /// The plain HTTP address, on ::1; the same port answers on 127.0.0.1
    /// (`url_v4`), so `localhost:PORT` reaches it by either family.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The TLS (HTTP/1.1 and h2) address, on ::1.
    pub fn tls_addr(&self) -> SocketAddr {
        self.tls_addr
    }

    /// `http://[::1]:PORT` + `path_and_query` (which starts with `/`).
    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.addr)
    }

    /// `http://127.0.0.1:PORT` + `path_and_query`.
    pub fn url_v4(&self, path_and_query: &str) -> String {
        format!("http://127.0.0.1:{}{path_and_query}", self.addr.port())
    }

    /// `https://[::1]:PORT` + `path_and_query`.
    pub fn https_url(&self, path_and_query: &str) -> String {
        format!("https://{}{path_and_query}", self.tls_addr)
    }

    /// The self-signed certificate of the TLS port, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// From now until `d` has passed, no response (headers or body) is sent.
    pub fn stall(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut stall = self.state.stall_until.lock().unwrap();
        *stall = Some(stall.map_or(until, |u| u.max(until)));
    }

    /// Requests answered in full (the body handed over) so far.
    pub fn served(&self) -> u64 {
        self.state.served.load(Ordering::Relaxed)
    }

    /// Requests received over HTTP/2 so far.
    pub fn http2_requests(&self) -> u64 {
        self.state.http2.load(Ordering::Relaxed)
    }

    /// Bytes of request bodies received so far.
    pub fn body_bytes(&self) -> u64 {
        self.state.body_bytes.load(Ordering::Relaxed)
    }

    /// Connections accepted so far (plain and TLS).
    pub fn connections(&self) -> u64 {
        self.state.connections.load(Ordering::Relaxed)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The fixture's thread: one current-thread runtime (the server does little
/// work of its own; waits end on the blocking pool).
fn serve(
    plain: [TcpListener; 2],
    tls: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    state: Arc<State>,
    ready: std::sync::mpsc::Sender<()>,
    stopped: oneshot::Receiver<()>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_keep_alive(Duration::from_secs(3600))
        .build()
        .expect("the fixture's runtime");
    rt.block_on(async move {
        warm_blocking_pool().await;
        for listener in plain {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            tokio::spawn(accept(listener, None, Arc::clone(&state)));
        }
        let tls = tokio::net::TcpListener::from_std(tls).unwrap();
        tokio::spawn(accept(tls, Some(acceptor), state));
        let _ = ready.send(());
        let _ = stopped.await;
    });
    // Drops every connection; a wait in progress on the blocking pool ends
    // within 2 ms.
    rt.shutdown_timeout(Duration::from_secs(1));
}

async fn accept(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    state: Arc<State>,
) {
    // Ends when the runtime shuts down.
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        state.connections.fetch_add(1, Ordering::Relaxed);
        let state = Arc::clone(&state);
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| answer(Arc::clone(&state), req));
            let builder = auto::Builder::new(TokioExecutor::new());
            match tls {
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
                Some(tls) => {
                    if let Ok(stream) = tls.accept(stream).await {
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                }
            }
        });
    }
}

async fn answer(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let plan = Plan::parse(req.uri().query().unwrap_or(""));
    if req.version() == hyper::Version::HTTP_2 {
        state.http2.fetch_add(1, Ordering::Relaxed);
    }
    if let Ok(body) = req.into_body().collect().await {
        let n = body.to_bytes().len() as u64;
        state.body_bytes.fetch_add(n, Ordering::Relaxed);
    }
    let work_end = state.work_done_at(Instant::now(), plan.work.unwrap_or(state.work));
    sleep_until(work_end).await;
    sleep_until(work_end + plan.ttfb).await;
    state.wait_out_stall().await;
    let headers_at = Instant::now();
    let status = plan
        .status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let body = if plan.size == 0 && plan.transfer.is_zero() {
        state.served.fetch_add(1, Ordering::Relaxed);
        Empty::new().boxed_unsync()
    } else {
        body_after(state, headers_at + plan.transfer, plan.size)
    };
    let response = Response::builder()
        .status(status)
        .header("content-length", plan.size)
        .header("content-type", "application/octet-stream")
        .body(body)
        .unwrap();
    Ok(response)
}

/// A body of `size` bytes handed over at `at` (or when a stall ends).
fn body_after(state: Arc<State>, at: Instant, size: usize) -> Body {
    // Made before the wait, so that the bytes leave at `at`.
    let bytes = Bytes::from(vec![b's'; size]);
    let data = futures_util::stream::once(async move {
        sleep_until(at).await;
        state.wait_out_stall().await;
        state.served.fetch_add(1, Ordering::Relaxed);
        Ok(Frame::data(bytes))
    });
    StreamBody::new(data).boxed_unsync()
}

impl State {
    /// When a request that arrived at `arrived` is done with `work`: at
    /// once with no worker limit, else on the worker free soonest.
    fn work_done_at(&self, arrived: Instant, work: Duration) -> Instant {
        let mut workers = self.workers.lock().unwrap();
        let Some(soonest) = workers.iter_mut().min() else {
            return arrived + work;
        };
        *soonest = arrived.max(*soonest) + work;
        *soonest
    }

    async fn wait_out_stall(&self) {
        // A stall can be lengthened while waited out; a few rounds suffice.
        for _ in 0..100 {
            let until = *self.stall_until.lock().unwrap();
            match until {
                Some(until) if until > Instant::now() => sleep_until(until).await,
                _ => return,
            }
        }
    }
}

impl Plan {
    /// Unknown keys and bad numbers are ignored: the fixture answers
    /// anything, and a test sees the timing it did not ask for.
    fn parse(query: &str) -> Self {
        let mut plan = Plan::default();
        for (key, value) in query.split('&').filter_map(|kv| kv.split_once('=')) {
            let ms = || {
                value
                    .parse::<f64>()
                    .ok()
                    .map(|m| Duration::from_secs_f64(m / 1e3))
            };
            match key {
                "ttfb_ms" => plan.ttfb = ms().unwrap_or_default(),
                "transfer_ms" => plan.transfer = ms().unwrap_or_default(),
                "work_ms" => plan.work = ms(),
                "size" => plan.size = value.parse().unwrap_or(0),
                "status" => plan.status = value.parse().ok(),
                _ => {}
            }
        }
        plan
    }
}

/// Listeners on `::1` and `127.0.0.1` with the same free port.
fn bind_both_families() -> (TcpListener, TcpListener) {
    for _ in 0..20 {
        let v6 = TcpListener::bind("[::1]:0").expect("bind [::1]:0");
        let port = v6.local_addr().unwrap().port();
        if let Ok(v4) = TcpListener::bind(("127.0.0.1", port)) {
            return (v6, v4);
        }
    }
    panic!("no port free on both ::1 and 127.0.0.1 in 20 tries");
}

/// Starts the blocking pool's threads before the first request: on a busy
/// machine a new thread can wait a whole scheduler slice (milliseconds)
/// before it first runs, and a wait's last step runs on that pool.
async fn warm_blocking_pool() {
    let waits: Vec<_> = (0..WARM_THREADS)
        .map(|_| tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(5))))
        .collect();
    for wait in waits {
        let _ = wait.await;
    }
}

/// More than the requests any fixture test has waiting at once.
const WARM_THREADS: usize = 32;

/// Waits until `deadline`, late by tens of microseconds rather than tokio's
/// up to one millisecond.
async fn sleep_until(deadline: Instant) {
    if let Some(coarse) = deadline.checked_sub(Duration::from_millis(2)) {
        if coarse > Instant::now() {
            tokio::time::sleep_until(coarse.into()).await;
        }
    }
    if deadline > Instant::now() {
        let _ = tokio::task::spawn_blocking(move || {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        })
        .await;
    }
}

/// A TLS acceptor with a fresh self-signed certificate, and that
/// certificate in PEM for clients that want to verify it.
fn tls_acceptor() -> (tokio_rustls::TlsAcceptor, String) {
    let names = ["localhost", "::1", "127.0.0.1"].map(String::from).to_vec();
    let key = rcgen::generate_simple_self_signed(names).expect("a self-signed certificate");
    let cert_der = key.cert.der().clone();
    let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into());
    // The provider named, not the process default: several may be compiled in.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert_der], key_der)
        .expect("the fixture's certificate");
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    (acceptor, key.cert.pem())
}
