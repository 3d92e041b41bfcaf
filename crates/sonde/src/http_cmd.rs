//! `sonde http URL`: a web service benchmark. Closed loop (`-c`
//! connections, `-n` requests or `-t` time), as ab and wrk; open loop at
//! `--rate` with latency from each request's intended send time (as
//! wrk2); `--ramp` steps connections or rates and names the knee.

use crate::failure::Failure;
use crate::output::Output;
use crate::run_args::{duration, family, JsonFormat};
use anyhow::anyhow;
use clap::Args;
use sonde_model::{HttpRamp, HttpSpec, HttpVersion, RampSteps, TestSpec};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct HttpArgs {
    /// The URL: http:// or https://, host (IPv6 in brackets), port, path.
    pub url: String,
    /// Connections kept at once (closed loop: requests in flight).
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: u32,
    /// Stop after this many requests (ab's -n).
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// How long to send (when no -n).
    #[arg(short = 't', long, default_value = "10s", value_parser = duration)]
    pub time: Duration,
    /// Open loop: requests per second, on schedule whatever the answers
    /// do; latency from each request's intended send time.
    #[arg(long, value_name = "REQ/S")]
    pub rate: Option<f64>,
    /// Sender threads, each its own event loop (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: u16,
    /// One connection per request (ab without -k).
    #[arg(long)]
    pub no_keepalive: bool,
    /// HTTP/2 (ALPN over TLS; prior knowledge over plain TCP).
    #[arg(long)]
    pub http2: bool,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// The request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// A request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Send this file's bytes as each request's body.
    #[arg(long, value_name = "FILE")]
    pub body: Option<PathBuf>,
    /// A request not answered within this is an error.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub timeout: Duration,
    /// Find the knee: steps of connections (`c:1,2,4,8,16`) or of rates
    /// (`rate:500,1000,1500,2000`), each for --step-time.
    #[arg(long, value_name = "c:N,… | rate:R,…")]
    pub ramp: Option<String>,
    /// How long each ramp step runs.
    #[arg(long, default_value = "5s", value_parser = duration, requires = "ramp")]
    pub step_time: Duration,
    /// The knee is the first step whose median latency rises more than
    /// this share (%) over the first step's, or that has errors.
    #[arg(long, default_value_t = 10.0, requires = "ramp")]
    pub knee_rise: f64,
    /// Draw the ramp (throughput and latency by step, the knee marked)
    /// as SVG into this file.
    #[arg(long, value_name = "FILE.svg", requires = "ramp")]
    pub chart: Option<PathBuf>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// A title for the result.
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Print the result as one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

/// `c:1,2,4` or `rate:500,1000`.
fn ramp_steps(text: &str) -> Result<RampSteps, String> {
    let (kind, list) = text
        .split_once(':')
        .ok_or_else(|| format!("--ramp '{text}': write c:1,2,4,8 or rate:500,1000,1500"))?;
    match kind {
        "c" | "connections" => list
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("--ramp: '{v}' is not a count of connections"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(RampSteps::Connections),
        "rate" | "r" => list
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("--ramp: '{v}' is not a rate"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(RampSteps::Rates),
        k => Err(format!("--ramp '{k}:…': c (connections) or rate")),
    }
}

impl HttpArgs {
    pub fn to_spec(&self) -> Result<HttpSpec, String> {
        let host = HttpSpec::host_of(&self.url).map_err(|e| e.reason)?;
        let ramp = match &self.ramp {
            Some(r) => Some(HttpRamp {
                steps: ramp_steps(r)?,
                step_time: self.step_time,
                rise_pct: self.knee_rise,
            }),
            None => None,
        };
        Ok(HttpSpec {
            host,
            url: self.url.clone(),
            method: self.method.clone(),
            headers: self.headers.clone(),
            body_file: self.body.clone(),
            connections: self.connections,
            requests: self.requests,
            time: self.time,
            rate: self.rate,
            threads: self.threads,
            keep_alive: !self.no_keepalive,
            version: if self.http2 {
                HttpVersion::Http2
            } else {
                HttpVersion::Http1
            },
            insecure: self.insecure,
            family: family(self.ipv4, self.ipv6),
            timeout: self.timeout,
            ramp,
            title: self.title.clone(),
        })
    }
}

pub fn run(args: HttpArgs) -> Result<(), Failure> {
    let output = Output {
        json: args.json.then_some(JsonFormat::Sonde),
        live: !args.json,
        flags: true,
        archive: args.archive.kept(),
        chart: args.chart.clone(),
        ..Output::default()
    };
    let spec = match args.to_spec() {
        Ok(s) => TestSpec::Http(s),
        Err(e) => return Err(output.fail(None, "invalid", Failure::Usage(anyhow!(e)))),
    };
    output.run(&spec)
}
