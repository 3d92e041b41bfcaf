//! What a request costs on hyper's HTTP/1.1 client: the measurement
//! behind sonde http's choice of a hand loop over `httparse`
//! (docs/http.md, "How it is built"). CONNECTIONS keep-alive connections
//! on one current-thread runtime send GET after GET until REQUESTS have
//! been answered, as `sonde http URL -c CONNECTIONS --threads 1 -n
//! REQUESTS` does. Run both under `valgrind --tool=callgrind` at two
//! counts and compare the difference in instructions per request.
//!
//!     cargo run --release -p sonde-engine --example hyper_client_loop -- \
//!         'http://[::1]:18080/1k' 8 20000
//!
//! Loopback or a lab namespace only: it sends as fast as it can.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use std::cell::Cell;
use std::error::Error;
use std::rc::Rc;

type Failure = Box<dyn Error>;

async fn connection(
    url: hyper::Uri,
    addr: (String, u16),
    left: Rc<Cell<u64>>,
) -> Result<(), Failure> {
    let tcp = tokio::net::TcpStream::connect((addr.0.as_str(), addr.1)).await?;
    tcp.set_nodelay(true)?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::task::spawn_local(conn);
    let authority = url.authority().map(|a| a.to_string()).unwrap_or_default();
    while left.get() > 0 {
        left.set(left.get() - 1);
        let request = hyper::Request::get(url.clone())
            .header(hyper::header::HOST, authority.as_str())
            .body(Empty::<Bytes>::new())?;
        let answer = send.send_request(request).await?;
        answer.into_body().collect().await?;
    }
    Ok(())
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "give URL CONNECTIONS REQUESTS";
    let url: hyper::Uri = args.get(1).ok_or(usage)?.parse()?;
    let connections: usize = args.get(2).ok_or(usage)?.parse()?;
    let requests: u64 = args.get(3).ok_or(usage)?.parse()?;
    let host = url
        .host()
        .ok_or("the URL has no host")?
        .trim_matches(['[', ']'])
        .to_string();
    let port = url.port_u16().unwrap_or(80);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let left = Rc::new(Cell::new(requests));
    let started = std::time::Instant::now();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let tasks: Vec<_> = (0..connections)
            .map(|_| {
                let work = connection(url.clone(), (host.clone(), port), Rc::clone(&left));
                tokio::task::spawn_local(work)
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        Ok::<_, Failure>(())
    })?;
    let took = started.elapsed().as_secs_f64();
    println!(
        "{requests} requests in {took:.2} s: {:.0} req/s",
        requests as f64 / took
    );
    Ok(())
}
