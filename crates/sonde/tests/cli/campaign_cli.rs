//! `sonde campaign` and `sonde results export|import|stats` with real
//! tests on loopback against a real `sonde serve`, into SQLite files and
//! the real PostgreSQL; iperf3's own `-J` output imported; and the daemon
//! killed with -9 in the middle of a run and restarted.

use crate::common;
use common::ready::wait_until;
use common::{sonde, stderr, Iperf3Server, ServerProc};
use sonde_archive::{RunState, Store};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

fn dir(name: &str) -> common::TempDir {
    let d = common::TempDir::new(&format!("campaign-{name}"));
    d
}

/// A plan of TCP, slow UDP, ping and a trace toward ::1 on `port`.
fn plan(name: &str, port: u16, schedule: &str, tcp_s: u32) -> String {
    format!(
        "name = \"{name}\"\n[labels]\npath = \"loopback\"\n[schedule]\n{schedule}\n\
         [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[endpoint]]\nname = \"B\"\naddress = \"::1\"\n\
         [[step]]\nname = \"tcp A to B\"\ntest = \"tcp\"\nport = {port}\ntime_s = {tcp_s}\n\
         [[step]]\ntest = \"udp\"\nport = {port}\ntime_s = 1\nbitrate_bps = \"1M\"\ndirection = \"reverse\"\n\
         [[step]]\ntest = \"ping\"\ncount = 3\ninterval_s = 0.2\n\
         [[step]]\ntest = \"trace\"\nqueries = 1\n"
    )
}

