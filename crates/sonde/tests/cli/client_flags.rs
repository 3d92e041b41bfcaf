//! The client flags iperf3 users reach for, each against a real server on
//! loopback (`sonde serve`, and a stock `iperf3 -s` where it matters):
//! `-n`/`-k` bounded tests with sonde's own server (the native protocol
//! carries the bound, so the server ends a reverse test after it), `-B`
//! with `--cport`, `--connect-timeout`, `-N`, `-Z`, `-S` as a TOS byte,
//! and the same keys in a spec file.

use crate::common;
use common::{sonde, stderr, Iperf3Server, ServerProc};
use sonde_model::{load_result, TestSpec};

fn json(out: &std::process::Output, what: &str) -> serde_json::Value {
    assert!(out.status.success(), "{what}: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn n(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const MIB: f64 = 1_048_576.0;

/// Every direction of a bounded test against sonde's own server: each
/// direction's sender sends exactly the volume, its receiver gets all of
/// it, and the test ends long before its time.
#[test]
fn bytes_and_blocks_bound_a_test_against_sonde_serve() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    for (dir, flags) in [
        ("forward", &[][..]),
        ("reverse", &["-R"][..]),
        ("bidir", &["--bidir"][..]),
    ] {
        let dirs: &[&str] = match dir {
            "bidir" => &["forward", "reverse"],
            d => &[if d == "forward" { "forward" } else { "reverse" }],
        };
        for (host, volume, bytes) in [
            ("::1", &["-n", "30M"][..], 30.0 * MIB),
            (
                "127.0.0.1",
                &["-k", "120", "-l", "256K", "-P", "2"],
                30.0 * MIB,
            ),
        ] {
            let what = format!("sonde tcp {host} {dir} {volume:?}");
            let out = sonde()
                .args(["tcp", host, "-p", &port, "-t", "10", "-b", "300M", "-J"])
                .args(volume)
                .args(flags)
                .output()
                .unwrap();
            let r = json(&out, &what);
            assert!(n(&r["duration_s"]) < 8.0, "{what}: ran to its time");
            for d in dirs {
                let f = &r["summary"][d];
                assert_eq!(n(&f["sent_bytes"]), bytes, "{what}: {f}");
                assert_eq!(n(&f["received_bytes"]), bytes, "{what}: {f}");
            }
        }
        let what = format!("sonde udp {dir} -k 400");
        let out = sonde()
            .args([
                "udp", "::1", "-p", &port, "-t", "10", "-b", "8M", "-l", "1000",
            ])
            .args(["-k", "400", "-J"])
            .args(flags)
            .output()
            .unwrap();
        let r = json(&out, &what);
        assert!(n(&r["duration_s"]) < 8.0, "{what}: ran to its time");
        for d in dirs {
            let f = &r["summary"][d];
            common::assert_udp_delivered(f, 400, &what);
        }
    }
}

/// `-B` and `--cport`: the control and data connections leave from the
/// address asked, and the data streams from the ports asked (PORT + i),
/// against sonde's server and iperf3's.
#[test]
fn bind_and_cport_choose_the_client_end() {
    let ours = ServerProc::start(&["--no-reflector"]);
    let theirs = Iperf3Server::start_on(17_220);
    for (port, peer, cport) in [
        (ours.port, "--peer=sonde", 17_230u16),
        (theirs.port, "--iperf3", 17_240),
    ] {
        for (proto, base) in [("tcp", cport), ("udp", cport + 5)] {
            let what = format!("sonde {proto} {peer} -B 127.0.0.1 --cport {base}");
            let out = sonde()
                .args([proto, "localhost", "-p", &port.to_string(), peer])
                .args(["-t", "1", "-P", "2", "-B", "127.0.0.1"])
                .args(["--cport", &base.to_string(), "-J"])
                .output()
                .unwrap();
            let r = json(&out, &what);
            for (i, s) in r["streams"].as_array().unwrap().iter().enumerate() {
                let want = format!("127.0.0.1:{}", base + i as u16);
                assert_eq!(s["client_socket"]["local"], want.as_str(), "{what}");
            }
        }
    }
}

#[test]
fn bad_client_flags_are_usage_errors_that_name_the_flag() {
    for (args, names) in [
        (&["-B", "127.0.0.1", "-6"][..], "-B/--bind"),
        (&["--cport", "65535", "-P", "2"], "--cport"),
        (&["--connect-timeout", "0s"], "--connect-timeout"),
        (&["-n", "0"], "-n/--bytes"),
        (&["-S", "0xb9"], "ECN"),
        (&["-S", "300"], "TOS byte"),
    ] {
        let out = sonde()
            .args(["tcp", "::1", "-p", "17299"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(names), "{args:?}: {}", stderr(&out));
    }
    let out = sonde()
        .args(["tcp", "::1", "-n", "1M", "-k", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "-n with -k: {}", stderr(&out));
}

/// `-S 0xb8` is iperf3's EF: the data sockets carry DSCP 46, and stderr
/// says how the byte was read. `-N`, `-Z` and `--connect-timeout` run
/// and are kept in the spec; `-Z`'s bytes arrive whole.
#[test]
fn tos_byte_nodelay_zerocopy_and_connect_timeout() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let out = sonde()
        .args([
            "tcp", "::1", "-p", &port, "-t", "1", "-S", "0xb8", "-N", "-Z",
        ])
        .args(["--connect-timeout", "3s", "-n", "20M", "-J"])
        .output()
        .unwrap();
    let r = json(&out, "-S 0xb8 -N -Z");
    assert!(stderr(&out).contains("DSCP EF (46)"), "{}", stderr(&out));
    let s = &r["streams"][0];
    assert_eq!(s["client_socket"]["dscp"], 46, "{s}");
    assert_eq!(s["server_socket"]["dscp"], 46, "{s}");
    assert_eq!(r["spec"]["dscp"], 46);
    assert_eq!(r["spec"]["no_delay"], true);
    assert_eq!(r["spec"]["zerocopy"], true);
    assert_eq!(n(&r["spec"]["connect_timeout_s"]), 3.0);
    assert_eq!(n(&s["sent_bytes"]), 20.0 * MIB, "{s}");
    assert_eq!(n(&s["received_bytes"]), 20.0 * MIB, "{s}");
}

/// The new keys in a spec file run the same test the flags do.
#[test]
fn a_spec_file_spells_the_same_bounds() {
    let server = ServerProc::start(&["--no-reflector"]);
    let dir = common::TempDir::new("client-flags");
    let path = dir.join("bounded.toml");
    let text = format!(
        "test = \"tcp\"\nhost = \"127.0.0.1\"\nport = {}\ntime_s = \"10s\"\nbitrate_bps = \"200M\"\n\
         bytes = \"10M\"\nbind = \"127.0.0.1\"\ncport = 17250\nconnect_timeout_s = \"2s\"\n\
         no_delay = true\ndirection = \"reverse\"\n",
        server.port
    );
    std::fs::write(&path, &text).unwrap();
    let out = sonde()
        .args(["run", path.to_str().unwrap(), "-J"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r = load_result(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
    let asked: TestSpec = toml::from_str(&text).unwrap();
    assert_eq!(r.spec, asked);
    let reverse = r.summary.reverse.as_ref().unwrap();
    assert_eq!(reverse.received_bytes, Some(10 << 20));
    assert_eq!(
        r.streams[0].client_socket.local.to_string(),
        "127.0.0.1:17250"
    );
}
