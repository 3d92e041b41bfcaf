//! Store-and-forward in the archive, on both backends: what is queued
//! for a destination, in what order, what leaves the queue, and a central
//! archive that keeps forwarded items once however often they come.

use sonde_archive::{Item, Placement, Store};
use sonde_model::method::{QosCheckKind, QosCheckSpec};
use sonde_model::{
    HostEnv, MethodResult, MethodSpec, PeerKind, TcpSpec, TestEnv, TestResult, TestSpec, Timestamp,
    UdpSpec,
};
use std::collections::BTreeMap;

mod common;
use common::on_both;

fn tcp(host: &str) -> TestResult {
    let spec = TcpSpec {
        host: host.into(),
        ..TcpSpec::default()
    };
    let mut r = TestResult::new(
        TestSpec::Tcp(spec),
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        Timestamp::now(),
    );
    r.duration_s = 1.0;
    r
}

fn placed(campaign: &str, step: &str) -> Placement {
    Placement {
        campaign: Some(campaign.into()),
        run_id: Some(format!("{campaign}-run-1")),
        method_id: None,
        labels: BTreeMap::from([("step".to_string(), step.to_string())]),
    }
}

fn method(trials: usize) -> MethodResult {
    let mut spec = QosCheckSpec::new(UdpSpec {
        host: "2001:db8::2".into(),
        ..UdpSpec::default()
    });
    spec.checks = vec![QosCheckKind::Marking];
    let mut m = MethodResult::new(MethodSpec::QosCheck(spec), Timestamp::now());
    m.trials = (0..trials)
        .map(|i| tcp(&format!("2001:db8::{i}")))
        .collect();
    m
}

fn ids(items: &[Item]) -> Vec<String> {
    items.iter().map(|i| i.id().to_string()).collect()
}

#[test]
fn what_is_kept_is_queued_for_each_destination_and_leaves_when_delivered() {
    on_both("fwd_queue", |open, _| {
        let mut s = open();
        assert!(s.forward_to("central").unwrap());
        assert!(!s.forward_to("central").unwrap(), "added once");
        let a = tcp("2001:db8::a");
        let b = tcp("2001:db8::b");
        s.put_result(&a, &placed("mesh", "tcp")).unwrap();
        s.put_result(&b, &Placement::default()).unwrap();
        // A result kept a second time is not queued a second time.
        s.put_result(&a, &placed("mesh", "tcp")).unwrap();
        let m = method(2);
        s.put_method(&m, &placed("mesh", "qos")).unwrap();

        let queued = s.outbox("central", 100).unwrap();
        assert!(queued.unreadable.is_empty());
        assert_eq!(queued.items.len(), 5, "2 results, 2 trials, 1 method");
        assert_eq!(
            ids(&queued.items[..2]),
            vec![a.id.to_string(), b.id.to_string()]
        );
        let Item::Result { result, placement } = &queued.items[0] else {
            panic!("not a result");
        };
        assert_eq!(result, &a);
        assert_eq!(placement, &placed("mesh", "tcp"));
        let trial_placements: Vec<&Placement> = queued
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Result { placement, .. } if placement.method_id.is_some() => Some(placement),
                _ => None,
            })
            .collect();
        assert_eq!(trial_placements.len(), 2);
        assert!(trial_placements
            .iter()
            .all(|p| p.method_id == Some(m.id.to_string())));
        let method_item = queued
            .items
            .iter()
            .find_map(|i| match i {
                Item::Method { method, placement } => Some((method, placement)),
                Item::Result { .. } => None,
            })
            .expect("the method is queued");
        assert_eq!(method_item.0.id, m.id);
        assert!(
            method_item.0.trials.is_empty(),
            "trials travel on their own"
        );
        assert_eq!(method_item.1.campaign.as_deref(), Some("mesh"));

        // A batch of two, oldest first.
        assert_eq!(
            ids(&s.outbox("central", 2).unwrap().items),
            ids(&queued.items[..2])
        );

        let status = &s.forward_status().unwrap()[0];
        assert_eq!((status.backlog, status.delivered), (5, 0));
        assert_eq!(status.oldest_id.as_deref(), Some(a.id.to_string().as_str()));

        s.forward_failed("central", "connection refused").unwrap();
        s.forward_failed("central", "connection refused").unwrap();
        let status = &s.forward_status().unwrap()[0];
        assert_eq!(status.attempts, 2);
        assert_eq!(status.last_error.as_deref(), Some("connection refused"));
        assert_eq!(status.last_ok_ns, None);

        s.forward_done("central", &ids(&queued.items[..3]), true)
            .unwrap();
        let status = &s.forward_status().unwrap()[0];
        assert_eq!(
            (status.backlog, status.delivered, status.attempts),
            (2, 3, 0)
        );
        assert!(status.last_ok_ns.is_some());
        assert_eq!(
            ids(&s.outbox("central", 100).unwrap().items),
            ids(&queued.items[3..])
        );
        // Another process sees the same queue.
        assert_eq!(open().forward_status().unwrap()[0].backlog, 2);
    });
}

