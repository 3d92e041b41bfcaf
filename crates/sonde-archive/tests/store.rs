//! The Store on both backends with the same bodies: SQLite in a temporary
//! file, and the real PostgreSQL on this machine (127.0.0.1:5433 over TLS, database
//! `test`), each test in a schema of its own, dropped after.

use sonde_archive::{ArchiveError, Placement, RunState, StepKey, StepState, Store};
use sonde_model::method::{QosCheckKind, QosCheckSpec};
use sonde_model::{
    Direction, Figures, HostEnv, Interval, MethodResult, MethodSpec, PeerKind, PingSpec, RttStats,
    Summary, TcpSpec, TestEnv, TestResult, TestSpec, Timestamp, UdpSpec,
};

mod common;
use common::on_both;

fn forward(throughput: u64, loss: Option<f64>, jitter: Option<f64>) -> Figures {
    Figures {
        direction: Some(Direction::Forward),
        throughput_bps: Some(throughput),
        loss_pct: loss,
        pdr_pct: loss.map(|l| 100.0 - l),
        jitter_ms: jitter,
        ..Figures::default()
    }
}

fn result(spec: TestSpec, figures: Figures, intervals: usize) -> TestResult {
    let mut r = TestResult::new(
        spec,
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        Timestamp::now(),
    );
    r.duration_s = intervals as f64;
    r.intervals = (0..intervals)
        .map(|i| Interval {
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            omitted: false,
            size_bytes: None,
            streams: Vec::new(),
            sums: vec![Figures {
                throughput_bps: Some(1_000_000 + i as u64),
                ..figures.clone()
            }],
            round_trip: None,
        })
        .collect();
    r.summary = Summary {
        forward: Some(figures),
        ..Summary::default()
    };
    r
}

fn tcp(intervals: usize) -> TestResult {
    let spec = TcpSpec {
        host: "2001:db8::2".into(),
        ..TcpSpec::default()
    };
    result(spec.into(), forward(7_500_000, None, None), intervals)
}

fn udp() -> TestResult {
    let spec = UdpSpec {
        host: "2001:db8::2".into(),
        ..UdpSpec::default()
    };
    result(spec.into(), forward(1_000_000, Some(0.5), Some(0.2)), 5)
}

fn ping() -> TestResult {
    let spec = PingSpec {
        host: "2001:db8::2".into(),
        ..PingSpec::default()
    };
    let mut r = TestResult::new(
        spec.into(),
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        Timestamp::now(),
    );
    r.summary = Summary {
        round_trip: Some(Figures {
            rtt_ms: RttStats::from_ms(&[93.9, 94.1, 94.0]),
            ..Figures::default()
        }),
        ..Summary::default()
    };
    r
}

#[test]
fn every_kind_round_trips_and_a_second_write_changes_nothing() {
    on_both("roundtrip", |open, _| {
        let mut s = open();
        assert_eq!(
            s.schema_version().unwrap(),
            sonde_archive::schema::current() as i64
        );
        for r in [tcp(300), udp(), ping()] {
            assert!(s.put_result(&r, &Placement::default()).unwrap());
            assert_eq!(s.get_result(r.id).unwrap().as_ref(), Some(&r));
            // A retry (the same id) is not a second result.
            assert!(!s.put_result(&r, &Placement::default()).unwrap());
        }
        assert_eq!(s.count_results().unwrap(), 3);
        // Reopened (migrations already applied): all there.
        let mut again = open();
        assert_eq!(again.count_results().unwrap(), 3);
        assert_eq!(
            again.schema_version().unwrap(),
            sonde_archive::schema::current() as i64
        );
    });
}

#[test]
fn a_result_with_an_interval_twice_is_kept_with_it_once() {
    // A key twice in one result (an interval repeated) refuses nothing:
    // the first is kept, as the index would have it.
    on_both("twice", |open, _| {
        let mut s = open();
        let mut r = tcp(3);
        let again = r.intervals[1].clone();
        r.intervals.push(again);
        assert!(s.put_result(&r, &Placement::default()).unwrap());
        assert_eq!(s.get_result(r.id).unwrap().as_ref(), Some(&r));
        assert_eq!(s.count_intervals(r.id).unwrap(), 3);
    });
}

#[test]
fn interval_series_are_kept_per_direction() {
    on_both("intervals", |open, _| {
        let mut s = open();
        let r = tcp(300);
        s.put_result(&r, &Placement::default()).unwrap();
        assert_eq!(s.count_intervals(r.id).unwrap(), 300);
        s.put_result(&r, &Placement::default()).unwrap();
        assert_eq!(s.count_intervals(r.id).unwrap(), 300);
    });
}