fn ok(args: &[&str]) -> String {
    let out = sonde().args(args).output().unwrap();
    assert!(out.status.success(), "sonde {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_plan_runs_on_its_schedule_and_every_result_is_kept_exported_and_counted() {
    let d = dir("run");
    let server = ServerProc::start(&["--no-reflector"]);
    let path = d.join("loop.toml");
    std::fs::write(
        &path,
        plan("loop", server.port, "repeat = \"PT5S\"\nmax_runs = 2", 1),
    )
    .unwrap();
    let archive = format!("--archive={}", d.join("a.db").display());
    let out = ok(&[
        "campaign",
        "run",
        path.to_str().unwrap(),
        &archive,
        "--label",
        "night=1",
    ]);
    assert!(out.contains("[1/4] tcp A to B"), "{out}");
    assert!(out.contains("run done: 4 results kept (8 so far)"), "{out}");
    assert!(out.contains("the schedule has ended"), "{out}");

    let status = ok(&["campaign", "status", &archive]);
    assert!(status.contains("runs: 2 done"), "{status}");
    assert!(status.contains("next: none"), "{status}");

    // Stats of what ran: UDP's PDR, two TCP results.
    let stats = ok(&[
        "results", &archive, "stats", "--metric", "pdr", "--by", "test", "-J",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap();
    let udp = &v["groups"][0];
    assert_eq!(
        (udp["group"].as_str(), udp["n"].as_u64()),
        (Some("udp"), Some(2))
    );
    // Never over 100 % (nothing arrives that was not sent); on loopback
    // at least 90 % (a receiver stalled on a loaded machine may lose up
    // to a tenth: the machine's loss, not sonde's).
    let pdr = udp["mean"].as_f64().unwrap();
    assert!((90.0..=100.0).contains(&pdr), "{udp}");
    let by_step = ok(&["results", &archive, "stats", "--by", "label:step"]);
    assert!(by_step.contains("tcp A to B"), "{by_step}");
    // The run's own label, on every result beside the plan's.
    for label in ["night=1", "path=loopback"] {
        let listed = ok(&["results", &archive, "list", "--label", label, "-J"]);
        let docs: serde_json::Value = serde_json::from_str(&listed).unwrap();
        assert_eq!(docs.as_array().unwrap().len(), 8, "{label}");
    }

    // CSV: one row per result, and per interval, with units in the names.
    let csv = ok(&["results", &archive, "export", "--campaign", "loop"]);
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("id,test,source,target"), "{header}");
    assert!(header.contains("throughput_bps") && header.contains("rtt_p50_ms"));
    assert_eq!(lines.count(), 8);
    let per_interval = ok(&[
        "results", &archive, "export", "--per", "interval", "--test", "tcp",
    ]);
    let rows: Vec<&str> = per_interval.lines().collect();
    assert!(rows[0].starts_with("result_id,test,target,direction,size_bytes,start_s"));
    assert_eq!(rows.len() - 1, 2, "two 1 s TCP tests: {per_interval}");

    // NDJSON out, into a PostgreSQL archive, twice: kept once.
    let nd = d.join("all.ndjson");
    ok(&[
        "results",
        &archive,
        "export",
        "--format",
        "ndjson",
        "-o",
        nd.to_str().unwrap(),
    ]);
    let schema = format!("sonde_c{}", std::process::id());
    let pg =
        format!("--archive=postgres://root@127.0.0.1:5432/test?sslmode=disable&schema={schema}");
    let first = ok(&["results", &pg, "import", nd.to_str().unwrap()]);
    assert!(first.contains("8 imported, 0 already kept"), "{first}");
    let again = ok(&["results", &pg, "import", nd.to_str().unwrap()]);
    assert!(again.contains("0 imported, 8 already kept"), "{again}");
    let listed = ok(&["results", &pg, "list", "-J"]);
    let docs: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(docs.as_array().unwrap().len(), 8);
    // The trace came through the campaign and PostgreSQL whole.
    let traces = ok(&["results", &pg, "list", "--test", "trace", "-J"]);
    let traces: serde_json::Value = serde_json::from_str(&traces).unwrap();
    assert_eq!(traces.as_array().unwrap().len(), 2);
    let shown = ok(&["results", &pg, "show", traces[0]["id"].as_str().unwrap()]);
    assert!(shown.lines().any(|l| l.starts_with(" 1  ::1  ")), "{shown}");
    let mut admin =
        postgres::Client::connect("postgres://root@127.0.0.1:5432/test", postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}

#[test]
fn a_bad_plan_is_a_usage_error_that_names_the_step() {
    let d = dir("bad");
    let path = d.join("bad.toml");
    std::fs::write(
        &path,
        plan("bad", 5201, "repeat = \"PT1H\"", 1).replace("time_s = 1\n", "time_s = \"soon\"\n"),
    )
    .unwrap();
    let out = sonde()
        .args(["campaign", "check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    // The file, the line of the key, the step and the key.
    assert!(
        e.contains("bad.toml: plan: line 16: step 1: time_s:") && e.contains("soon"),
        "{e}"
    );
    // The campaign's own label keys are refused as --label.
    let fine = d.join("fine.toml");
    std::fs::write(&fine, plan("fine", 5201, "repeat = \"PT1H\"", 1)).unwrap();
    let out = sonde()
        .args([
            "campaign",
            "run",
            fine.to_str().unwrap(),
            "--label",
            "step=x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--label step=x"), "{}", stderr(&out));
    let out = sonde()
        .args(["campaign", "run", path.to_str().unwrap(), "--as", "C"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn iperf3_json_joins_the_archive_with_iperf3s_own_figures() {
    let d = dir("iperf3");
    let server = Iperf3Server::start();
    let mut files = Vec::new();
    for (name, extra) in [("tcp", vec![]), ("udp", vec!["-u", "-b", "2M", "-R"])] {
        let out = std::process::Command::new("iperf3")
            .args(["-c", "::1", "-p", &server.port.to_string(), "-t", "2", "-J"])
            .args(&extra)
            .output()
            .expect("iperf3 (installed by scripts/system-deps.sh)");
        assert!(out.status.success());
        let file = d.join(format!("{name}.json"));
        std::fs::write(&file, &out.stdout).unwrap();
        files.push((
            file,
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(),
        ));
    }
    let archive = format!("--archive={}", d.join("a.db").display());
    let names: Vec<&str> = files.iter().map(|(f, _)| f.to_str().unwrap()).collect();
    let out = ok(&[&["results", &archive, "import"], names.as_slice()].concat());
    assert_eq!(out.matches("1 imported").count(), 2, "{out}");
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&["results", &archive, "list", "-J"])).unwrap();
    for (_, iperf) in &files {
        let udp = iperf["start"]["test_start"]["protocol"] == "UDP";
        let doc = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["test"] == if udp { "udp" } else { "tcp" })
            .unwrap();
        let end = &iperf["end"];
        let (section, want) = if udp {
            let sum = end.get("sum_received").unwrap_or(&end["sum"]);
            ("reverse", sum["bits_per_second"].as_f64().unwrap())
        } else {
            (
                "forward",
                end["sum_received"]["bits_per_second"].as_f64().unwrap(),
            )
        };
        let got = doc["summary"][section]["throughput_bps"].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1.0,
            "{section}: {got} against iperf3's {want}"
        );
        assert_eq!(
            doc["intervals"].as_array().unwrap().len(),
            iperf["intervals"].as_array().unwrap().len()
        );
    }
    // Not an iperf3 or sonde document: named, and the others are kept.
    let junk = d.join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let out = sonde()
        .args(["results", &archive, "import", junk.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("junk.json: document 1"),
        "{}",
        stderr(&out)
    );
}

/// `sonde serve` on a free port with `--campaigns DIR`; its stderr in a file.
fn daemon(port: u16, campaigns: &Path, archive: &str, log: &Path) -> Child {
    sonde()
        .args([
            "serve",
            "--bind",
            "::1",
            "-p",
            &port.to_string(),
            "--no-reflector",
        ])
        .args([
            "--campaigns",
            campaigns.to_str().unwrap(),
            "--archive",
            archive,
        ])
        .env("SONDE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_daemon_killed_mid_run_loses_nothing_finished_and_runs_nothing_twice() {
    let d = dir("kill");
    let port = free_port();
    let plans = d.join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    // Each run: 3 s of TCP, 1 s of UDP, pings, a trace; one every 8 s, 3
    // in all.
    std::fs::write(
        plans.join("k.toml"),
        plan(
            "k",
            port,
            "repeat = \"PT8S\"\nmax_runs = 3\nslip = \"PT3S\"",
            3,
        ),
    )
    .unwrap();
    let archive = d.join("a.db").display().to_string();
    let mut first = daemon(port, &plans, &archive, &d.join("first.log"));
    // Kill it in the middle of run 1: its TCP result kept, UDP running.
    wait_until("run 1's first result", Duration::from_secs(30), || {
        Store::open(&archive)
            .and_then(|mut s| s.count_results())
            .is_ok_and(|n| n >= 1)
    });
    let log = d.join("first.log");
    wait_until("run 1's UDP step", Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("UDP test accepted"))
    });
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let mut store = Store::open(&archive).unwrap();
    let kept_before = store.count_results().unwrap();
    let runs = store.runs("k", 10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].state, RunState::Running, "killed: nobody ended it");
    let killed = runs[0].id.clone();

    let mut second = daemon(port, &plans, &archive, &d.join("second.log"));
    wait_until("the schedule's end", Duration::from_secs(60), || {
        let runs = Store::open(&archive)
            .and_then(|mut s| s.runs("k", 10))
            .unwrap_or_default();
        runs.len() == 3 && runs.iter().all(|r| r.state != RunState::Running)
    });
    let _ = second.kill();
    let _ = second.wait();

    let runs = store.runs("k", 10).unwrap();
    let killed_run = runs.iter().find(|r| r.id == killed).unwrap();
    assert_eq!(killed_run.state, RunState::Interrupted, "{runs:?}");
    assert!(killed_run
        .reason
        .as_deref()
        .unwrap()
        .contains("ended before it did"));
    // One row per occurrence, three occurrences: nothing ran twice.
    let mut at: Vec<i64> = runs.iter().map(|r| r.scheduled_ns).collect();
    at.sort();
    at.dedup();
    assert_eq!(at.len(), 3, "{runs:?}");
    for r in runs.iter().filter(|r| r.id != killed) {
        assert!(
            matches!(r.state, RunState::Done | RunState::Missed),
            "{r:?}"
        );
        if r.state == RunState::Missed {
            assert!(
                r.reason.as_deref().unwrap().contains("not running"),
                "{r:?}"
            );
        }
    }
    // Everything finished before the kill is still there, with its run.
    let after = store.count_results().unwrap();
    assert!(after >= kept_before);
    let filter = sonde_archive::ResultFilter {
        campaign: Some("k".into()),
        ..Default::default()
    };
    let of_killed = store.list_results(&filter).unwrap().len();
    assert!(of_killed as i64 >= kept_before);
    let done = runs.iter().filter(|r| r.state == RunState::Done).count();
    assert_eq!(after, kept_before + 4 * done as i64, "{runs:?}");
    let status = ok(&["campaign", "status", &format!("--archive={archive}")]);
    assert!(status.contains("1 interrupted"), "{status}");
}
