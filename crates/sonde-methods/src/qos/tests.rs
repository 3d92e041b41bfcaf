//! The QoS methods over a scripted DiffServ path: a shared link of a
//! capacity with strict priority for EF, an EF policer on this host's
//! access, and an agent whose access resets every DSCP to 0 (the 6NET
//! testbed, seed 004 §4). Figures are computed, not measured; the lab
//! test runs the same methods over namespaces.

use super::*;
use sonde_model::method::{QosCheckKind, QosCheckSpec, QosRamp, QosScenarioSpec, QosVerdict};
use sonde_model::udp_report::DscpCounts;
use sonde_model::{
    Direction, Figures, HostEnv, Interval, PeerKind, Profile, Summary, TestEnv, TestResult,
    Timestamp,
};
use std::sync::Mutex;

const EF: u8 = 46;

struct DiffServ {
    link_bps: f64,
    /// EF from this host is policed to this (bits/s of IP packets).
    policer_bps: f64,
    /// This host's access shapes EF to the policer's rate (no loss).
    shaper: bool,
    /// Best-effort load offered now (the background's).
    load: Mutex<f64>,
    asked: Mutex<Vec<(bool, TestSpec)>>,
}

struct Host<'a> {
    path: &'a DiffServ,
    agent: bool,
}

impl DiffServ {
    fn new(shaper: bool) -> Self {
        Self {
            link_bps: 155e6,
            policer_bps: 7.75e6,
            shaper,
            load: Mutex::new(0.0),
            asked: Mutex::new(Vec::new()),
        }
    }
}

fn udp_figures(sent: u64, lost: u64, payload: f64, secs: f64, arrived: u8, jitter: f64) -> Figures {
    let received = sent - lost;
    let mut counts = DscpCounts::default();
    counts.add(arrived, received);
    Figures {
        direction: Some(Direction::Forward),
        sent_packets: Some(sent),
        received_packets: Some(received),
        lost_packets: Some(lost),
        loss_pct: Some(lost as f64 * 100.0 / sent.max(1) as f64),
        throughput_bps: Some((received as f64 * payload * 8.0 / secs) as u64),
        sender_throughput_bps: Some((sent as f64 * payload * 8.0 / secs) as u64),
        jitter_ms: Some(jitter),
        dscp_received: Some(counts),
        ..Figures::default()
    }
}

impl Runner for Host<'_> {
    fn run(&self, spec: &TestSpec, stop: &Stop, _: &Events) -> Result<TestResult, RunError> {
        spec.validate()?;
        if stop.is_stopped() {
            return Err(RunError::Interrupted);
        }
        self.path
            .asked
            .lock()
            .unwrap()
            .push((self.agent, spec.clone()));
        let background = spec.title() == Some("background");
        let mut result = TestResult::new(
            spec.clone(),
            TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
            Timestamp::now(),
        );
        let (rate, secs) = match spec {
            TestSpec::Udp(s) => (s.bitrate.bps() as f64, s.time.as_secs_f64()),
            TestSpec::Tcp(s) => (
                s.bitrate.map_or(f64::INFINITY, |r| r.bps() as f64) * f64::from(s.parallel),
                s.time.as_secs_f64(),
            ),
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {
                return Err(RunError::Unsupported("udp and tcp".into()))
            }
        };
        if background {
            *self.path.load.lock().unwrap() += rate;
            // Long enough for the foreground (10 ms lead) to see it.
            std::thread::sleep(std::time::Duration::from_millis(60));
        }
        let load = *self.path.load.lock().unwrap();
        let f = match spec {
            TestSpec::Udp(s) => {
                let payload = f64::from(s.payload_len());
                let ip = (payload + 48.0) / payload;
                let sent = (rate * secs / 8.0 / payload).round() as u64;
                let sent_dscp = s.dscp.map_or(0, |d| d.value());
                let arrived = if self.agent { 0 } else { sent_dscp };
                let premium = arrived == EF && !self.agent;
                let share = if premium {
                    let admitted = self.path.policer_bps / (rate * ip);
                    if self.path.shaper {
                        1.0
                    } else {
                        admitted.min(1.0)
                    }
                } else {
                    (self.path.link_bps / load.max(rate)).min(1.0)
                };
                let lost = (sent as f64 * (1.0 - share)).round() as u64;
                let jitter = if premium {
                    0.05
                } else if share < 1.0 {
                    2.0
                } else {
                    0.1
                };
                if let Profile::OnOff { on, off } = s.profile {
                    result.intervals = on_off_intervals(rate, on, off, secs, self.path.shaper);
                }
                udp_figures(sent, lost, payload, secs, arrived, jitter)
            }
            _ => {
                // TCP in EF: up to the policer; in best effort: its pace.
                let ef =
                    matches!(spec, TestSpec::Tcp(t) if t.dscp.is_some_and(|d| d.value() == EF));
                let cap = if ef {
                    self.path.policer_bps * 1448.0 / 1520.0
                } else {
                    rate
                };
                Figures {
                    direction: Some(Direction::Forward),
                    throughput_bps: Some(rate.min(cap) as u64),
                    ..Figures::default()
                }
            }
        };
        if background {
            *self.path.load.lock().unwrap() -= rate;
        }
        result.duration_s = secs;
        result.summary = Summary {
            forward: Some(f),
            ..Summary::default()
        };
        Ok(result)
    }
}

