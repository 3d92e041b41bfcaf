//! The accept loop, for plain HTTP and for TLS alike: each connection
//! takes a place from [`Connections`] (or is closed at once), gets its
//! TLS handshake within a bound, its request headers within
//! `http.header_timeout` (hyper's own timer, which also bounds how long
//! a kept-alive connection waits for its next request), and is closed
//! once no byte has gone either way for `http.idle_timeout`.

use crate::connections::Connections;
use axum::Router;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Longest a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The timeouts every connection keeps to.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub header: Duration,
    pub idle: Duration,
}

/// When a connection last moved a byte, in milliseconds since `origin`.
#[derive(Debug)]
struct Activity {
    origin: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            origin: Instant::now(),
            last_ms: AtomicU64::new(0),
        })
    }

    fn touch(&self) {
        let ms = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.origin + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// A stream that notes when a byte last went either way.
struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Counts of connections the loop ended itself.
#[derive(Debug, Default)]
pub struct Closed {
    pub idle: AtomicU64,
    pub handshake: AtomicU64,
}

/// Serves `app` on `listener` (over TLS when `tls` is given) until `stop`
/// completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Router,
    connections: Arc<Connections>,
    timeouts: Timeouts,
    closed: Arc<Closed>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors, most likely: wait for some to
                    // be given back rather than spin.
                    tracing::warn!("http: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let slot = match connections.admit(peer.ip()) {
            Ok(s) => s,
            Err(over) => {
                tracing::debug!(%peer, over = over.name(), "http: a connection over the cap closed");
                drop(tcp);
                continue;
            }
        };
        let app = app
            .clone()
            .layer(axum::Extension(axum::extract::ConnectInfo(peer)));
        let tls = tls.clone();
        let closed = Arc::clone(&closed);
        tokio::spawn(async move {
            let _slot = slot;
            let _ = tcp.set_nodelay(true);
            match tls {
                None => connection(tcp, peer, app, timeouts, &closed).await,
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(s)) => connection(s, peer, app, timeouts, &closed).await,
                        Ok(Err(e)) => tracing::debug!(%peer, "https: handshake: {e}"),
                        Err(_) => {
                            closed.handshake.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(%peer, "https: handshake timed out");
                        }
                    }
                }
            }
        });
    }
}

/// Serves one connection until it ends or has been idle too long.
async fn connection<S>(stream: S, peer: SocketAddr, app: Router, t: Timeouts, closed: &Closed)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Activity::new();
    activity.touch();
    let io = hyper_util::rt::TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let service = hyper_util::service::TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(t.header)
        .keep_alive(true);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    loop {
        let deadline = activity.last() + t.idle;
        tokio::select! {
            served = &mut conn => {
                if let Err(e) = served {
                    tracing::debug!(%peer, "http: {e}");
                }
                return;
            }
            () = tokio::time::sleep_until(deadline.into()) => {
                if activity.last() + t.idle <= Instant::now() {
                    closed.idle.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%peer, "http: an idle connection closed");
                    return;
                }
            }
        }
    }
}
