//! SIGHUP reloads `sonde serve`'s configuration: new limits apply to the
//! next request while a test admitted before runs to its end; a file
//! that does not check changes nothing; a section only a restart changes
//! is named.

use crate::common;
use common::{tcp, ServerProc};
use std::process::Command;

fn hup(server: &ServerProc) {
    let sent = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
fn sighup_puts_new_limits_in_force_without_dropping_a_running_test() {
    let dir = common::TempDir::new("reload");
    let file = dir.join("serve.toml");
    std::fs::write(&file, "[limits]\nmax_duration = \"10s\"\n").unwrap();
    let mut server = ServerProc::start(&["--no-reflector", "--config", file.to_str().unwrap()]);
    let port = server.port.to_string();
    // A 4 s test, admitted under the 10 s limit.
    let running = common::sonde()
        .args(["tcp", "::1", "-p", &port, "-t", "4", "-J"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(server.wait_for_log("test accepted"), "{}", server.log());

    std::fs::write(
        &file,
        "[limits]\nmax_duration = \"2s\"\n[reflector]\nrate_limit = 5\n",
    )
    .unwrap();
    hup(&server);
    assert!(
        server.wait_for_log("configuration reloaded"),
        "{}",
        server.log()
    );
    assert!(
        server.wait_for_log("kept as started until a restart: reflector"),
        "{}",
        server.log()
    );
    let refused = tcp("::1", server.port, &["-t", "3"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        common::stderr(&refused).contains("max_duration is 2s on this server (asked: 3s)"),
        "{}",
        common::stderr(&refused)
    );
    assert!(tcp("::1", server.port, &["-t", "1"]).status.success());

    // The test admitted before the reload ran its 4 s.
    let out = running.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ran = doc["summary"]["forward"]["receiver_duration_s"]
        .as_f64()
        .unwrap();
    assert!(ran > 3.5, "the running test was cut at {ran} s");

    // A file that does not check: nothing changes, the server serves on.
    std::fs::write(&file, "[limits]\nmax_duration = \"forever\"\n").unwrap();
    hup(&server);
    assert!(
        server.wait_for_log("configuration not reloaded"),
        "{}",
        server.log()
    );
    assert!(server.log().contains("max_duration"), "{}", server.log());
    let still = tcp("::1", server.port, &["-t", "3"]);
    assert!(common::stderr(&still).contains("max_duration is 2s"));
    assert!(server.is_running(), "{}", server.log());
}