/// 1 s intervals of an on/off source: as sent, or (shaped) at the mean.
fn on_off_intervals(
    rate: f64,
    on: std::time::Duration,
    off: std::time::Duration,
    secs: f64,
    shaped: bool,
) -> Vec<Interval> {
    let period = (on + off).as_secs_f64();
    (0..secs as u64)
        .map(|i| {
            let t = i as f64 % period;
            let arrival = if shaped {
                rate * on.as_secs_f64() / period
            } else if t < on.as_secs_f64() {
                rate
            } else {
                0.0
            };
            Interval {
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                omitted: false,
                size_bytes: None,
                streams: Vec::new(),
                sums: vec![Figures {
                    direction: Some(Direction::Forward),
                    throughput_bps: Some(arrival as u64),
                    ..Figures::default()
                }],
                round_trip: None,
            }
        })
        .collect()
}

fn probe() -> UdpSpec {
    UdpSpec {
        host: "2001:db8::2".into(),
        length: 1400,
        ..UdpSpec::default()
    }
}

fn quick(mut spec: QosCheckSpec) -> QosCheckSpec {
    spec.gap = Duration::ZERO;
    spec
}

#[test]
fn the_checks_find_the_reset_the_policer_and_the_priority_of_the_6net_path() {
    let path = DiffServ::new(false);
    let (local, agent) = (
        Host {
            path: &path,
            agent: false,
        },
        Host {
            path: &path,
            agent: true,
        },
    );
    let senders = Senders {
        local: &local,
        agent: Some(("nl", &agent)),
    };
    let mut spec = quick(QosCheckSpec::new(probe()));
    spec.policer_rate = Some(Rate::from_bps(7_750_000));
    spec.background_rate = Some(Rate::from_bps(200_000_000));
    let (r, heard) = crate::scripted::method_events(|events| {
        run_qos_checks(&senders, &spec, &Stop::new(), events)
    });
    let r = r.unwrap();
    let seen: Vec<_> = heard
        .into_iter()
        .map(|m| match m {
            sonde_model::MethodEvent::QosCheck(c) => c,
            other => panic!("not a check: {other:?}"),
        })
        .collect();
    assert_eq!(seen, r.checks);
    let marking: Vec<_> = r
        .checks
        .iter()
        .filter(|c| c.check == QosCheckKind::Marking)
        .map(|c| (c.from.as_str(), c.class.value(), c.verdict))
        .collect();
    assert_eq!(
        marking,
        vec![
            ("this host", 0, QosVerdict::Kept),
            ("this host", 46, QosVerdict::Kept),
            ("this host", 34, QosVerdict::Kept),
            ("this host", 8, QosVerdict::Kept),
            ("nl", 0, QosVerdict::Kept),
            ("nl", 46, QosVerdict::Reset),
            ("nl", 34, QosVerdict::Reset),
            ("nl", 8, QosVerdict::Reset),
        ]
    );
    let of = |k| r.checks.iter().find(|c| c.check == k).unwrap();
    let policing = of(QosCheckKind::Policing);
    assert_eq!(
        policing.verdict,
        QosVerdict::Policed,
        "{}",
        policing.evidence
    );
    // 1.3 × 7.75 Mbit/s offered; the policer found within 1 % of 7.75.
    let found = policing.figures["policer_ip_bps"];
    assert!((found / 7.75e6 - 1.0).abs() < 0.01, "{found}");
    assert_eq!(of(QosCheckKind::Shaping).verdict, QosVerdict::Lost);
    let priority = of(QosCheckKind::Priority);
    assert_eq!(
        priority.verdict,
        QosVerdict::Protected,
        "{}",
        priority.evidence
    );
    assert!(priority.figures["background_loss_pct"] > 20.0);
    // The background came from the agent, every probe from this host but
    // the agent's marking probes.
    let asked = path.asked.lock().unwrap();
    let bg: Vec<_> = asked
        .iter()
        .filter(|(_, s)| s.title() == Some("background"))
        .collect();
    assert_eq!(bg.len(), 1);
    assert!(bg[0].0, "background from the agent");
    assert_eq!(asked.iter().filter(|(a, _)| *a).count(), 5);
    // Every trial is kept, and each check names the trials it read.
    assert_eq!(r.trials.len(), asked.len());
    assert_eq!(priority.trials.len(), 3);
}

