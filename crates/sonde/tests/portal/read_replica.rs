//! `[http] archive_read`: the API reads from a streaming replica while
//! every result goes to the primary. Against a real PostgreSQL primary on
//! 127.0.0.1:5434 and its hot standby on 5435 (scripts/services.sh makes
//! them with initdb and pg_basebackup): with the standby's replay paused,
//! a result kept on the primary is not in the API's answers, and is there
//! once replay resumes.

use crate::common;
use common::http::{get, http_port, json};
use common::ready::wait_until;
use common::{sonde, stderr, ServerProc};
use std::time::Duration;

const PRIMARY: &str = "postgres://root@127.0.0.1:5434/test";
const STANDBY: &str = "postgres://root@127.0.0.1:5435/test";
const SECRET: &str = "replica-password-not-to-be-seen";

/// The standby's replay resumed when the test ends, however it ends.
struct Replay(postgres::Client);

impl Replay {
    fn pause(&mut self) {
        self.0
            .batch_execute("SELECT pg_wal_replay_pause()")
            .unwrap();
    }
    fn resume(&mut self) {
        self.0
            .batch_execute("SELECT pg_wal_replay_resume()")
            .unwrap();
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        let _ = self.0.batch_execute("SELECT pg_wal_replay_resume()");
    }
}

fn ping_kept_in(archive: &str) {
    let out = sonde()
        .args(["ping", "::1", "-c", "2", "-i", "0.2"])
        .arg(format!("--archive={archive}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

fn results_served(port: u16) -> Option<usize> {
    let (status, body) = get(port, "/api/v1/results?test=ping");
    (status == 200).then(|| json(&body).as_array().map_or(0, Vec::len))
}

#[test]
fn the_api_reads_from_the_replica_and_results_go_to_the_primary() {
    let schema = format!("sonde_replica{}", std::process::id());
    let mut admin = postgres::Client::connect(PRIMARY, postgres::NoTls)
        .expect("PostgreSQL primary on 127.0.0.1:5434 (scripts/services.sh)");
    let drop_schema = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
    admin.batch_execute(&drop_schema).unwrap();
    let primary = format!("{PRIMARY}?sslmode=disable&schema={schema}");
    let standby = format!("{STANDBY}?sslmode=disable&schema={schema}");
    // The agent is given the replica's URL with a password (trust auth
    // ignores it): no answer and no log line may show it.
    let standby_secret = standby.replace("root@", &format!("root:{SECRET}@"));
    let mut replay = Replay(
        postgres::Client::connect(STANDBY, postgres::NoTls)
            .expect("PostgreSQL standby on 127.0.0.1:5435 (scripts/services.sh)"),
    );

    ping_kept_in(&primary);
    let server = ServerProc::start(&[
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        &primary,
        "--archive-read",
        &standby_secret,
    ]);
    let port = http_port(&server);
    // The schema and the first result reach the standby by replication.
    wait_until(
        "the first result on the replica",
        Duration::from_secs(20),
        || results_served(port) == Some(1),
    );
    let (status, body) = get(port, "/api/v1/info");
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(SECRET), "{body}");
    assert_eq!(
        json(&body)["archive_read"],
        standby.replace("root@", "root:***@"),
        "{body}"
    );

    // Replay paused: what the primary keeps now is not served.
    replay.pause();
    ping_kept_in(&primary);
    let on_primary = sonde_archive::Store::open(&primary)
        .unwrap()
        .list_results(&sonde_archive::ResultFilter::default())
        .unwrap()
        .len();
    assert_eq!(on_primary, 2, "the primary keeps both results");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        results_served(port),
        Some(1),
        "served from the paused replica"
    );
    // Resumed: the replica catches up and serves it.
    replay.resume();
    wait_until(
        "the second result on the replica",
        Duration::from_secs(20),
        || results_served(port) == Some(2),
    );
    assert!(!server.log().contains(SECRET), "{}", server.log());
    drop(server);
    drop(replay);
    admin.batch_execute(&drop_schema).unwrap();
}

#[test]
fn a_read_archive_that_is_not_postgresql_is_refused() {
    let out = sonde()
        .args(["serve", "--no-reflector", "--http", "[::1]:0"])
        .args(["--archive-read", "/var/tmp/replica.db"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("http.archive_read"), "{err}");
    assert!(err.contains("not a postgres:// URL"), "{err}");
}
