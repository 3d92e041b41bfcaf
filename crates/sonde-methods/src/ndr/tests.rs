use super::*;
use crate::scripted::{method_events, Limit, PathDir, ScriptedPath, StopAfter};
use sonde_model::method::{SearchMode, SizeKind, StepPlan};

/// A TBF-like shaper at 50 Mbit/s counting the frame without FCS (IP
/// packet + 14), a 50 ms queue, 0.1 % noise on its rate per trial.
fn shaper(noise_pct: f64) -> ScriptedPath {
    let mut dir = PathDir::new(Limit::Shaper { queue_ms: 50.0 }, 50e6);
    dir.l2_bytes = 14;
    dir.noise_pct = noise_pct;
    dir.sender_max_bps = 400e6;
    ScriptedPath::symmetric(dir)
}

/// What the 50 Mbit/s shaper carries of IPv6 UDP payloads of `payload`.
fn truth_pps(payload: u32) -> f64 {
    50e6 / (8.0 * f64::from(payload + 48 + 14))
}

fn spec(payloads: &[u32], mode: SearchMode) -> NdrSpec {
    NdrSpec {
        trial: UdpSpec {
            host: "path".into(),
            family: IpFamily::V6,
            ..UdpSpec::default()
        },
        sizes: payloads.to_vec(),
        size_kind: SizeKind::Payload,
        gap: Duration::ZERO,
        search: mode,
        ..NdrSpec::default()
    }
}

fn run(path: &ScriptedPath, spec: &NdrSpec) -> MethodResult {
    let (r, heard) = method_events(|events| run_ndr(path, spec, &Stop::new(), events));
    for m in heard {
        let sonde_model::MethodEvent::NdrTrial(t) = m else {
            panic!("not an NDR trial: {m:?}");
        };
        eprintln!(
            "  {} #{} offered {:.0} delivered {:.0} loss {:.3} rise {:?} {:?}",
            t.payload_bytes,
            t.trial,
            t.outcome.offered_pps,
            t.outcome.delivered_pps,
            t.outcome.loss_pct,
            t.outcome.delay_rise_ms,
            t.verdict
        );
    }
    r.unwrap()
}

#[test]
fn informed_search_finds_the_rate_within_resolution_in_six_trials() {
    let path = shaper(0.1);
    let r = run(&path, &spec(&[64, 512, 1400], SearchMode::Informed));
    assert_eq!(r.results.len(), 3);
    for size in &r.results {
        let truth = truth_pps(size.payload_bytes);
        let off = size.rate_pps / truth - 1.0;
        eprintln!(
            "payload {}: {:.0} pps (truth {truth:.0}, {:+.3} %) in {} trials",
            size.payload_bytes,
            size.rate_pps,
            off * 100.0,
            size.trials
        );
        assert!(size.confirmed, "{size:?}");
        // Within the resolution (0.5 %) plus the path's noise.
        assert!(off.abs() < 0.007, "{off}");
        assert!(size.trials <= 6, "{} trials", size.trials);
        assert_eq!(size.trial_ids.len() as u32, size.trials);
        assert_eq!(size.frame_bytes, size.payload_bytes + 66);
        assert_eq!(size.loss_pct, 0.0);
    }
    assert_eq!(r.trials.len(), path.trials());
    let ids: Vec<_> = r.results.iter().flat_map(|s| s.trial_ids.clone()).collect();
    let kept: Vec<_> = r.trials.iter().map(|t| t.id).collect();
    assert_eq!(ids, kept, "every trial kept, in order");
}

#[test]
fn bisection_needs_more_trials_for_the_same_rate() {
    let informed = run(&shaper(0.0), &spec(&[64, 512, 1400], SearchMode::Informed));
    let bisect = run(&shaper(0.0), &spec(&[64, 512, 1400], SearchMode::Bisect));
    let count = |r: &MethodResult| r.results.iter().map(|s| s.trials).sum::<u32>();
    eprintln!(
        "informed {} trials, bisection {}",
        count(&informed),
        count(&bisect)
    );
    assert!(count(&bisect) >= count(&informed) + 6);
    for (a, b) in informed.results.iter().zip(&bisect.results) {
        assert!((a.rate_pps / b.rate_pps - 1.0).abs() < 0.006, "{a:?} {b:?}");
    }
}

#[test]
fn a_loss_bound_gives_the_partial_drop_rate_of_a_policer() {
    // A policer loses 1 − L/W at once above its rate: with 0.1 % allowed,
    // the rate found may lie up to 1/0.999 above L.
    let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 20e6));
    let mut s = spec(&[1000], SearchMode::Informed);
    s.loss_pct = 0.1;
    let r = run(&path, &s);
    let size = &r.results[0];
    let truth = 20e6 / (8.0 * 1048.0);
    assert!(
        size.rate_pps >= truth * 0.995,
        "{} vs {truth}",
        size.rate_pps
    );
    assert!(
        size.rate_pps <= truth / 0.999 * 1.001,
        "{} vs {truth}",
        size.rate_pps
    );
    assert!(size.loss_pct <= 0.1);
}

