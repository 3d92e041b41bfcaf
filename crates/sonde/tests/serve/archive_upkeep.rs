//! `[archive]` in the daemon: retention drops the months older than
//! `keep_months` when the daemon starts, and a bad value is refused by
//! its key.

use crate::common;
use common::{sonde, stderr, ServerProc};

#[test]
fn the_daemon_drops_the_months_older_than_it_keeps() {
    let dir = common::TempDir::new("archive-upkeep");
    let archive = dir.join("sonde.db");
    let with_archive = |args: &[&str]| {
        sonde()
            .args(args)
            .env("SONDE_ARCHIVE", &archive)
            .output()
            .unwrap()
    };
    // A real ping kept now, and the same result as if it had run in
    // March 2019 (its start moved, another id).
    let out = with_archive(&["ping", "::1", "-c", "3", "-i", "10ms", "-J"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let now: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut old = now.clone();
    old["start"] = "2019-03-31T23:59:59Z".into();
    let id = now["id"].as_str().unwrap();
    let last = if id.ends_with('0') { "1" } else { "0" };
    old["id"] = format!("{}{last}", &id[..id.len() - 1]).into();
    let docs = dir.join("two.json");
    std::fs::write(&docs, serde_json::to_string(&[&now, &old]).unwrap()).unwrap();
    let out = with_archive(&["results", "--archive", "import", docs.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = |s: &str| {
        let out = with_archive(&["results", "--archive", "list", "-J"]);
        assert!(out.status.success(), "{s}: {}", stderr(&out));
        let docs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        docs.as_array().unwrap().len()
    };
    assert_eq!(listed("before"), 2);

    let config = dir.join("serve.toml");
    std::fs::write(&config, "[archive]\nkeep_months = 1\n").unwrap();
    let mut cmd = sonde();
    cmd.env("SONDE_ARCHIVE", &archive);
    let mut server = ServerProc::start_with(
        cmd,
        &["--bind", "::1"],
        &["--no-reflector", "--config", config.to_str().unwrap()],
    );
    assert!(
        server.wait_for_log("archive retention dropped"),
        "{}",
        server.log()
    );
    assert!(server.log().contains("2019-03"), "{}", server.log());
    server.terminate();
    assert_eq!(listed("after"), 1);

    // Over a century is a mistake, named by its key (exit 2).
    std::fs::write(&config, "[archive]\nkeep_months = 5000\n").unwrap();
    let out = with_archive(&[
        "serve",
        "--no-reflector",
        "-p",
        "0",
        "--bind",
        "::1",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("archive.keep_months"),
        "{}",
        stderr(&out)
    );
}