#[test]
fn a_shaped_access_smooths_the_on_off_source_and_a_light_background_shows_nothing() {
    let path = DiffServ::new(true);
    let local = Host {
        path: &path,
        agent: false,
    };
    let senders = Senders {
        local: &local,
        agent: None,
    };
    let mut spec = quick(QosCheckSpec::new(probe()));
    spec.checks = vec![QosCheckKind::Shaping, QosCheckKind::Priority];
    spec.background_rate = Some(Rate::from_bps(50_000_000));
    let r = run_qos_checks(&senders, &spec, &Stop::new(), &Events::new()).unwrap();
    assert_eq!(
        r.checks[0].verdict,
        QosVerdict::Smoothed,
        "{}",
        r.checks[0].evidence
    );
    assert_eq!(r.checks[1].verdict, QosVerdict::NoCongestion);
    // Without a background rate the priority check cannot run.
    spec.background_rate = None;
    let e = run_qos_checks(&senders, &spec, &Stop::new(), &Events::new()).unwrap_err();
    assert!(e.to_string().contains("background_rate"), "{e}");
}

fn scenario(ramp: QosRamp) -> QosScenarioSpec {
    let udp = UdpSpec {
        dscp: Dscp::new(EF),
        length: 1400,
        time: Duration::from_secs(20),
        ..probe()
    };
    QosScenarioSpec {
        tcp_foreground: TcpSpec {
            host: udp.host.clone(),
            dscp: Dscp::new(EF),
            ..TcpSpec::default()
        },
        udp_foreground: udp,
        ramp,
        background_rate: Rate::from_bps(80_000_000),
        background_tcp_pct: 30.0,
        background_length: 1400,
        via: Some("nl".into()),
        lead: Duration::from_millis(10),
        gap: Duration::ZERO,
    }
}

#[test]
fn scenario_7_loses_nothing_under_the_policer_and_the_excess_above_it() {
    let path = DiffServ::new(false);
    let (local, agent) = (
        Host {
            path: &path,
            agent: false,
        },
        Host {
            path: &path,
            agent: true,
        },
    );
    let senders = Senders {
        local: &local,
        agent: Some(("nl", &agent)),
    };
    // 1.5 to 7.5 Mbit/s in 0.5 steps, as 004 Table 5's scenario 7.
    let rates: Vec<Rate> = (3..=15).map(|h| Rate::from_bps(h * 500_000)).collect();
    let spec = scenario(QosRamp::Rates(rates));
    let (r, heard) = crate::scripted::method_events(|events| {
        run_qos_scenario(&senders, &spec, &Stop::new(), events)
    });
    let r = r.unwrap();
    let rows: Vec<_> = heard
        .into_iter()
        .map(|m| match m {
            sonde_model::MethodEvent::QosStep(s) => s,
            other => panic!("not a scenario step: {other:?}"),
        })
        .collect();
    assert_eq!(rows.len(), 13);
    assert_eq!(rows, r.qos_steps);
    assert_eq!(r.qos_steps.len(), 13);
    // The policer counts IPv6 packets: 7.75 Mbit/s is 7.49 Mbit/s of
    // 1400-byte payloads, so 7.0 passes whole and 7.5 loses.
    for s in &r.qos_steps {
        let offered = s.fg_offered_bps.unwrap() as f64;
        let loss = s.fg_loss_pct.unwrap();
        if offered * 1448.0 / 1400.0 <= 7.75e6 {
            assert_eq!(loss, 0.0, "{offered}");
        } else {
            assert!(loss > 0.0, "{offered}");
        }
        // The background: 56 Mbit/s of UDP and 24 of TCP, from the agent.
        assert_eq!(s.bg_tcp_bps, Some(24_000_000));
        assert_eq!(s.trials.len(), 3);
    }
    assert_eq!(r.trials.len(), 13 * 3);
    let asked = path.asked.lock().unwrap();
    assert!(asked
        .iter()
        .filter(|(_, s)| s.title() == Some("background"))
        .all(|(agent, s)| *agent
            && (matches!(s, TestSpec::Udp(u) if u.time == Duration::from_millis(20_020))
                || matches!(s, TestSpec::Tcp(t) if t.time == Duration::from_millis(20_020)))));
}

