//! docs/schema/method-v1.schema.json against ndr and sweep documents
//! with every optional field filled (ndr built from the model's types,
//! sweep written out, see there); real repeat documents are checked in
//! repeat_cli.rs and lab_families.rs.

use crate::common;
use common::schema::{assert_rejects, assert_valid, method_v1};
use serde_json::json;
use sonde_model::method::{
    FamilyRatio, Metric, NdrSize, NdrSpec, RepeatRule, Stats, StepPlan, StepStats,
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
        notes: vec!["64-byte frames cannot carry IP, UDP and sonde's test header".into()],
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
    // Written as JSON, not built from the model types: the sweep's types
    // grow on their own branch (`series`, `payload_bytes`, `refined`,
    // more evidence), and this document has both spellings' fields.
    let header = serde_json::to_value(MethodResult::new(
        MethodSpec::Ndr(NdrSpec::default()),
        Timestamp::now(),
    ))
    .unwrap();
    let stats = serde_json::to_value(step_stats(IpFamily::V4, Some(Direction::Forward))).unwrap();
    let mut doc = header;
    doc["method"] = "sweep".into();
    doc["spec"] = json!({
        "method": "sweep",
        "test": serde_json::to_value(TestSpec::Udp(UdpSpec {
            host: "::1".into(),
            ..UdpSpec::default()
        }))
        .unwrap(),
        "variable": {"kind": "rates", "values": [1_000_000, 2_000_000]},
        "directions": ["forward", "reverse", "bidir"],
        "gap_s": 1.0,
        "step": serde_json::to_value(plan()).unwrap(),
        "refine_trials": 4
    });
    doc["steps"] = json!([{
        "series": "bidir", "direction": "forward", "family": "v4", "value": 1e6,
        "payload_bytes": 1400, "refined": true, "offered_bps": 1e6, "goodput_bps": 1e6,
        "pdr_pct": 100.0, "loss_pct": 0.0, "jitter_ms": 0.01, "delay_ms": 0.2,
        "delay_p99_ms": 0.3, "retransmits": 0.0, "runs": stats
    }]);
    doc["limiters"] = json!([{
        "series": "reverse", "direction": "reverse", "family": "v4", "class": "punisher",
        "knee_bps": 88e6, "knee_pps": 7000.0, "confidence": 0.8,
        "evidence": {"steps_above_knee": 3, "steps_below_knee": 5,
                     "delivered_fraction_above_knee": 0.05, "delay_rise_ms": 0.1,
                     "bracket_bps": [87e6, 89e6], "notes": ["collapsed"]}
    }]);
    doc["family_ratios"] = json!([serde_json::to_value(ratio()).unwrap()]);
    let v = method_v1();
    assert_valid(&v, &doc);
    assert_rejects(&v, &doc, "an unknown limiter class", |d| {
        d["limiters"][0]["class"] = "throttle".into();
    });
    assert_rejects(&v, &doc, "a confidence above 1", |d| {
        d["limiters"][0]["confidence"] = 1.5.into();
    });
    assert_rejects(&v, &doc, "a step without its runs", |d| {
        common::schema::remove(&mut d["steps"][0], "runs");
    });
}

/// The schemas name the metrics as the registry does: the method
/// schema's `metric` enum is `Metric::ALL`, and every registry metric
/// that is a field of a result's figures is one in the result schema.
#[test]
fn the_schemas_metrics_are_the_registrys() {
    let read = |file: &str| -> serde_json::Value {
        let path = format!("{}/../../docs/schema/{file}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let registry: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
    let method = read("method-v1.schema.json");
    // The metric's values: an `enum` of the undocumented ones and a
    // `const` for each documented one, as the type generates them.
    let mut named: Vec<String> = Vec::new();
    for value in method["$defs"]["Metric"]["oneOf"].as_array().unwrap() {
        match (&value["enum"], &value["const"]) {
            (serde_json::Value::Array(all), _) => {
                named.extend(all.iter().filter_map(|v| v.as_str()).map(String::from))
            }
            (_, serde_json::Value::String(one)) => named.push(one.clone()),
            _ => panic!("a metric value neither enum nor const: {value}"),
        }
    }
    let mut sorted_registry: Vec<String> = registry.iter().map(|m| m.to_string()).collect();
    sorted_registry.sort();
    named.sort();
    assert_eq!(
        named, sorted_registry,
        "docs/schema/method-v1.schema.json's metric values are not the registry's"
    );
    let result = read("result-v3.schema.json").to_string();
    for m in Metric::ALL {
        // Figures kept under their own name (the RTT and delay are
        // objects of their own: rtt_ms.p50, delay.avg_ms).
        if matches!(m, Metric::RttP50Ms | Metric::RttAvgMs | Metric::DelayMs) {
            continue;
        }
        assert!(
            result.contains(&format!("\"{}\":", m.name())),
            "result-v3.schema.json has no field {}",
            m.name()
        );
    }
}
