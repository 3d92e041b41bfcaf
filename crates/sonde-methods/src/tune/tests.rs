//! The advice against hand-worked paths, and the methods over a fake path
//! whose TCP is capped by the smaller of its bottleneck and window / RTT.

use super::advice::{advise, advised_bytes, Measured};
use super::lab::run_tune_lab;
use super::*;
use sonde_model::method::{TuneLabSpec, TuneLimit};
use sonde_model::{Figures, HostEnv, PeerKind, RttStats, Summary, TcpBuffers, TestEnv};
use sonde_run::RunError;
use std::sync::Mutex;

fn buffers(rmem: u64, wmem: u64) -> TcpBuffers {
    TcpBuffers {
        rmem_max: 4 << 20,
        wmem_max: 4 << 20,
        tcp_rmem: [4096, 65536, rmem],
        tcp_wmem: [4096, 16384, wmem],
        window_scaling: true,
        available_congestion: vec!["reno".into(), "cubic".into(), "bbr".into()],
    }
}

/// 003's lab path: 20 ms, 200 Mbit/s (BDP 500 000 bytes).
fn measured(baseline: f64, client: TcpBuffers, server: TcpBuffers) -> Measured {
    Measured {
        rtt_ms: 20.0,
        bottleneck_bps: 200e6,
        baseline_bps: baseline,
        client: Some(client),
        server: Some(server),
    }
}

#[test]
fn a_small_receive_buffer_is_named_as_the_limit() {
    // 64 KiB at 20 ms: 65536 × 8 / 0.02 = 26.2 Mbit/s at most.
    let a = advise(&measured(
        20e6,
        buffers(1 << 20, 1 << 20),
        buffers(65536, 65536),
    ));
    assert_eq!(a.bdp_bytes, 500_000);
    assert_eq!(a.limit, TuneLimit::ReceiverBuffer, "{}", a.evidence);
    assert!(
        a.evidence.contains(
            "net.ipv4.tcp_rmem max of 64 KiB on the server (receiver) allows at most 26.2 Mbit/s"
        ),
        "{}",
        a.evidence
    );
    // Twice the BDP is 1 MB: 4 MiB, the floor.
    assert_eq!(a.advised_bytes, 4 << 20);
    assert_eq!(
        a.sysctl,
        [
            "net.core.rmem_max = 4194304",
            "net.core.wmem_max = 4194304",
            "net.ipv4.tcp_rmem = 4096 65536 4194304",
            "net.ipv4.tcp_wmem = 4096 16384 4194304",
        ]
    );
    // The client sends more than the server can receive.
    assert!(a
        .warnings
        .iter()
        .any(|w| w.contains("larger than the server's receive buffer")));
}

#[test]
fn the_sender_path_and_neither_are_told_apart() {
    let a = advise(&measured(
        20e6,
        buffers(8 << 20, 65536),
        buffers(8 << 20, 8 << 20),
    ));
    assert_eq!(a.limit, TuneLimit::SenderBuffer, "{}", a.evidence);
    let a = advise(&measured(
        190e6,
        buffers(8 << 20, 8 << 20),
        buffers(8 << 20, 8 << 20),
    ));
    assert_eq!(a.limit, TuneLimit::Path);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    let a = advise(&measured(
        50e6,
        buffers(8 << 20, 8 << 20),
        buffers(8 << 20, 8 << 20),
    ));
    assert_eq!(a.limit, TuneLimit::Other);
    // 003's asymmetric buffers: TX 8 MB over RX 6 MB on one host.
    let a = advise(&measured(
        190e6,
        buffers(6 << 20, 8 << 20),
        buffers(8 << 20, 8 << 20),
    ));
    assert!(
        a.warnings[0].starts_with("this host: send buffers (tcp_wmem max 8 MiB"),
        "{:?}",
        a.warnings
    );
    // 1 Gbit/s at 40 ms: BDP 5 MB, twice is 10 MB → 10 MiB.
    assert_eq!(advised_bytes(5_000_000), 10 << 20);
}

/// A path: TCP gets min(bottleneck, window / RTT), the window being -w
/// or else the smaller of the sender's tcp_wmem and receiver's tcp_rmem.
struct Path {
    rtt_ms: Mutex<f64>,
    bottleneck_bps: f64,
    client: TcpBuffers,
    server: TcpBuffers,
}