#[test]
fn a_path_that_never_drops_gives_the_maximum_asked() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0));
    let mut s = spec(&[1472], SearchMode::Informed);
    s.size_kind = SizeKind::Frame;
    s.sizes = vec![1518];
    s.max_rate = Some(Rate::from_bps(100_000_000));
    s.link_rate = Some(Rate::from_bps(100_000_000));
    let r = run(&path, &s);
    let size = &r.results[0];
    assert_eq!(size.trials, 2, "the first trial, then its confirmation");
    assert!((size.rate_bps as f64 / 1e8 - 1.0).abs() < 1e-3, "{size:?}");
    assert!((size.max_pps.unwrap() - 1e8 / (8.0 * 1538.0)).abs() < 0.01);
    assert!((size.efficiency_pct - 98.70).abs() < 0.01);
}

#[test]
fn a_frame_too_small_for_the_header_is_raised_and_said() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0));
    let mut s = spec(&[], SearchMode::Informed);
    s.size_kind = SizeKind::Frame;
    s.sizes = vec![64];
    s.max_rate = Some(Rate::from_bps(10_000_000));
    let r = run(&path, &s);
    assert_eq!(r.results[0].frame_bytes, 90);
    assert!(
        r.results[0].notes[0].contains("64-byte frames"),
        "{:?}",
        r.results[0]
    );
}

#[test]
fn ipv6_beside_ipv4_gives_the_header_ratio() {
    let path = shaper(0.0);
    let mut s = spec(&[64], SearchMode::Informed);
    s.step = StepPlan {
        families: vec![IpFamily::V6, IpFamily::V4],
        ..StepPlan::default()
    };
    let r = run(&path, &s);
    assert_eq!(r.results.len(), 2);
    let ratio = &r.family_ratios[0];
    let expected = (64.0 + 28.0 + 14.0) / (64.0 + 48.0 + 14.0);
    assert!(
        (ratio.ratio - expected).abs() < 0.006,
        "{ratio:?} vs {expected}"
    );
}

#[test]
fn a_stop_keeps_what_ran() {
    let path = shaper(0.0);
    let stop = Stop::new();
    let runner = StopAfter::new(&path, &stop, 2);
    let (r, heard) = method_events(|events| {
        run_ndr(
            &runner,
            &spec(&[64, 512], SearchMode::Informed),
            &stop,
            events,
        )
    });
    let r = r.unwrap();
    assert_eq!(heard.len(), 2);
    assert!(r.interrupted);
    assert_eq!(r.trials.len(), 2);
    assert!(r.results.is_empty());
}

/// Fails every run from the `from`-th on.
struct Refusing<'a> {
    inner: &'a ScriptedPath,
    from: usize,
}

impl Runner for Refusing<'_> {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        if self.inner.trials() + 1 >= self.from {
            return Err(RunError::PeerBusy("busy".into()));
        }
        self.inner.run(spec, stop, events)
    }

    fn resolve(&self, host: &str, family: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        self.inner.resolve(host, family)
    }
}

#[test]
fn a_failed_trial_ends_the_search_naming_it() {
    let path = shaper(0.0);
    let runner = Refusing {
        inner: &path,
        from: 3,
    };
    let e = run_ndr(
        &runner,
        &spec(&[512], SearchMode::Informed),
        &Stop::new(),
        &Events::new(),
    )
    .unwrap_err();
    assert!(matches!(e, MethodError::Trial { trial: 3, .. }), "{e:?}");
}

#[test]
fn bad_specs_are_refused_by_key() {
    let path = shaper(0.0);
    for (s, key) in [
        (
            NdrSpec {
                sizes: vec![],
                ..spec(&[], SearchMode::Informed)
            },
            "sizes",
        ),
        (
            NdrSpec {
                resolution_pct: 0.0,
                ..spec(&[64], SearchMode::Informed)
            },
            "resolution_pct",
        ),
        (
            NdrSpec {
                loss_pct: 100.0,
                ..spec(&[64], SearchMode::Informed)
            },
            "loss_pct",
        ),
        (spec(&[10], SearchMode::Informed), "sizes"),
    ] {
        let e = run_ndr(&path, &s, &Stop::new(), &Events::new()).unwrap_err();
        assert!(
            matches!(&e, MethodError::Invalid { field, .. } if *field == key),
            "{e:?}"
        );
    }
    assert_eq!(path.trials(), 0);
}

/// RFC 2544 frame sizes toward `host`, the trial's family left to the
/// host (`any`).
fn any_family_spec(host: &str) -> NdrSpec {
    let mut s = spec(&[], SearchMode::Informed);
    s.trial.host = host.into();
    s.trial.family = IpFamily::Any;
    s.size_kind = SizeKind::Frame;
    s.sizes = vec![128, 1518];
    s.max_rate = Some(Rate::from_bps(10_000_000));
    s
}

/// The UDP specs `path` was asked to run, in order.
fn asked_udp(path: &ScriptedPath) -> Vec<UdpSpec> {
    path.asked()
        .into_iter()
        .map(|t| match t {
            TestSpec::Udp(u) => u,
            other => panic!("not a udp trial: {other:?}"),
        })
        .collect()
}