#[test]
fn a_stream_ramp_levels_off_at_the_policer() {
    let path = DiffServ::new(false);
    let local = Host {
        path: &path,
        agent: false,
    };
    let senders = Senders {
        local: &local,
        agent: None,
    };
    let mut spec = scenario(QosRamp::Streams(vec![6, 20, 45]));
    spec.tcp_foreground.bitrate = Some(Rate::from_bps(256_000));
    let r = run_qos_scenario(&senders, &spec, &Stop::new(), &Events::new()).unwrap();
    let got: Vec<u64> = r
        .qos_steps
        .iter()
        .map(|s| s.fg_achieved_bps.unwrap())
        .collect();
    assert_eq!(got[0], 6 * 256_000);
    assert_eq!(got[1], 20 * 256_000);
    assert!(got[2] < 7_750_000 && got[2] > 7_000_000, "{got:?}");
    assert!(r.qos_steps.iter().all(|s| s.fg_loss_pct.is_none()));
    // A bad ramp is named.
    let bad = scenario(QosRamp::Streams(vec![0]));
    let e = run_qos_scenario(&senders, &bad, &Stop::new(), &Events::new()).unwrap_err();
    assert!(e.to_string().contains("fg_streams"), "{e}");
}

/// An LBE probe of 1400-byte payloads started `offset_s` after a 5 s
/// background: per second, `(payload bit/s, loss %)`.
fn lbe_trial(offset_s: f64, seconds: &[(f64, f64)], bg_loss: f64) -> (TestResult, TestResult) {
    let t0 = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
    let udp = |rate: u64| {
        TestSpec::Udp(UdpSpec {
            host: "::1".into(),
            bitrate: Rate::from_bps(rate),
            length: 1400,
            ..UdpSpec::default()
        })
    };
    let env = || TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde);
    let mut bg = TestResult::new(udp(40_000_000), env(), Timestamp(t0));
    bg.duration_s = 5.0;
    bg.summary.forward = Some(Figures {
        loss_pct: Some(bg_loss),
        ..Figures::default()
    });
    let start = if offset_s >= 0.0 {
        t0 + std::time::Duration::from_secs_f64(offset_s)
    } else {
        t0 - std::time::Duration::from_secs_f64(-offset_s)
    };
    let mut probe = TestResult::new(udp(8_000_000), env(), Timestamp(start));
    probe.duration_s = seconds.len() as f64;
    probe.intervals = seconds
        .iter()
        .enumerate()
        .map(|(i, &(bps, loss))| {
            let received = (bps / 8.0 / 1400.0).round() as u64;
            let lost = (received as f64 * loss / (100.0 - loss)).round() as u64;
            Interval {
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                omitted: false,
                size_bytes: None,
                streams: Vec::new(),
                sums: vec![Figures {
                    direction: Some(Direction::Forward),
                    received_bytes: Some(received * 1400),
                    received_packets: Some(received),
                    lost_packets: Some(lost),
                    ..Figures::default()
                }],
                round_trip: None,
            }
        })
        .collect();
    (probe, bg)
}

#[test]
fn the_lbe_verdict_reads_only_the_seconds_under_the_background() {
    // Share 2 Mbit/s of IP packets: 1.934 of 1400-byte payloads.
    let share = 2_000_000;
    let verdict = |offset: f64, seconds: &[(f64, f64)], bg_loss: f64| {
        let (probe, bg) = lbe_trial(offset, seconds, bg_loss);
        verdicts::lbe(&probe, &bg, share)
    };
    // Started a second before the background: its first two seconds
    // (alone, then while the queues fill) do not count.
    let f = verdict(
        -1.0,
        &[(8e6, 0.0), (5e6, 30.0), (1.95e6, 75.0), (1.95e6, 75.0)],
        55.0,
    );
    assert_eq!(f.verdict, QosVerdict::Squeezed, "{}", f.evidence);
    let got = f.figures["lbe_ip_bps"];
    assert!((got - 1.95e6 * 1448.0 / 1400.0).abs() < 5e3, "{got}");
    assert!((f.figures["lbe_loss_pct"] - 75.0).abs() < 0.1);
    // Below 90 % of its share: starved.
    let f = verdict(0.0, &[(1e6, 87.0), (1e6, 87.0), (1e6, 87.0)], 55.0);
    assert_eq!(f.verdict, QosVerdict::Starved, "{}", f.evidence);
    // Well above its share under congestion: no LBE class on the path.
    let f = verdict(0.0, &[(4e6, 50.0), (4e6, 50.0), (4e6, 50.0)], 52.0);
    assert_eq!(f.verdict, QosVerdict::NotSqueezed, "{}", f.evidence);
    // A background that congested nothing, or never overlapped.
    let f = verdict(0.0, &[(2e6, 75.0), (2e6, 75.0)], 0.5);
    assert_eq!(f.verdict, QosVerdict::NoCongestion, "{}", f.evidence);
    let f = verdict(6.0, &[(8e6, 0.0)], 55.0);
    assert_eq!(f.verdict, QosVerdict::NoCongestion, "{}", f.evidence);
}