#[test]
fn a_method_keeps_its_trials_and_reads_back_whole() {
    on_both("method", |open, _| {
        let mut s = open();
        let mut spec = QosCheckSpec::new(UdpSpec {
            host: "2001:db8::2".into(),
            ..UdpSpec::default()
        });
        spec.checks = vec![QosCheckKind::Marking];
        let mut m = MethodResult::new(MethodSpec::QosCheck(spec), Timestamp::now());
        m.trials = vec![udp(), udp()];
        let at = Placement {
            campaign: Some("geant".into()),
            run_id: Some("run-1".into()),
            method_id: None,
            labels: [("path".to_string(), "stesta".to_string())].into(),
        };
        assert!(s.put_method(&m, &at).unwrap());
        assert!(!s.put_method(&m, &at).unwrap());
        assert_eq!(s.count_results().unwrap(), 2);
        let back = s.get_method(m.id).unwrap().unwrap();
        assert_eq!(back.trials.len(), 2);
        assert_eq!(back, m);
    });
}

#[test]
fn an_archive_from_a_newer_sonde_is_refused_by_name() {
    on_both("newer", |open, location| {
        let mut s = open();
        drop(s.put_result(&ping(), &Placement::default()));
        drop(s);
        // A later sonde migrated it to version 99.
        if location.starts_with("postgres") {
            let schema = location.split("schema=").nth(1).unwrap();
            let mut c = common::admin();
            c.batch_execute(&format!(
                "INSERT INTO {schema}.sonde_schema (version) VALUES (99)"
            ))
            .unwrap();
        } else {
            let c = rusqlite::Connection::open(location).unwrap();
            c.execute("INSERT INTO sonde_schema (version) VALUES (99)", [])
                .unwrap();
        }
        match Store::open(location) {
            Err(e @ ArchiveError::TooNew { found: 99, .. }) => {
                assert!(e.to_string().contains("upgrade sonde"), "{e}");
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a newer archive was opened"),
        }
    });
}

#[test]
fn concurrent_writers_lose_nothing() {
    on_both("concurrent", |open, _| {
        drop(open());
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    let mut s = open();
                    for _ in 0..25 {
                        s.put_result(&tcp(10), &Placement::default()).unwrap();
                    }
                });
            }
        });
        assert_eq!(open().count_results().unwrap(), 50);
    });
}