#[test]
fn any_family_takes_the_literal_hosts_family_through_run_method_as_through_run_ndr() {
    for (host, family, ip_bytes) in [("127.0.0.1", IpFamily::V4, 20), ("::1", IpFamily::V6, 40)] {
        let s = any_family_spec(host);
        // As a campaign step or the API run it.
        let dispatched = shaper(0.0);
        let r = crate::run_method(
            &dispatched,
            &MethodSpec::Ndr(s.clone()),
            &Stop::new(),
            &Events::new(),
        )
        .unwrap();
        // As `sonde ndr` and `sonde run` run it.
        let direct = shaper(0.0);
        let d = run(&direct, &s);

        assert_eq!(r.results.len(), 2, "{host}");
        for (size, frame) in r.results.iter().zip([128, 1518]) {
            assert_eq!(size.family, family, "{host}");
            assert_eq!(size.frame_bytes, frame, "{host}");
            // Ethernet header and FCS (18), IP, UDP (8).
            assert_eq!(size.payload_bytes, frame - 18 - ip_bytes - 8, "{host}");
        }
        let MethodSpec::Ndr(kept) = &r.spec else {
            panic!("{:?}", r.spec)
        };
        assert_eq!(kept.trial.family, family, "the spec kept says the family");

        let trials = asked_udp(&dispatched);
        assert!(!trials.is_empty());
        for t in &trials {
            assert_eq!(t.family, family, "{host}: {t:?}");
            assert!(
                [128 - 26 - ip_bytes, 1518 - 26 - ip_bytes].contains(&t.length),
                "{host}: {t:?}"
            );
        }
        assert_eq!(
            path_specs(&dispatched),
            path_specs(&direct),
            "{host}: the same trials, in the same order"
        );
        let sizes = |r: &MethodResult| -> Vec<(IpFamily, u32, u32)> {
            r.results
                .iter()
                .map(|s| (s.family, s.frame_bytes, s.payload_bytes))
                .collect()
        };
        assert_eq!(sizes(&r), sizes(&d), "{host}");
    }
}

/// The specs `path` ran, comparable.
fn path_specs(path: &ScriptedPath) -> Vec<String> {
    path.asked().iter().map(|t| format!("{t:?}")).collect()
}

#[test]
fn any_family_takes_the_first_address_a_name_resolves_to() {
    for (addresses, family) in [
        (vec!["2001:db8::1", "192.0.2.1"], IpFamily::V6),
        (vec!["192.0.2.1"], IpFamily::V4),
    ] {
        let mut path = shaper(0.0);
        path.addresses = addresses.iter().map(|a| a.parse().unwrap()).collect();
        let r = run(&path, &any_family_spec("server.test"));
        assert!(r.results.iter().all(|s| s.family == family), "{r:?}");
        assert!(asked_udp(&path).iter().all(|t| t.family == family));
    }
}

#[test]
fn a_family_the_host_lacks_is_refused_by_key_before_any_trial() {
    let path = shaper(0.0);
    let mut s = any_family_spec("127.0.0.1");
    s.trial.family = IpFamily::V6;
    let e = run_ndr(&path, &s, &Stop::new(), &Events::new()).unwrap_err();
    assert!(
        matches!(&e, MethodError::Invalid { field, .. } if *field == "trial.host"),
        "{e:?}"
    );
    let mut path = shaper(0.0);
    path.addresses = vec!["2001:db8::1".parse().unwrap()];
    let mut s = any_family_spec("server.test");
    s.step.families = vec![IpFamily::V6, IpFamily::V4];
    let e = run_ndr(&path, &s, &Stop::new(), &Events::new()).unwrap_err();
    assert!(
        matches!(&e, MethodError::Invalid { field, .. } if *field == "step.families"),
        "{e:?}"
    );
    assert_eq!(path.trials(), 0);
}

/// Runs tests on another host: cannot resolve from here.
struct Elsewhere<'a>(&'a ScriptedPath);

impl Runner for Elsewhere<'_> {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        self.0.run(spec, stop, events)
    }

    fn resolve(&self, _: &str, _: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        Ok(Vec::new())
    }
}

#[test]
fn a_runner_that_cannot_resolve_leaves_any_sized_as_ipv6() {
    let path = shaper(0.0);
    let r = run_ndr(
        &Elsewhere(&path),
        &any_family_spec("server.test"),
        &Stop::new(),
        &Events::new(),
    )
    .unwrap();
    assert_eq!(r.results[0].payload_bytes, 128 - 66);
    assert!(asked_udp(&path).iter().all(|t| t.family == IpFamily::Any));
    // A literal needs no lookup, even there.
    let path = shaper(0.0);
    let r = run_ndr(
        &Elsewhere(&path),
        &any_family_spec("[127.0.0.1]"),
        &Stop::new(),
        &Events::new(),
    )
    .unwrap();
    assert_eq!(r.results[0].family, IpFamily::V4);
}