impl Runner for Path {
    fn run(&self, spec: &TestSpec, _: &Stop, _: &Events) -> Result<TestResult, RunError> {
        let host = |b: &TcpBuffers| HostEnv {
            tcp_buffers: Some(b.clone()),
            ..HostEnv::default()
        };
        let env = TestEnv::between(host(&self.client), host(&self.server), PeerKind::Sonde);
        let mut r = TestResult::new(spec.clone(), env, Timestamp::now());
        let rtt = *self.rtt_ms.lock().unwrap();
        let bps = match spec {
            TestSpec::Ping(_) => {
                r.summary = Summary {
                    round_trip: Some(Figures {
                        rtt_ms: RttStats::from_ms(&[rtt, rtt + 0.1, rtt - 0.1]),
                        ..Figures::default()
                    }),
                    ..Summary::default()
                };
                return Ok(r);
            }
            TestSpec::Udp(_) | TestSpec::Http(_) | TestSpec::Trace(_) => self.bottleneck_bps,
            TestSpec::Tcp(t) => {
                let w = t
                    .window
                    .map_or(self.client.tcp_wmem[2].min(self.server.tcp_rmem[2]), |w| {
                        w.bytes()
                    });
                (w as f64 * 8.0 / (rtt / 1000.0)).min(self.bottleneck_bps)
            }
        };
        r.summary = Summary {
            forward: Some(Figures {
                direction: Some(Direction::Forward),
                throughput_bps: Some(bps as u64),
                ..Figures::default()
            }),
            ..Summary::default()
        };
        Ok(r)
    }
}

fn tcp() -> TcpSpec {
    TcpSpec {
        host: "2001:db8::2".into(),
        ..TcpSpec::default()
    }
}

#[test]
fn run_tune_measures_advises_and_verifies_the_gain() {
    let path = Path {
        rtt_ms: Mutex::new(20.0),
        bottleneck_bps: 200e6,
        client: buffers(65536, 65536),
        server: buffers(65536, 65536),
    };
    let spec = TuneSpec {
        test: tcp(),
        bottleneck_time: Duration::from_secs(2),
        pings: 5,
        window: None,
        gap: Duration::ZERO,
    };
    let (r, heard) =
        crate::scripted::method_events(|events| run_tune(&path, &spec, &Stop::new(), events));
    let r = r.unwrap();
    let stages: Vec<String> = heard
        .into_iter()
        .map(|m| match m {
            sonde_model::MethodEvent::TuneStage(s) => s,
            other => panic!("not a stage: {other:?}"),
        })
        .collect();
    let t = r.tune.unwrap();
    assert_eq!(stages.len(), 4, "{stages:?}");
    assert_eq!(r.trials.len(), 4);
    assert_eq!(t.rtt_ms, 20.0);
    assert_eq!(t.limit, TuneLimit::ReceiverBuffer);
    // 64 KiB / 20 ms = 26.2 Mbit/s; with 4 MiB the path's 200.
    assert!((t.baseline_bps - 26.2144e6).abs() < 1.0);
    assert_eq!(t.verified_bps, Some(200e6));
    assert!((t.gain.unwrap() - 200e6 / 26.2144e6).abs() < 1e-6);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn the_lab_matrix_sets_each_rtt_and_runs_every_cell() {
    let path = Path {
        rtt_ms: Mutex::new(1.0),
        bottleneck_bps: 1e9,
        client: buffers(65536, 65536),
        server: buffers(65536, 65536),
    };
    let spec = TuneLabSpec {
        test: tcp(),
        lab: "baltic".into(),
        link: 1,
        rtts: vec![Duration::from_millis(1), Duration::from_millis(40)],
        windows: vec![ByteSize::from_bytes(65536), ByteSize::from_bytes(8 << 20)],
        congestion: vec!["reno".into(), "cubic".into()],
        gap: Duration::ZERO,
    };
    let mut set = Vec::new();
    let (r, heard) = crate::scripted::method_events(|events| {
        run_tune_lab(
            &path,
            &spec,
            &mut |rtt| {
                set.push(rtt);
                *path.rtt_ms.lock().unwrap() = rtt.as_secs_f64() * 1000.0;
                Ok(())
            },
            &Stop::new(),
            events,
        )
    });
    let r = r.unwrap();
    assert_eq!(set, spec.rtts);
    assert_eq!(r.tune_steps.len(), 8);
    let cells: Vec<_> = heard
        .into_iter()
        .map(|m| match m {
            sonde_model::MethodEvent::TuneLabStep(s) => s,
            other => panic!("not a cell: {other:?}"),
        })
        .collect();
    assert_eq!(cells, r.tune_steps);
    let at = |rtt: f64, w: u64| {
        r.tune_steps
            .iter()
            .find(|s| s.rtt_ms == rtt && s.window_bytes == w && s.congestion == "reno")
            .and_then(|s| s.goodput_bps)
            .unwrap()
    };
    // 64 KiB: 524 Mbit/s at 1 ms, 13 at 40 ms; 8 MiB: the line both times.
    assert_eq!(at(1.0, 65536), 524_288_000);
    assert_eq!(at(40.0, 65536), 13_107_200);
    assert_eq!(at(40.0, 8 << 20), 1_000_000_000);
    // A failed RTT change ends the matrix, named.
    let e = run_tune_lab(
        &path,
        &spec,
        &mut |_| Err("no emulator".into()),
        &Stop::new(),
        &Events::new(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no emulator"), "{e}");
}
