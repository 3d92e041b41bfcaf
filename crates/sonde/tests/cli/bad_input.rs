//! Bad input: a clear message on stderr — one line from sonde, or clap's
//! whole message (what is wrong, the usage line, where to find help) for
//! a flag clap itself refuses — a non-zero exit (2 for usage errors), and
//! a server that logs the problem and keeps serving.

use crate::common;
use common::{sonde, stderr, tcp, tcp_json, ServerProc};

fn one_line_error(o: &std::process::Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code; stderr: {err}");
    if err.starts_with("error: ") {
        return clap_error(o, needle);
    }
    assert_eq!(
        err.trim().lines().count(),
        1,
        "one line on stderr, got: {err}"
    );
    assert!(err.starts_with("sonde: "), "{err}");
    assert!(err.contains(needle), "stderr should name '{needle}': {err}");
}

/// clap's whole message: the error naming `needle`, then where to find
/// help; exit code 2.
fn clap_error(o: &std::process::Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(first.starts_with("error: "), "{err}");
    assert!(
        first.contains(needle),
        "the first line should name '{needle}': {err}"
    );
    assert!(err.contains("For more information, try '--help'."), "{err}");
    assert!(o.stdout.is_empty(), "nothing on stdout");
}

#[test]
fn clap_s_errors_are_printed_whole() {
    // A missing argument names it and shows the usage line.
    let o = sonde().arg("tcp").output().unwrap();
    clap_error(&o, "required arguments were not provided");
    let err = stderr(&o);
    assert!(err.contains("<HOST>"), "{err}");
    assert!(err.contains("Usage: sonde tcp"), "{err}");
    // Each kind of refusal clap makes, by the flag or value it names.
    let cases: [(&[&str], &str); 6] = [
        (&["udp"], "required arguments"),
        (&["tcp", "::1", "--no-such-flag"], "--no-such-flag"),
        (&["tcp", "::1", "-P", "many"], "'many'"),
        (&["tcp", "::1", "-R", "--bidir"], "cannot be used with"),
        (&["tcp", "::1", "--peer", "ftp"], "'ftp'"),
        (&["nosuchcommand"], "nosuchcommand"),
    ];
    for (args, needle) in cases {
        clap_error(&sonde().args(args).output().unwrap(), needle);
    }
    // A command with no subcommand shows the help, exit 2.
    let o = sonde().output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Usage: sonde"), "{}", stderr(&o));
}

#[test]
fn invalid_flag_values_are_usage_errors() {
    one_line_error(
        &sonde().args(["tcp", "::1", "-t", "5x"]).output().unwrap(),
        2,
        "'5x'",
    );
    one_line_error(
        &sonde().args(["tcp", "::1", "-S", "EFF"]).output().unwrap(),
        2,
        "'EFF'",
    );
    one_line_error(
        &sonde().args(["tcp", "::1", "-P", "129"]).output().unwrap(),
        2,
        "129",
    );
    one_line_error(
        &sonde().args(["tcp", "::1", "-b", "fast"]).output().unwrap(),
        2,
        "'fast'",
    );
    one_line_error(
        &sonde()
            .args(["tcp", "::1", "-R", "--bidir"])
            .output()
            .unwrap(),
        2,
        "--bidir",
    );
    one_line_error(
        &sonde().args(["tcp", "::1", "-i", "10ms"]).output().unwrap(),
        2,
        "interval",
    );
    one_line_error(
        &sonde()
            .args(["tcp", "::1", "-4", "--flowlabel", "5"])
            .output()
            .unwrap(),
        2,
        "flowlabel",
    );
    one_line_error(
        &sonde()
            .args(["serve", "--allow", "10.0.0.0/33"])
            .output()
            .unwrap(),
        2,
        "10.0.0.0/33",
    );
}

