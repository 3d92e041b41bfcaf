//! docs/schema/method-v1.schema.json against the model's own ndr and
//! sweep documents (every optional field filled), so the schema and the
//! types cannot drift apart; real repeat documents are checked in
//! repeat_cli.rs and lab_families.rs.

mod common;
use common::schema::{assert_rejects, assert_valid, method_v1};
use sonde_model::method::{
    FamilyRatio, Limiter, LimiterClass, LimiterEvidence, Metric, NdrSize, NdrSpec, RepeatRule,
    Stats, StepPlan, StepStats, SweepSpec, SweepStep, SweepVariable,
};
use sonde_model::udp_report::OneWayDelay;
use sonde_model::{
    Direction, IpFamily, MethodResult, MethodSpec, Rate, ResultId, TestSpec, Timestamp, UdpSpec,
};
use std::collections::BTreeMap;

fn step_stats(family: IpFamily, direction: Option<Direction>) -> StepStats {
    StepStats {
        family,
        direction,
        result_ids: vec![ResultId::random()],
        stable: Some(true),
        stats: BTreeMap::from([(
            Metric::ThroughputBps.name().to_string(),
            Stats {
                n: 2,
                mean: 9e6,
                stddev: 1e3,
                stddev_pct: 0.011,
                ci95: Some(9e3),
                min: 8.999e6,
                max: 9.001e6,
            },
        )]),
    }
}

fn plan() -> StepPlan {
    StepPlan {
        repeat: RepeatRule::UntilStable {
            stddev_pct: 0.5,
            min_runs: 30,
            max_runs: 200,
        },
        metric: Some(Metric::LossPct),
        families: vec![IpFamily::V6, IpFamily::V4],
    }
}

fn ratio() -> FamilyRatio {
    FamilyRatio {
        metric: Metric::ThroughputBps,
        at: Some("1400".into()),
        ipv6: 0.9,
        ipv4: 1.0,
        ratio: 0.9,
    }
}

#[test]
fn an_ndr_document_matches_the_schema() {
    let spec = NdrSpec {
        trial: UdpSpec {
            host: "::1".into(),
            ..UdpSpec::default()
        },
        max_rate: Some(Rate::from_bps(50_000_000)),
        link_rate: Some(Rate::from_bps(50_000_000)),
        step: plan(),
        ..NdrSpec::default()
    };
    let mut r = MethodResult::new(MethodSpec::Ndr(spec), Timestamp::now());
    r.results = vec![NdrSize {
        family: IpFamily::V6,
        payload_bytes: 1452,
        frame_bytes: 1518,
        rate_bps: 49_000_000,
        rate_pps: 4035.0,
        payload_rate_bps: 46_800_000,
        loss_pct: 0.0,
        trials: 5,
        confirmed: true,
        efficiency_pct: 98.7,
        max_pps: Some(4112.0),
        max_frame_bps: Some(49_900_000),
        delay: Some(OneWayDelay {
            clock_synced: true,
            min_ms: 0.1,
            avg_ms: 0.2,
            max_ms: 0.5,
            p99_ms: 0.4,
            pdv_p50_ms: 0.01,
            pdv_p99_ms: 0.2,
        }),
        rtt_p50_ms: Some(0.3),
        trial_ids: vec![ResultId::random()],
    }];
    r.family_ratios = vec![ratio()];
    let doc = serde_json::to_value(&r).unwrap();
    let v = method_v1();
    assert_valid(&v, &doc);
    assert_rejects(&v, &doc, "a size without its rate", |d| {
        common::schema::remove(&mut d["results"][0], "rate_bps");
    });
    assert_rejects(&v, &doc, "spec and method disagree", |d| {
        d["method"] = "sweep".into();
    });
}

#[test]
fn a_sweep_document_matches_the_schema() {
    let spec = SweepSpec {
        test: TestSpec::Udp(UdpSpec {
            host: "::1".into(),
            ..UdpSpec::default()
        }),
        variable: SweepVariable::Rates(vec![Rate::from_bps(1_000_000), Rate::from_bps(2_000_000)]),
        directions: vec![Direction::Forward, Direction::Reverse, Direction::Bidir],
        gap: std::time::Duration::from_secs(1),
        step: plan(),
    };
    let mut r = MethodResult::new(MethodSpec::Sweep(spec), Timestamp::now());
    r.steps = vec![SweepStep {
        direction: Direction::Forward,
        family: IpFamily::V4,
        value: 1e6,
        offered_bps: Some(1e6),
        goodput_bps: Some(1e6),
        pdr_pct: Some(100.0),
        loss_pct: Some(0.0),
        jitter_ms: Some(0.01),
        delay_ms: Some(0.2),
        delay_p99_ms: Some(0.3),
        retransmits: Some(0.0),
        runs: step_stats(IpFamily::V4, Some(Direction::Forward)),
    }];
    r.limiters = vec![Limiter {
        direction: Direction::Reverse,
        family: IpFamily::V4,
        class: LimiterClass::Punisher,
        knee_bps: Some(88e6),
        knee_pps: Some(7000.0),
        confidence: 0.8,
        evidence: LimiterEvidence {
            steps_above_knee: 3,
            delivered_fraction_above_knee: Some(0.05),
            delay_rise_ms: Some(0.1),
            loss_above_knee_pct: Some(95.0),
            notes: vec!["collapsed".into()],
        },
    }];
    r.family_ratios = vec![ratio()];
    let doc = serde_json::to_value(&r).unwrap();
    let v = method_v1();
    assert_valid(&v, &doc);
    assert_rejects(&v, &doc, "an unknown limiter class", |d| {
        d["limiters"][0]["class"] = "throttle".into();
    });
    assert_rejects(&v, &doc, "a confidence above 1", |d| {
        d["limiters"][0]["confidence"] = 1.5.into();
    });
}