#[test]
fn a_new_destination_is_given_the_whole_archive_and_an_old_one_is_dropped() {
    on_both("fwd_backfill", |open, _| {
        let mut s = open();
        let before = [tcp("2001:db8::1"), tcp("2001:db8::2")];
        for r in &before {
            s.put_result(r, &Placement::default()).unwrap();
        }
        s.forward_to("old").unwrap();
        assert!(s.forward_to("central").unwrap());
        let queued = s.outbox("central", 100).unwrap();
        assert_eq!(ids(&queued.items).len(), 2);
        let gone = s.forward_only(&["central"]).unwrap();
        assert_eq!(gone, vec!["old".to_string()]);
        let names: Vec<String> = s
            .forward_status()
            .unwrap()
            .into_iter()
            .map(|f| f.destination)
            .collect();
        assert_eq!(names, vec!["central".to_string()]);
        // Nothing is queued for a destination that is gone.
        s.put_result(&tcp("2001:db8::3"), &Placement::default())
            .unwrap();
        assert!(s.outbox("old", 100).unwrap().items.is_empty());
        assert_eq!(s.outbox("central", 100).unwrap().items.len(), 3);
    });
}

/// A PostgreSQL central archive in a schema of its own.
fn central(schema: &str) -> (Store, postgres::Client) {
    let mut admin = common::admin();
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
    (Store::open(&common::schema_url(schema)).unwrap(), admin)
}

#[test]
fn a_central_archive_keeps_forwarded_items_once_with_their_placement() {
    on_both("fwd_central", |open, _| {
        let mut local = open();
        local.forward_to("central").unwrap();
        local
            .put_result(&tcp("2001:db8::a"), &placed("mesh", "tcp"))
            .unwrap();
        let m = method(3);
        local.put_method(&m, &placed("mesh", "qos")).unwrap();
        let items = local.outbox("central", 100).unwrap().items;
        assert_eq!(items.len(), 5);

        let schema = format!("sonde_central_{}", std::process::id());
        let (mut c, mut admin) = central(&schema);
        // What the central archive keeps is forwarded on from it as it
        // came: the placement travels with each item.
        c.forward_to("next").unwrap();
        assert_eq!(c.put_items(&items).unwrap(), 5);
        assert_eq!(
            c.put_items(&items).unwrap(),
            0,
            "a second delivery keeps nothing twice"
        );
        assert_eq!(c.put_items(&items[1..3]).unwrap(), 0);
        assert_eq!(c.count_results().unwrap(), 4);
        let back = c.get_method(m.id).unwrap().expect("the method");
        assert_eq!(back.trials.len(), 3);
        let again = c.outbox("next", 100).unwrap().items;
        assert_eq!(ids(&again), ids(&items));
        for (x, y) in items.iter().zip(&again) {
            let (Item::Result { placement: p, .. } | Item::Method { placement: p, .. }) = x;
            let (Item::Result { placement: q, .. } | Item::Method { placement: q, .. }) = y;
            assert_eq!(p, q);
        }
        drop(c);
        admin
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .unwrap();
    });
}

#[test]
fn items_travel_as_json_and_read_back_the_same() {
    let mut m = method(1);
    m.trials.clear();
    let items = vec![
        Item::Result {
            result: tcp("2001:db8::a"),
            placement: placed("mesh", "tcp"),
        },
        Item::Method {
            method: m,
            placement: Placement::default(),
        },
    ];
    let text = serde_json::to_string(&items).unwrap();
    assert!(text.contains("\"kind\":\"result\""), "{text}");
    let back: Vec<Item> = serde_json::from_str(&text).unwrap();
    assert_eq!(ids(&back), ids(&items));
    let e = serde_json::from_str::<Item>(r#"{"kind":"parcel"}"#).unwrap_err();
    assert!(e.to_string().contains("parcel"), "{e}");
}

#[test]
fn agents_register_and_their_heartbeat_moves_last_seen_only() {
    on_both("mesh_agents", |open, _| {
        let mut s = open();
        let a = sonde_archive::AgentInfo {
            name: "vilnius".into(),
            addresses: vec!["2001:db8::a".into(), "192.0.2.10".into()],
            location: Some("Vilnius".into()),
            version: Some("0.1.0".into()),
        };
        s.register_agent(&a, 1_000).unwrap();
        let moved = sonde_archive::AgentInfo {
            addresses: vec!["2001:db8::b".into()],
            ..a.clone()
        };
        s.register_agent(&moved, 5_000).unwrap();
        let b = sonde_archive::AgentInfo {
            name: "athens".into(),
            addresses: vec!["2001:db8::c".into()],
            location: None,
            version: None,
        };
        s.register_agent(&b, 7_000).unwrap();
        let all = s.mesh_agents().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].info, b);
        assert_eq!(all[1].info, moved);
        assert_eq!((all[1].first_seen_ns, all[1].last_seen_ns), (1_000, 5_000));
    });
}
