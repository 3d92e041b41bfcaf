//! `sonde serve --user NAME`: started as root, the server becomes NAME
//! holding CAP_NET_RAW alone (and CAP_NET_BIND_SERVICE for a port below
//! 1024), as /proc says of every one of its threads, and still serves
//! every kind of test: sonde's TCP and UDP, iperf3's, STAMP on its low
//! port, and its own campaign's ping and trace, whose ICMP sockets need
//! CAP_NET_RAW, kept in an archive only the user can write.

use crate::common;
use common::iperf3_client::json;
use common::{sonde, status_field as field, ServerProc};
use std::process::Command;

/// The capabilities' bits (linux/capability.h).
const NET_BIND_SERVICE: u64 = 1 << 10;
const NET_RAW: u64 = 1 << 13;

fn ok(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_server_run_as_nobody_holds_only_its_capabilities_and_serves_every_test() {
    let dir = common::TempDir::new("serve-user");
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let archive = dir.join("sonde.db");
    let plans = dir.join("plans");
    std::fs::create_dir(&plans).unwrap();
    std::fs::write(
        plans.join("icmp.toml"),
        "name = \"icmp\"\n[schedule]\nrepeat = \"PT1H\"\nmax_runs = 1\n\
         [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[endpoint]]\nname = \"B\"\naddress = \"::1\"\n\
         [[step]]\ntest = \"ping\"\ncount = 3\ninterval_s = 0.05\n\
         [[step]]\ntest = \"trace\"\nqueries = 1\n",
    )
    .unwrap();
    // A reflector port below 1024 that no other test takes.
    let server = ServerProc::start(&[
        "--user",
        "nobody",
        "--reflector-port",
        "979",
        "--campaigns",
        plans.to_str().unwrap(),
        "--archive",
        archive.to_str().unwrap(),
    ]);
    assert!(server.wait_for_log("running as nobody"), "{}", server.log());
    let tasks = std::fs::read_dir(format!("/proc/{}/task", server.pid())).unwrap();
    let mut seen = 0;
    for task in tasks {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap();
        assert_eq!(field(&status, "Uid"), "65534\t65534\t65534\t65534");
        assert_eq!(field(&status, "Gid"), "65534\t65534\t65534\t65534");
        assert_eq!(field(&status, "Groups"), "65534");
        assert_eq!(field(&status, "NoNewPrivs"), "1");
        let caps = |k| u64::from_str_radix(field(&status, k), 16).unwrap();
        for k in ["CapPrm", "CapEff", "CapBnd"] {
            assert_eq!(
                caps(k),
                NET_RAW | NET_BIND_SERVICE,
                "{k} {:#x}: CAP_NET_RAW and CAP_NET_BIND_SERVICE only",
                caps(k)
            );
        }
        assert_eq!((caps("CapInh"), caps("CapAmb")), (0, 0));
        seen += 1;
    }
    assert!(seen >= 1);

    let port = server.port.to_string();
    let tcp = ok(sonde().args(["tcp", "::1", "-p", &port, "-t", "1", "-J"]));
    assert!(
        tcp["summary"]["forward"]["received_bytes"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{tcp}"
    );
    let udp = ok(sonde().args(["udp", "127.0.0.1", "-p", &port, "-b", "2M", "-t", "1", "-J"]));
    assert!(
        udp["summary"]["forward"]["received_packets"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{udp}"
    );
    let iperf3 = json("iperf3", "::1", server.port, &["-t", "1"]);
    assert!(iperf3["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0) > 0);
    let stamp = ok(sonde().args([
        "ping", "::1", "--proto", "udp", "-p", "979", "-c", "5", "-i", "10ms", "-J",
    ]));
    assert_eq!(
        stamp["summary"]["round_trip"]["received_packets"], 5,
        "{stamp}"
    );
    // The server's own ICMP: its campaign's ping and trace, both kept.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let kept = || {
        sonde_archive::Store::open(archive.to_str().unwrap())
            .and_then(|mut s| s.count_results())
            .unwrap_or(0)
    };
    while kept() < 2 && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(kept(), 2, "{}", server.log());
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&archive).unwrap());
    assert_eq!(owner, 65534, "the archive is the user's");
}

#[test]
fn user_needs_root_and_a_user_that_exists() {
    let out = sonde()
        .args(["serve", "-p", "0", "--user", "no-such-sonde-user"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--user no-such-sonde-user: no such user"),
        "{err}"
    );
    // Not root: setpriv runs sonde as nobody, which cannot become anyone.
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["serve", "-p", "0", "--user", "nobody"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only root can become another user"), "{err}");
}