#[test]
fn a_bad_config_file_is_named() {
    let dir = common::TempDir::new("cfg");
    let path = dir.join("serve.toml");
    std::fs::write(&path, "[limits]\nmax_streams = \"many\"\n").unwrap();
    let o = sonde()
        .args(["serve", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    one_line_error(&o, 2, "serve.toml");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_host_and_refused_port_fail_cleanly() {
    one_line_error(
        &tcp("no-such-host.invalid", 5201, &["-t", "1s"]),
        1,
        "no-such-host.invalid",
    );
    let free = std::net::TcpListener::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    one_line_error(&tcp("::1", free, &["-t", "1s"]), 1, "refused");
}

#[test]
fn limits_are_refused_by_name_and_the_server_keeps_serving() {
    let mut server = ServerProc::start(&[
        "--max-duration",
        "3s",
        "--max-streams",
        "4",
        "--max-rate",
        "50M",
    ]);
    let port = server.port;
    one_line_error(
        &tcp("::1", port, &["-t", "5s", "-b", "1M"]),
        1,
        "max_duration is 3s on this server (asked: 5s)",
    );
    one_line_error(
        &tcp("::1", port, &["-t", "1s", "-P", "5", "-b", "1M"]),
        1,
        "max_streams is 4 on this server (asked: 5)",
    );
    one_line_error(&tcp("::1", port, &["-t", "1s"]), 1, "max_rate");
    one_line_error(
        &tcp("::1", port, &["-t", "1s", "-P", "2", "-b", "30M"]),
        1,
        "max_rate is 50.0 Mbit/s",
    );
    assert!(
        server.wait_for_log("max_duration is 3s"),
        "the server logs refusals:\n{}",
        server.log()
    );
    assert!(server.is_running());
    // Within the limits, a paced test runs at the rate asked.
    let r = tcp_json("::1", port, &["-t", "2s", "-P", "2", "-b", "20M"]);
    let got = common::u(&r["summary"]["total"]["throughput_bps"]) as f64;
    assert!((got - 40e6).abs() / 40e6 < 0.03, "goodput {got}");
}

#[test]
fn clients_outside_the_allowed_prefixes_are_refused() {
    let server = ServerProc::start(&["--allow", "2001:db8::/32", "--allow", "127.0.0.0/8"]);
    one_line_error(
        &tcp("::1", server.port, &["-t", "1s"]),
        1,
        "not in this server's allowed prefixes",
    );
    let r = tcp_json("127.0.0.1", server.port, &["-t", "1s"]);
    assert!(common::u(&r["summary"]["total"]["received_bytes"]) > 0);
}

#[test]
fn too_many_concurrent_tests_are_refused_as_busy() {
    let server = ServerProc::start(&["--max-concurrent-tests", "1"]);
    let port = server.port;
    let long = std::thread::spawn(move || tcp("::1", port, &["-t", "3s", "-b", "10M"]));
    assert!(server.wait_for_log("test accepted"));
    let o = tcp("::1", port, &["-t", "1s"]);
    one_line_error(&o, 1, "max_concurrent_tests is 1");
    assert!(long.join().unwrap().status.success());
}

#[test]
fn an_unavailable_congestion_control_is_named() {
    let server = ServerProc::start(&[]);
    let o = tcp("::1", server.port, &["-t", "1s", "-C", "nosuchcc"]);
    one_line_error(&o, 1, "nosuchcc");
}

#[test]
fn bare_seconds_are_a_duration_in_every_flag() {
    // `--max-duration 2` means two seconds, as `-t 3` means three.
    let server = ServerProc::start(&["--max-duration", "2"]);
    one_line_error(
        &tcp("::1", server.port, &["-t", "3"]),
        1,
        "max_duration is 2s on this server (asked: 3s)",
    );
}

#[test]
fn a_trace_with_bad_hops_or_no_host_says_so() {
    let o = sonde()
        .args(["trace", "::1", "-f", "5", "-m", "3"])
        .output()
        .unwrap();
    one_line_error(&o, 2, "-f/--first-hop: 5 is beyond the last hop probed (3)");
    let o = sonde().args(["trace", "::1", "-q", "0"]).output().unwrap();
    clap_error(&o, "--queries");
    let o = sonde()
        .args(["trace", "no-such-host.invalid"])
        .output()
        .unwrap();
    one_line_error(&o, 1, "no-such-host.invalid");
}
