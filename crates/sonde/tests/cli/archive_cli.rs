//! `--archive` on tcp, udp and ping, `sonde results list|show`, and the
//! quick start keeping its results: real runs on loopback into a SQLite
//! file and into the real PostgreSQL on this machine.

use crate::common;
use common::{sonde, stderr, ServerProc};
use std::path::Path;

fn dir(name: &str) -> common::TempDir {
    let d = common::TempDir::new(&format!("archive-cli-{name}"));
    d
}

fn run(args: &[&str], xdg: &Path) -> std::process::Output {
    sonde()
        .args(args)
        .env("XDG_DATA_HOME", xdg)
        .output()
        .unwrap()
}

fn ids(list: &std::process::Output) -> Vec<String> {
    assert!(list.status.success(), "{}", stderr(list));
    let docs: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    docs.as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_test_kept_is_listed_and_shown_as_it_was_printed() {
    let xdg = dir("default");
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let tcp = run(
        &["tcp", "::1", "-p", &port, "-t", "1s", "--archive", "-J"],
        &xdg,
    );
    assert!(tcp.status.success(), "{}", stderr(&tcp));
    let printed: serde_json::Value = serde_json::from_slice(&tcp.stdout).unwrap();
    let udp = run(&["udp", "::1", "-p", &port, "-t", "1s", "--archive"], &xdg);
    assert!(udp.status.success(), "{}", stderr(&udp));
    let ping = run(&["ping", "::1", "-c", "2", "-i", "0.2", "--archive"], &xdg);
    assert!(ping.status.success(), "{}", stderr(&ping));
    // The default archive is $XDG_DATA_HOME/sonde/sonde.db.
    assert!(xdg.join("sonde/sonde.db").exists());
    let all = ids(&run(&["results", "list", "-J"], &xdg));
    assert_eq!(all.len(), 3);
    let tcp_only = ids(&run(&["results", "list", "--test", "tcp", "-J"], &xdg));
    assert_eq!(tcp_only, [printed["id"].as_str().unwrap()]);
    // `show -J` gives back the document printed; `show` its summary.
    let shown = run(&["results", "show", &tcp_only[0], "-J"], &xdg);
    let back: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(back, printed);
    let text = run(&["results", "show", &tcp_only[0]], &xdg);
    assert!(String::from_utf8_lossy(&text.stdout).contains("goodput"));
    // Each opens with what it is: test, id, host, start; a ping's summary
    // without the blank line it has when printed after its replies.
    let ping_only = ids(&run(&["results", "list", "--test", "ping", "-J"], &xdg));
    let text = run(&["results", "show", &ping_only[0]], &xdg);
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!("ping {} to ::1, started 20", ping_only[0])),
        "{text}"
    );
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("--- ::1 ping statistics")),
        "{text}"
    );
    // Bad ids are usage errors; unknown ones failures naming the archive.
    assert_eq!(
        run(&["results", "show", "nope"], &xdg).status.code(),
        Some(2)
    );
    let missing = run(
        &["results", "show", "00000000-0000-4000-8000-000000000000"],
        &xdg,
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("sonde.db"),
        "{}",
        stderr(&missing)
    );
    let _ = std::fs::remove_dir_all(&xdg);
}