#[test]
fn a_file_that_is_not_an_archive_is_a_clear_error_and_stays_as_it_was() {
    let dir = std::env::temp_dir().join(format!("sonde-archive-{}-corrupt", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("notes.db");
    let garbage = b"these are my notes, not a database, and they must stay".repeat(100);
    std::fs::write(&file, &garbage).unwrap();
    let e = Store::open(file.to_str().unwrap()).err().expect("refused");
    let text = e.to_string();
    assert!(
        text.contains("notes.db") && text.contains("not a database"),
        "{text}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), garbage);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn results_are_listed_by_filter_newest_first() {
    use sonde_archive::ResultFilter;
    on_both("list", |open, _| {
        let mut s = open();
        // Made 2 ms apart: start times order them.
        let pause = || std::thread::sleep(std::time::Duration::from_millis(2));
        let t = tcp(3);
        pause();
        let u = udp();
        pause();
        let p = ping();
        for r in [&t, &u, &p] {
            s.put_result(r, &Placement::default()).unwrap();
        }
        let ids = |f: ResultFilter, s: &mut Store| -> Vec<String> {
            s.list_results(&f)
                .unwrap()
                .iter()
                .map(|r| r.id.to_string())
                .collect()
        };
        let all = ids(ResultFilter::default(), &mut s);
        assert_eq!(all.len(), 3);
        // Newest first: the ping was made last.
        assert_eq!(all[0], p.id.to_string());
        let udp_only = ResultFilter {
            test: Some("udp".into()),
            ..ResultFilter::default()
        };
        assert_eq!(ids(udp_only, &mut s), [u.id.to_string()]);
        let elsewhere = ResultFilter {
            target: Some("2001:db8::99".into()),
            ..ResultFilter::default()
        };
        assert!(ids(elsewhere, &mut s).is_empty());
        let later = ResultFilter {
            since_ns: Some(i64::MAX - 1),
            ..ResultFilter::default()
        };
        assert!(ids(later, &mut s).is_empty());
        let one = ResultFilter {
            limit: 1,
            ..ResultFilter::default()
        };
        assert_eq!(ids(one, &mut s).len(), 1);
    });
}

/// An archive as version 1 of the schema left it, with one result and its
/// intervals written the way version 1 wrote them.
fn version_one(run: &mut dyn FnMut(&str)) {
    run(sonde_archive::schema::VERSION_TABLE);
    run(sonde_archive::schema::MIGRATIONS[0]);
    run("INSERT INTO sonde_schema (version) VALUES (1)");
    let r = tcp(3);
    let doc = serde_json::to_string(&r).unwrap().replace('\'', "''");
    run(&format!(
        "INSERT INTO results (id, test, target, start_ns, duration_s, interrupted, \
         throughput_bps, doc) VALUES ('{}', 'tcp', '::1', 1, 3.0, FALSE, 9000000.0, '{doc}')",
        r.id
    ));
    for i in 0..3 {
        run(&format!(
            "INSERT INTO intervals (result_id, direction, start_s, end_s, at_ns, omitted, \
             throughput_bps) VALUES ('{}', 'forward', {i}.0, {i}.5, 1, FALSE, 1.0)",
            r.id
        ));
    }
    let mut ids = IDS.lock().unwrap();
    ids.push(r.id);
}

static IDS: std::sync::Mutex<Vec<sonde_model::ResultId>> = std::sync::Mutex::new(Vec::new());

#[test]
fn an_archive_of_the_previous_version_is_migrated_and_keeps_its_results() {
    let check = |s: &mut Store, id: sonde_model::ResultId| {
        assert_eq!(
            s.schema_version().unwrap(),
            sonde_archive::schema::current() as i64
        );
        assert!(s.get_result(id).unwrap().is_some());
        assert_eq!(s.count_intervals(id).unwrap(), 3);
        // Version 2's tables are there: a labelled result can be kept.
        let mut at = Placement::default();
        at.labels.insert("path".into(), "stesta".into());
        assert!(s.put_result(&ping(), &at).unwrap());
    };
    // SQLite.
    let dir = std::env::temp_dir().join(format!("sonde-archive-{}-v1", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sonde.db");
    {
        let conn = rusqlite::Connection::open(&file).unwrap();
        version_one(&mut |sql| conn.execute_batch(sql).unwrap());
    }
    let id = *IDS.lock().unwrap().last().unwrap();
    check(&mut Store::open(file.to_str().unwrap()).unwrap(), id);
    let _ = std::fs::remove_dir_all(&dir);
    // PostgreSQL.
    let schema = format!("sonde_t{}_v1", std::process::id());
    let mut admin = common::admin();
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    {
        let mut c = common::admin();
        c.batch_execute(&format!("SET search_path TO {schema}"))
            .unwrap();
        version_one(&mut |sql| c.batch_execute(sql).unwrap());
    }
    let id = *IDS.lock().unwrap().last().unwrap();
    check(&mut Store::open(&common::schema_url(&schema)).unwrap(), id);
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}

#[test]
fn a_ping_of_several_sizes_keeps_a_series_per_size() {
    on_both("sizes", |open, _| {
        let mut s = open();
        let mut r = ping();
        let mut first = tcp(1).intervals[0].clone();
        first.sums.clear();
        first.round_trip = r.summary.round_trip.clone();
        r.intervals = [64u32, 1400]
            .iter()
            .flat_map(|size| {
                let mut i = first.clone();
                i.size_bytes = Some(*size);
                [i]
            })
            .collect();
        s.put_result(&r, &Placement::default()).unwrap();
        assert_eq!(s.count_intervals(r.id).unwrap(), 2);
    });
}

#[test]
fn runs_are_claimed_once_and_leases_are_held_by_one() {
    on_both("runs", |open, _| {
        let mut s = open();
        s.put_campaign("geant", "name = \"geant\"", None, 5)
            .unwrap();
        assert!(s.claim_run("r1", "geant", 100, 110, "h:1").unwrap());
        assert!(!s.claim_run("r2", "geant", 100, 111, "h:2").unwrap());
        assert!(!s.record_missed("r3", "geant", 100, "late").unwrap());
        assert!(s
            .record_missed("r4", "geant", 200, "sonde was not running")
            .unwrap());
        s.heartbeat("r1", 150).unwrap();
        s.finish_run("r1", RunState::Interrupted, Some("killed"), 160)
            .unwrap();
        let runs = s.runs("geant", 10).unwrap();
        assert_eq!(runs.len(), 2);
        let r1 = runs.iter().find(|r| r.id == "r1").unwrap();
        assert_eq!(r1.state, RunState::Interrupted);
        assert_eq!(r1.reason.as_deref(), Some("killed"));
        assert_eq!((r1.ended_ns, r1.heartbeat_ns), (Some(160), Some(150)));
        assert_eq!(runs[0].reason.as_deref(), Some("sonde was not running"));
        s.run_event("r1", 120, "step_failed", "tcp: refused")
            .unwrap();
        assert_eq!(s.run_events("r1").unwrap()[0].2, "tcp: refused");
        assert!(s.acquire_lease("a <> b", "h:1#r1", 100, 200).unwrap());
        assert!(!s.acquire_lease("a <> b", "h:2#r9", 150, 300).unwrap());
        // Past its expiry, a lease is nobody's.
        assert!(s.acquire_lease("a <> b", "h:2#r9", 201, 300).unwrap());
        s.drop_leases("h:2").unwrap();
        assert!(s.lease("a <> b", 250).unwrap().is_none());
        assert_eq!(s.campaigns().unwrap()[0].created_ns, 5);
    });
}

#[test]
fn a_locked_archive_is_a_clear_error_and_loses_nothing() {
    let dir = std::env::temp_dir().join(format!("sonde-archive-{}-locked", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = dir.join("sonde.db");
    let path = file.to_str().unwrap().to_string();
    let mut store = Store::open(&path).unwrap();
    let kept = tcp(3);
    store.put_result(&kept, &Placement::default()).unwrap();
    // Another process holds the write lock for longer than sonde waits.
    let other = rusqlite::Connection::open(&file).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let r = udp();
    let e = store.put_result(&r, &Placement::default()).unwrap_err();
    let text = e.to_string();
    assert!(text.contains(&path) && text.contains("locked"), "{text}");
    other.execute_batch("COMMIT").unwrap();
    // Once free: the result is kept, and what was there still is.
    assert!(store.put_result(&r, &Placement::default()).unwrap());
    assert_eq!(store.count_results().unwrap(), 2);
    assert!(store.get_result(kept.id).unwrap().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_new_archive_opened_by_many_at_once_opens_for_all() {
    // Schedulers, the API and tests all open the one file; the first
    // opening turns it to WAL and migrates it while others arrive.
    let base = std::env::temp_dir().join(format!("sonde-archive-{}-race", std::process::id()));
    for round in 0..20 {
        let dir = base.join(round.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sonde.db").display().to_string();
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| {
                    let mut s = Store::open(&path).unwrap_or_else(|e| panic!("round {round}: {e}"));
                    s.put_result(&tcp(1), &Placement::default()).unwrap();
                });
            }
        });
        assert_eq!(Store::open(&path).unwrap().count_results().unwrap(), 6);
    }
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_new_postgresql_schema_opened_by_many_at_once_opens_for_all() {
    // A central agent's first moments: every agent delivers at once, and
    // each request opens the archive; one creates the schema and
    // migrates it while the others wait for it.
    let mut admin = common::admin();
    for round in 0..5 {
        let schema = format!("sonde_race_{}_{round}", std::process::id());
        admin
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .unwrap();
        let url = common::schema_url(&schema);
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| {
                    let mut s = Store::open(&url).unwrap_or_else(|e| panic!("round {round}: {e}"));
                    s.put_result(&tcp(1), &Placement::default()).unwrap();
                });
            }
        });
        assert_eq!(Store::open(&url).unwrap().count_results().unwrap(), 6);
        admin
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .unwrap();
    }
}

#[test]
fn on_postgresql_documents_are_lz4_and_a_column_added_by_another_breaks_no_read() {
    let schema = format!("sonde_session_{}", std::process::id());
    let url = common::schema_url(&schema);
    let mut admin = common::admin();
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
    let mut s = Store::open(&url).unwrap();
    // 300 intervals: a document well over the size PostgreSQL compresses.
    let big = tcp(300);
    assert!(s.put_result(&big, &Placement::default()).unwrap());
    let how: String = admin
        .query_one(
            &format!("SELECT pg_column_compression(doc) FROM {schema}.results"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(how, "lz4", "the document's compression");

    // The statements this store has prepared read `results`; another
    // connection (a newer sonde migrating) gives it a column: every read
    // still answers, and answers the same.
    let filter = sonde_archive::ResultFilter::default();
    let before = s.latest_per_path(&filter, 100).unwrap();
    assert_eq!(before.len(), 1);
    admin
        .batch_execute(&format!(
            "ALTER TABLE {schema}.results ADD COLUMN later TEXT"
        ))
        .unwrap();
    assert_eq!(s.latest_per_path(&filter, 100).unwrap(), before);
    assert_eq!(s.get_result(big.id).unwrap().as_ref(), Some(&big));
    assert_eq!(s.count_results().unwrap(), 1);
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}

/// A run's steps, as two hosts sharing one archive use them: a step is
/// claimed once, a missed record never takes a claimed step, an ended step
/// does not change again, and a run is settled once.
fn key(step: i64, name: &'static str, endpoint: &'static str) -> StepKey<'static> {
    StepKey {
        run_id: "r1",
        step,
        name,
        endpoint,
    }
}

#[test]
fn a_step_is_claimed_once_and_a_run_settled_once() {
    on_both("runsteps", |open, _| {
        let (mut a, mut b) = (open(), open());
        assert!(a.claim_run("r1", "both", 1_000, 1_000, "a:1").unwrap());
        assert!(!b.claim_run("r2", "both", 1_000, 1_001, "b:2").unwrap());
        assert_eq!(b.run_at("both", 1_000).unwrap().unwrap().id, "r1");
        let tcp = key(0, "tcp A to B", "A");
        let ping = key(1, "ping B to A", "B");
        assert!(a.claim_step(tcp, "a:1", 1_000).unwrap());
        assert!(!b.claim_step(tcp, "b:2", 1_001).unwrap(), "claimed twice");
        assert!(
            !b.miss_step(tcp, "late", 1_002).unwrap(),
            "a claimed step is not missed"
        );
        assert!(b.claim_step(ping, "b:2", 1_001).unwrap());
        b.set_step("r1", 1, StepState::Running, None, 1_002)
            .unwrap();
        b.set_step("r1", 1, StepState::Done, Some("result x"), 1_003)
            .unwrap();
        // Ended: a late interruption by a sweep does not undo it.
        a.set_step("r1", 1, StepState::Interrupted, Some("gone"), 1_004)
            .unwrap();
        a.set_step("r1", 0, StepState::Failed, Some("refused"), 1_005)
            .unwrap();
        let steps = a.run_steps("r1").unwrap();
        let seen: Vec<_> = steps
            .iter()
            .map(|s| (s.step, s.holder.as_deref(), s.state, s.detail.as_deref()))
            .collect();
        assert_eq!(
            seen,
            [
                (0, Some("a:1"), StepState::Failed, Some("refused")),
                (1, Some("b:2"), StepState::Done, Some("result x")),
            ]
        );
        assert!(a
            .settle_run("r1", RunState::Failed, Some("x"), 1_006)
            .unwrap());
        assert!(!b.settle_run("r1", RunState::Done, None, 1_007).unwrap());
        let run = b.run_at("both", 1_000).unwrap().unwrap();
        assert_eq!(
            (run.state, run.reason.as_deref()),
            (RunState::Failed, Some("x"))
        );
        // A step nobody claimed is recorded missed, with why, holder-less.
        let other = StepKey {
            run_id: "r9",
            ..key(0, "ping B to A", "B")
        };
        assert!(a.miss_step(other, "no scheduler as B", 2_000).unwrap());
        let missed = &a.run_steps("r9").unwrap()[0];
        assert_eq!(
            (missed.state, missed.holder.as_deref()),
            (StepState::Missed, None)
        );
    });
}

/// A read-only store (a replica's) migrates nothing: an archive not yet
/// at this build's schema is refused, naming what to do, and left as it
/// was; once its primary is migrated, it opens.
#[test]
fn a_read_only_store_migrates_nothing_and_wants_this_builds_schema() {
    let dir = std::env::temp_dir().join(format!("sonde-readonly-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("a.db").display().to_string();
    // An empty database: no sonde_schema table at all.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE other (x INTEGER)")
        .unwrap();
    assert!(matches!(
        Store::open_read_only(&path),
        Err(ArchiveError::ReadOnlyVersion { found: 0, .. })
    ));
    let tables: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 1, "nothing was made in a read-only open");
    // An archive at an older version: refused, saying so.
    let mut store = Store::open(&path).unwrap();
    let current = store.schema_version().unwrap();
    drop(store);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("DELETE FROM sonde_schema WHERE version = ?1", [current])
        .unwrap();
    match Store::open_read_only(&path) {
        Err(e @ ArchiveError::ReadOnlyVersion { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("read-only") && text.contains("open the primary"),
                "{text}"
            );
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("an archive one version behind opened read-only"),
    }
    // Its primary migrated (the version row back as a migration leaves it).
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("INSERT INTO sonde_schema (version) VALUES (?1)", [current])
        .unwrap();
    let mut read = Store::open_read_only(&path).unwrap();
    assert_eq!(read.schema_version().unwrap(), current);
    let _ = std::fs::remove_dir_all(&dir);
}