#[test]
fn a_central_postgresql_archive_takes_results_too() {
    let xdg = dir("pg");
    let schema = format!("sonde_cli{}", std::process::id());
    let url = format!("postgres://root@127.0.0.1:5432/test?sslmode=disable&schema={schema}");
    let server = ServerProc::start(&["--no-reflector"]);
    let out = run(
        &[
            "udp",
            "::1",
            "-p",
            &server.port.to_string(),
            "-t",
            "1s",
            &format!("--archive={url}"),
        ],
        &xdg,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let archive = format!("--archive={url}");
    let listed = ids(&run(
        &["results", &archive, "list", "--test", "udp", "-J"],
        &xdg,
    ));
    assert_eq!(listed.len(), 1);
    let mut admin =
        postgres::Client::connect("postgres://root@127.0.0.1:5432/test", postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
    let _ = std::fs::remove_dir_all(&xdg);
}

#[test]
fn the_quick_start_keeps_every_result_and_says_where() {
    let xdg = dir("quickstart");
    let file = xdg.join("qs.db");
    let archive = format!("--archive={}", file.display());
    let out = run(&["quickstart", "-t", "1s", &archive], &xdg);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap();
    let kept: usize = last.split_whitespace().next().unwrap().parse().unwrap();
    assert!(
        last.contains(&format!("results kept in {}", file.display()))
            && last.contains(&format!("sonde results {archive} list")),
        "{last}"
    );
    // 4 TCP, 2 UDP, and a ping series per family and protocol.
    assert!(kept >= 8, "{last}");
    let listed = ids(&run(&["results", &archive, "list", "-J"], &xdg));
    assert_eq!(listed.len(), kept);
    let _ = std::fs::remove_dir_all(&xdg);
}

/// `sonde ARGS` with `$SONDE_ARCHIVE` set to `archive` (and the default
/// data directory elsewhere).
fn with_env(args: &[&str], xdg: &Path, archive: &Path) -> std::process::Output {
    sonde()
        .args(args)
        .env("XDG_DATA_HOME", xdg)
        .env("SONDE_ARCHIVE", archive)
        .output()
        .unwrap()
}

#[test]
fn the_archive_is_named_as_a_user_types_it() {
    let d = dir("named");
    let xdg = d.join("xdg");
    let file = d.join("my archive.db");
    let f = file.to_str().unwrap();
    // A path after a space where '=' belongs: a usage error that says
    // what was meant, before the path is taken for a host or a name.
    for args in [
        vec!["udp", "::1", "--archive", f],
        vec!["campaign", "status", "--archive", f],
        vec!["status", "--archive", f],
    ] {
        let out = run(&args, &xdg);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = stderr(&out);
        assert!(
            e.contains(&format!("--archive={f}")) && e.contains(&format!("--archive-to {f}")),
            "{args:?}: {e}"
        );
    }
    assert!(!file.exists(), "nothing was written");
    // --archive-to takes it after a space, with a label kept beside it.
    let ping = run(
        &[
            "ping",
            "::1",
            "-c",
            "2",
            "-i",
            "0.2",
            "--archive-to",
            f,
            "--label",
            "path=open",
        ],
        &xdg,
    );
    assert!(ping.status.success(), "{}", stderr(&ping));
    // Read commands take it after the subcommand as well as before.
    let listed = ids(&run(&["results", "list", "--archive-to", f, "-J"], &xdg));
    assert_eq!(listed.len(), 1);
    let labelled = ids(&run(
        &[
            "results",
            "list",
            "--label",
            "path=open",
            "--archive-to",
            f,
            "-J",
        ],
        &xdg,
    ));
    assert_eq!(labelled, listed);
    let other = ids(&run(
        &[
            "results",
            &format!("--archive={f}"),
            "list",
            "--label",
            "path=ipsec",
            "-J",
        ],
        &xdg,
    ));
    assert!(other.is_empty());
    // A label with nowhere to keep it is a usage error naming both.
    let out = run(&["ping", "::1", "-c", "1", "--label", "path=open"], &xdg);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--archive"), "{}", stderr(&out));
    // $SONDE_ARCHIVE is the default archive of every command: a test kept
    // with --archive alone goes there, and `results` and `status` read it.
    let env_db = d.join("env.db");
    let ping = with_env(&["ping", "::1", "-c", "1", "--archive"], &xdg, &env_db);
    assert!(ping.status.success(), "{}", stderr(&ping));
    assert!(env_db.exists() && !xdg.join("sonde/sonde.db").exists());
    let listed = with_env(&["results", "list", "-J"], &xdg, &env_db);
    assert_eq!(ids(&listed).len(), 1);
    let status = with_env(&["status"], &xdg, &env_db);
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("env.db"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
}

#[test]
fn a_kept_bidirectional_test_is_drawn_over_time_a_line_each_way() {
    let d = dir("overtime");
    let xdg = d.join("xdg");
    let db = d.join("a.db");
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let tcp = run(
        &[
            "tcp",
            "::1",
            "-p",
            &port,
            "-t",
            "3s",
            "--bidir",
            "--archive-to",
            db.to_str().unwrap(),
            "-J",
        ],
        &xdg,
    );
    assert!(tcp.status.success(), "{}", stderr(&tcp));
    let doc: serde_json::Value = serde_json::from_slice(&tcp.stdout).unwrap();
    let id = doc["id"].as_str().unwrap();
    let intervals = doc["intervals"].as_array().unwrap().len();
    assert!(intervals >= 3, "{intervals} intervals");
    // `results show ID --chart FILE`, FILE read back.
    let chart = |name: &str| {
        let path = d.join(name);
        let db = db.to_str().unwrap();
        let args = [
            "results",
            "show",
            id,
            "--archive-to",
            db,
            "--chart",
            path.to_str().unwrap(),
        ];
        let shown = run(&args, &xdg);
        assert!(shown.status.success(), "{}", stderr(&shown));
        std::fs::read(&path).unwrap()
    };
    let svg = String::from_utf8(chart("t.svg")).unwrap();
    // Each panel (throughput, and what else TCP measured) a line forward
    // and a line reverse, a point per interval kept: at least two panels
    // of two such lines (the axes' and grid's lines have two points).
    assert!(svg.contains("forward") && svg.contains("reverse"), "{svg}");
    assert!(svg.contains("throughput (Mbit/s)"));
    let lines = common::svg::polyline_points(&svg);
    let data = lines.iter().filter(|n| **n == intervals).count();
    assert!(data >= 4 && data % 2 == 0, "{lines:?} vs {intervals}");
    // As PNG by the file's name.
    let png = resvg::tiny_skia::Pixmap::decode_png(&chart("t.png"));
    assert!(png.is_ok_and(|p| p.width() > 500), "a PNG");

    // `report --result ID`: a row per direction, never their sum, and the
    // same chart: its throughput panel a line each way, a point per
    // interval.
    let args = [
        "report",
        "--result",
        id,
        "--archive-to",
        db.to_str().unwrap(),
        "--format",
        "json",
    ];
    let out = run(&args, &xdg);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["title"], format!("result {id}"));
    let rows: Vec<&str> = report["tables"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r[0].as_str())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].ends_with("· forward") && rows[1].ends_with("· reverse"),
        "{rows:?}"
    );
    let panel = &report["figures"][0]["panels"][0];
    let points: Vec<usize> = panel["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["points"].as_array().unwrap().len())
        .collect();
    assert_eq!(points, [intervals, intervals], "{panel}");
    // A result that is not there is named.
    let missing = "00000000-0000-4000-8000-000000000000";
    let out = run(
        &[
            "report",
            "--result",
            missing,
            "--archive-to",
            db.to_str().unwrap(),
        ],
        &xdg,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(missing), "{}", stderr(&out));
}

#[test]
fn prune_drops_the_months_older_than_it_keeps_and_nothing_newer() {
    let xdg = dir("prune");
    let schema = format!("sonde_prune{}", std::process::id());
    let pg = format!("postgres://root@127.0.0.1:5432/test?sslmode=disable&schema={schema}");
    let file = xdg.join("prune.db");
    // A real ping, and the same result as if it had run in January 2020
    // (its start moved, another id).
    let out = run(&["ping", "::1", "-c", "3", "-i", "10ms", "-J"], &xdg);
    assert!(out.status.success(), "{}", stderr(&out));
    let now: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut old = now.clone();
    old["start"] = "2020-01-15T10:00:00Z".into();
    let id = now["id"].as_str().unwrap();
    old["id"] = format!("{}0", &id[..id.len() - 1]).into();
    if old["id"] == now["id"] {
        old["id"] = format!("{}1", &id[..id.len() - 1]).into();
    }
    let docs = xdg.join("two.json");
    std::fs::write(&docs, serde_json::to_string(&[&now, &old]).unwrap()).unwrap();
    for archive in [
        format!("--archive={}", file.display()),
        format!("--archive={pg}"),
    ] {
        let out = run(
            &["results", &archive, "import", docs.to_str().unwrap()],
            &xdg,
        );
        assert!(out.status.success(), "{archive}: {}", stderr(&out));
        let out = run(
            &["results", &archive, "prune", "--keep-months", "2", "-J"],
            &xdg,
        );
        assert!(out.status.success(), "{archive}: {}", stderr(&out));
        let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            said["months"],
            serde_json::json!(["2020-01"]),
            "{archive}: {said}"
        );
        let listed = ids(&run(&["results", &archive, "list", "-J"], &xdg));
        assert_eq!(listed, [now["id"].as_str().unwrap()], "{archive}");
        // Again: nothing is left to drop, and it says so.
        let out = run(&["results", &archive, "prune", "--keep-months", "2"], &xdg);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("nothing before"),
            "{archive}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        // A month count of 0 would drop this month too: a usage error.
        let out = run(&["results", &archive, "prune", "--keep-months", "0"], &xdg);
        assert_eq!(out.status.code(), Some(2), "{archive}: {}", stderr(&out));
        assert!(stderr(&out).contains("--keep-months"), "{}", stderr(&out));
    }
    let mut admin =
        postgres::Client::connect("postgres://root@127.0.0.1:5432/test", postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}
