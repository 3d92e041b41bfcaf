//! The layout is held to real iperf3 output: `tests/fixtures/iperf3_json/`
//! has, for TCP and UDP × forward, `-R`, `--bidir` × 1 and 2 streams,
//! sonde's `-J` result (`sonde/`) and iperf3's `-J` output for the same
//! options (`iperf3-3.12/`, `iperf3-3.21/`), all captured on loopback.

use super::{rfc1123, system_info, tcp_to_iperf3, to_iperf3, udp_to_iperf3, ADDED_AFTER_3_12};
use serde_json::Value;
use sonde_model::{
    load_result, ByteSize, Direction, Dscp, HostEnv, Rate, TcpSpec, TestResult, TestSpec, UdpSpec,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const CASES: [&str; 12] = [
    "tcp_fwd_1",
    "tcp_fwd_2",
    "tcp_rev_1",
    "tcp_rev_2",
    "tcp_bidir_1",
    "tcp_bidir_2",
    "udp_fwd_1",
    "udp_fwd_2",
    "udp_rev_1",
    "udp_rev_2",
    "udp_bidir_1",
    "udp_bidir_2",
];

fn fixture_path(dir: &str, case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/iperf3_json")
        .join(dir)
        .join(format!("{case}.json"))
}

fn fixture_text(dir: &str, case: &str) -> String {
    let path = fixture_path(dir, case);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn iperf3(version: &str, case: &str) -> Value {
    serde_json::from_str(&fixture_text(&format!("iperf3-{version}"), case)).expect(case)
}

/// sonde's result for `case` (a format-1 document, read by the loader).
fn result(case: &str) -> TestResult {
    load_result(&fixture_text("sonde", case)).expect(case)
}

fn tcp_result(case: &str) -> TestResult {
    result(case)
}

fn udp_result(case: &str) -> TestResult {
    result(case)
}

fn tcp(r: &TestResult) -> Value {
    tcp_to_iperf3(r).expect("a TCP result")
}

fn udp(r: &TestResult) -> Value {
    udp_to_iperf3(r).expect("a UDP result")
}

fn tcp_spec(r: &mut TestResult) -> &mut TcpSpec {
    match &mut r.spec {
        TestSpec::Tcp(s) => s,
        other => panic!("not tcp: {other:?}"),
    }
}

fn udp_spec(r: &TestResult) -> &UdpSpec {
    match &r.spec {
        TestSpec::Udp(s) => s,
        other => panic!("not udp: {other:?}"),
    }
}

/// sonde's result for `case`, converted.
fn converted(case: &str) -> Value {
    to_iperf3(&result(case)).expect(case)
}

/// Every key path of `v`. Stream and connection positions are kept
/// (`end.streams[1].sender.bytes`); intervals, whose number depends on
/// timing, are written `intervals[]`; `collapse_all` writes every
/// position `[]`.
fn layout(v: &Value, collapse_all: bool) -> BTreeSet<String> {
    fn walk(v: &Value, path: String, key: &str, collapse_all: bool, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(x, p, k, collapse_all, out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for (i, x) in a.iter().enumerate() {
                    let at = if collapse_all || key == "intervals" {
                        "[]".to_string()
                    } else {
                        format!("[{i}]")
                    };
                    walk(x, format!("{path}{at}"), key, collapse_all, out);
                }
            }
            _ => {
                out.insert(path);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(v, String::new(), "", collapse_all, &mut out);
    out
}

/// "missing …/extra …" lines for two layouts, empty when equal.
fn differences(case: &str, ours: &BTreeSet<String>, theirs: &BTreeSet<String>) -> Vec<String> {
    let missing = theirs
        .difference(ours)
        .map(|k| format!("{case}: missing {k}"));
    let extra = ours
        .difference(theirs)
        .map(|k| format!("{case}: extra {k}"));
    missing.chain(extra).collect()
}

#[test]
fn layout_is_iperf3_3_21_for_every_case() {
    let problems: Vec<String> = CASES
        .iter()
        .flat_map(|case| {
            differences(
                case,
                &layout(&converted(case), false),
                &layout(&iperf3("3.21", case), false),
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn iperf3_3_12_lacks_only_the_listed_keys() {
    let listed: BTreeSet<String> = ADDED_AFTER_3_12.iter().map(|k| k.to_string()).collect();
    let mut seen = BTreeSet::new();
    for case in CASES {
        let ours = layout(&converted(case), true);
        let old = layout(&iperf3("3.12", case), true);
        let missing: Vec<_> = old.difference(&ours).collect();
        assert!(missing.is_empty(), "{case}: 3.12 has {missing:?}");
        let added: BTreeSet<String> = ours.difference(&old).cloned().collect();
        let unlisted: Vec<_> = added.difference(&listed).collect();
        assert!(unlisted.is_empty(), "{case}: not in 3.12: {unlisted:?}");
        seen.extend(added);
    }
    assert_eq!(seen, listed, "every listed key shows up in some case");
}

/// Keys iperf3 writes as integers, and as floats (rates, times, ratios).
const INTEGER_KEYS: &[&str] = &[
    "bytes",
    "packets",
    "lost_packets",
    "out_of_order",
    "retransmits",
    "reorder",
    "socket",
    "snd_cwnd",
    "snd_wnd",
    "rtt",
    "rttvar",
    "pmtu",
    "max_snd_cwnd",
    "max_snd_wnd",
    "max_rtt",
    "min_rtt",
    "mean_rtt",
    "local_port",
    "remote_port",
    "port",
    "num_streams",
    "blksize",
    "timesecs",
    "timemillisecs",
    "sndbuf_actual",
    "rcvbuf_actual",
    "tcp_mss_default",
    "target_bitrate",
];
const FLOAT_KEYS: &[&str] = &[
    "bits_per_second",
    "seconds",
    "start",
    "end",
    "jitter_ms",
    "lost_percent",
    "host_total",
    "remote_total",
];

#[test]
fn counts_are_integers_and_rates_are_floats() {
    fn check(v: &Value, key: &str, case: &str) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| check(x, k, case)),
            Value::Array(a) => a.iter().for_each(|x| check(x, key, case)),
            Value::Number(n) if INTEGER_KEYS.contains(&key) => {
                assert!(n.is_u64(), "{case}: {key} = {n} is not an integer")
            }
            Value::Number(n) if FLOAT_KEYS.contains(&key) => {
                assert!(n.is_f64(), "{case}: {key} = {n} is not a float")
            }
            _ => {}
        }
    }
    for case in CASES {
        check(&converted(case), "", case);
    }
}

#[test]
fn forward_tcp_shows_the_client_sending() {
    let r = tcp_result("tcp_fwd_1");
    let j = tcp(&r);
    let fwd = r.summary.forward.clone().expect("forward summary");
    let (st, iv) = (&r.streams[0], &r.intervals[0].streams[0]);

    let ts = &j["start"]["test_start"];
    assert_eq!(ts["protocol"], "TCP");
    assert_eq!(ts["num_streams"], 1);
    assert_eq!(ts["blksize"], 262_144);
    assert_eq!(ts["duration"], 2);
    assert_eq!(
        (ts["reverse"].clone(), ts["bidir"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(j["start"]["tcp_mss_default"], 32_768);
    assert_eq!(j["start"]["version"], "sonde 0.1.0");
    assert_eq!(j["start"]["system_info"], "Linux vm 6.18.44-fc-v657");
    assert_eq!(j["start"]["connected"][0]["local_host"], "::1");
    assert_eq!(
        j["start"]["connected"][0]["local_port"],
        st.client_socket.local.port()
    );
    assert_eq!(j["start"]["connected"][0]["remote_port"], 5499);

    let i0 = &j["intervals"][0]["streams"][0];
    assert_eq!(i0["sender"], true);
    assert_eq!(i0["bytes"], iv.sent_bytes.expect("sent bytes"));
    assert_eq!(i0["retransmits"], iv.retransmits.unwrap_or(0));
    assert_eq!(i0["snd_cwnd"], iv.cwnd_bytes.unwrap_or(0));
    assert_eq!(i0["rtt"], super::micros(iv.srtt_ms.unwrap_or(0.0)));

    let end = &j["end"];
    assert_eq!(end["sum_sent"]["bytes"], fwd.sent_bytes.expect("sent"));
    assert_eq!(
        end["sum_sent"]["retransmits"],
        fwd.retransmits.expect("retr")
    );
    assert_eq!(end["sum_sent"]["sender"], true);
    assert_eq!(
        end["sum_received"]["bytes"],
        fwd.received_bytes.expect("received")
    );
    assert_eq!(
        end["sum_received"]["seconds"],
        fwd.receiver_duration_s.expect("receiver time")
    );
    assert_eq!(
        end["sum_received"]["bits_per_second"],
        fwd.throughput_bps.expect("goodput") as f64
    );
    assert_eq!(end["streams"][0]["sender"]["socket"], 0);
    assert_eq!(
        end["streams"][0]["sender"]["max_snd_cwnd"],
        st.figures.max_cwnd_bytes.unwrap_or(0)
    );
    assert_eq!(
        end["streams"][0]["receiver"]["bytes"],
        st.figures.received_bytes.expect("received")
    );
    assert_eq!(end["sender_tcp_congestion"], "bbr");
    assert_eq!(end["receiver_tcp_congestion"], "bbr");
}

#[test]
fn reverse_tcp_shows_the_client_receiving() {
    let r = tcp_result("tcp_rev_1");
    let j = tcp(&r);
    assert_eq!(j["start"]["test_start"]["reverse"], 1);
    let i0 = &j["intervals"][0]["streams"][0];
    assert_eq!(i0["sender"], false);
    assert_eq!(
        i0["bytes"],
        r.intervals[0].streams[0].received_bytes.expect("received")
    );
    assert!(
        i0.get("retransmits").is_none(),
        "a receiver has no TCP_INFO"
    );
    assert_eq!(j["intervals"][0]["sum"]["sender"], false);
    assert_eq!(j["end"]["sum_sent"]["sender"], false);
    assert_eq!(
        j["end"]["streams"][0]["sender"]["bytes"],
        r.streams[0].figures.sent_bytes.expect("sent")
    );
}

#[test]
fn bidir_reports_the_reverse_direction_apart() {
    let r = tcp_result("tcp_bidir_2");
    let j = tcp(&r);
    let rev = r.summary.reverse.clone().expect("reverse summary");
    assert_eq!(j["start"]["test_start"]["bidir"], 1);
    assert_eq!(j["start"]["test_start"]["reverse"], 0);
    assert_eq!(j["start"]["test_start"]["num_streams"], 2);
    assert_eq!(j["start"]["connected"].as_array().map(Vec::len), Some(4));
    assert_eq!(j["intervals"][0]["sum"]["sender"], true);
    assert_eq!(j["intervals"][0]["sum_bidir_reverse"]["sender"], false);
    assert_eq!(
        j["end"]["sum_sent_bidir_reverse"]["bytes"],
        rev.sent_bytes.expect("sent")
    );
    assert_eq!(
        j["end"]["sum_received_bidir_reverse"]["bytes"],
        rev.received_bytes.expect("received")
    );
    let senders: Vec<_> = j["end"]["streams"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["sender"]["sender"].clone())
        .collect();
    assert_eq!(senders, [true, true, false, false]);
}

#[test]
fn udp_jitter_and_loss_come_from_the_receiver() {
    let r = udp_result("udp_fwd_1");
    let j = udp(&r);
    let c = r.summary.forward.as_ref().expect("forward");
    let (sent, received, lost) = (
        c.sent_packets.expect("sent"),
        c.received_packets.expect("received"),
        c.lost_packets.expect("lost"),
    );
    let ts = &j["start"]["test_start"];
    assert_eq!(ts["protocol"], "UDP");
    assert_eq!(ts["blksize"], 1400);
    assert_eq!(ts["target_bitrate"], 10_000_000);
    assert!(j["start"].get("tcp_mss_default").is_none());

    let sum = &j["end"]["sum"];
    assert_eq!(sum["jitter_ms"], c.jitter_ms.expect("jitter"));
    assert_eq!(sum["lost_packets"], lost);
    assert_eq!(sum["packets"], received + lost);
    assert_eq!(sum["lost_percent"], c.loss_pct.expect("loss"));
    assert_eq!(sum["sender"], true);
    assert_eq!(j["end"]["sum_sent"]["packets"], sent);
    assert_eq!(j["end"]["sum_sent"]["jitter_ms"], 0.0);
    assert_eq!(
        j["end"]["sum_received"]["bytes"],
        c.received_bytes.expect("bytes")
    );
    assert_eq!(
        j["end"]["sum_received"]["jitter_ms"],
        c.jitter_ms.expect("jitter")
    );
    // A constant-rate stream: offered rate × time is the bytes sent.
    assert_eq!(j["end"]["sum_sent"]["bytes"], sent * 1400);
    assert_eq!(
        j["end"]["streams"][0]["udp"]["out_of_order"],
        r.streams[0].figures.reordered.expect("reordered")
    );

    let i0 = &j["intervals"][0]["streams"][0];
    assert_eq!(
        i0["packets"],
        r.intervals[0].streams[0].sent_packets.expect("sent")
    );
    assert!(
        i0.get("jitter_ms").is_none(),
        "the sending client has no jitter"
    );

    let rev = udp(&udp_result("udp_rev_1"));
    let i0 = &rev["intervals"][0]["streams"][0];
    assert_eq!(i0["sender"], false);
    assert!(i0.get("jitter_ms").is_some() && i0.get("lost_percent").is_some());
    assert_eq!(rev["end"]["sum"]["sender"], false);
}

#[test]
fn udp_sent_bytes_are_taken_as_counted_when_known() {
    let mut r = udp_result("udp_fwd_1");
    let payload = u64::from(udp_spec(&r).payload_len());
    if let Some(f) = r.summary.forward.as_mut() {
        f.sent_bytes = f.sent_packets.map(|p| p * payload + 7);
    }
    let j = udp(&r);
    let sent = r.summary.forward.as_ref().and_then(|f| f.sent_packets);
    assert_eq!(
        j["end"]["sum_sent"]["bytes"],
        sent.expect("sent") * payload + 7
    );
}

#[test]
fn missing_figures_are_written_as_zeros() {
    let mut r = tcp_result("tcp_fwd_1");
    r.intervals.clear();
    r.summary.forward = None;
    r.env.client.default_congestion = None;
    r.env.server.default_congestion = None;
    for s in &mut r.streams {
        s.figures.retransmits = None;
        s.figures.srtt_ms = None;
        s.figures.min_rtt_ms = None;
        s.figures.max_cwnd_bytes = None;
        s.figures.sent_bytes = None;
        s.client_socket.mss_bytes = None;
        s.client_socket.congestion = None;
        s.server_socket.congestion = None;
    }
    let j = tcp(&r);
    assert_eq!(j["intervals"], serde_json::json!([]));
    let sender = &j["end"]["streams"][0]["sender"];
    for key in [
        "bytes",
        "retransmits",
        "max_snd_cwnd",
        "max_rtt",
        "min_rtt",
        "mean_rtt",
    ] {
        assert_eq!(sender[key], 0, "{key}");
    }
    assert_eq!(j["start"]["tcp_mss_default"], 0);
    let total = r.summary.total.as_ref().expect("total");
    assert_eq!(
        j["end"]["sum_sent"]["bytes"],
        total.sent_bytes.expect("sent")
    );
    assert_eq!(j["end"]["sum_received"]["seconds"], r.duration_s);
    assert!(j["end"].get("sender_tcp_congestion").is_none());

    r.summary.total = None;
    r.streams.clear();
    let j = tcp(&r);
    assert_eq!(j["start"]["connected"], serde_json::json!([]));
    assert_eq!(j["start"]["sndbuf_actual"], 0);
    assert_eq!(j["end"]["sum_sent"]["bytes"], 0);
    assert_eq!(j["end"]["sum_received"]["bits_per_second"], 0.0);
}

#[test]
fn only_tcp_and_udp_have_an_iperf3_layout() {
    let r = tcp_result("tcp_fwd_1");
    assert!(udp_to_iperf3(&r).is_none(), "a TCP result is not UDP");
    assert!(tcp_to_iperf3(&udp_result("udp_fwd_1")).is_none());
    let ping = load_result(include_str!(
        "../../../sonde-model/tests/fixtures/v1/ping_icmp.json"
    ))
    .expect("ping");
    assert!(to_iperf3(&ping).is_none());
    assert_eq!(to_iperf3(&r), tcp_to_iperf3(&r));
}

#[test]
fn spec_options_show_where_iperf3_puts_them() {
    let mut r = tcp_result("tcp_fwd_1");
    let s = tcp_spec(&mut r);
    s.mss = Some(1400);
    s.dscp = Some(Dscp::EF);
    s.omit = Duration::from_millis(1500);
    s.window = Some(ByteSize::from_bytes(256 * 1024));
    s.bitrate = Some(Rate::from_bps(100_000_000));
    s.direction = Direction::Forward;
    r.title = Some("lab 3".into());
    let j = tcp(&r);
    assert_eq!(j["start"]["tcp_mss"], 1400);
    assert!(j["start"].get("tcp_mss_default").is_none());
    assert_eq!(j["start"]["sock_bufsize"], 262_144);
    assert_eq!(j["start"]["target_bitrate"], 100_000_000);
    let ts = &j["start"]["test_start"];
    assert_eq!(ts["tos"], 184);
    assert_eq!(ts["omit"], 1.5);
    assert_eq!(ts["duration"], 2);
    assert_eq!(ts["interval"], 1.0);
    assert_eq!(j["title"], "lab 3");
}

#[test]
fn ipv4_mapped_addresses_are_written_as_ipv4() {
    let mut r = tcp_result("tcp_fwd_1");
    r.streams[0].client_socket.local = "[::ffff:192.0.2.1]:40000".parse().expect("addr");
    let j = tcp(&r);
    assert_eq!(j["start"]["connected"][0]["local_host"], "192.0.2.1");
    assert_eq!(j["start"]["connected"][0]["local_port"], 40_000);
}

#[test]
fn times_are_written_as_iperf3_writes_them() {
    assert_eq!(rfc1123(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(rfc1123(951_868_800), "Wed, 01 Mar 2000 00:00:00 GMT");
    assert_eq!(rfc1123(1_709_208_000), "Thu, 29 Feb 2024 12:00:00 GMT");
    // From a real iperf3 3.12 run.
    let theirs = iperf3("3.12", "tcp_fwd_1");
    let secs = theirs["start"]["timestamp"]["timesecs"]
        .as_u64()
        .expect("timesecs");
    assert_eq!(rfc1123(secs), theirs["start"]["timestamp"]["time"]);

    let r = tcp_result("tcp_fwd_1");
    let j = tcp(&r);
    let since = r
        .start
        .0
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    assert_eq!(j["start"]["timestamp"]["timesecs"], since.as_secs());
    assert_eq!(
        j["start"]["timestamp"]["timemillisecs"],
        since.as_millis() as u64
    );
}

#[test]
fn system_info_reads_like_uname() {
    let env = HostEnv {
        os: "linux".into(),
        hostname: "probe-1".into(),
        kernel: "6.1.0-18-amd64".into(),
        ..HostEnv::default()
    };
    assert_eq!(system_info(&env), "Linux probe-1 6.1.0-18-amd64");
    assert_eq!(system_info(&HostEnv::default()), "");
}

/// The Python checker that stands for "a script written for iperf3".
fn checker() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sonde/tests/iperf3_json_check.py")
}

/// Runs the checker on `doc`: exit success, stdout, stderr; `None` when
/// there is no `python3` to run it.
fn run_checker(doc: &Value, name: &str, bidir: bool) -> Option<(bool, String, String)> {
    let path = std::env::temp_dir().join(format!(
        "sonde-iperf3-json-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&path, doc.to_string()).expect("write a temporary file");
    let mut cmd = Command::new("python3");
    cmd.arg(checker());
    if bidir {
        cmd.arg("--bidir");
    }
    let out = cmd.arg(&path).output();
    let _ = std::fs::remove_file(&path);
    match out {
        Ok(o) => Some((
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("python3: {e}"),
    }
}

#[test]
fn a_script_for_iperf3_reads_sonde_as_it_reads_iperf3() {
    for case in CASES {
        let bidir = case.contains("bidir");
        let mut shapes = Vec::new();
        for (name, doc) in [
            ("sonde", converted(case)),
            ("3.12", iperf3("3.12", case)),
            ("3.21", iperf3("3.21", case)),
        ] {
            let Some((ok, out, err)) = run_checker(&doc, &format!("{name}-{case}"), bidir) else {
                eprintln!("python3 not found: checker not run");
                return;
            };
            assert!(ok, "{name} {case}: {err}");
            let fields: Value = serde_json::from_str(&out).expect("one JSON line");
            assert_eq!(
                fields["num_streams"],
                if case.ends_with('2') { 2 } else { 1 }
            );
            shapes.push((name, layout(&fields, false)));
        }
        for (name, shape) in &shapes[1..] {
            let problems = differences(&format!("{case} vs {name}"), &shapes[0].1, shape);
            assert!(problems.is_empty(), "{}", problems.join("\n"));
        }
    }
}

#[test]
fn the_checker_names_a_missing_key() {
    let mut doc = converted("udp_fwd_1");
    if let Some(end) = doc["end"].as_object_mut() {
        end.remove("sum_received");
    }
    let Some((ok, _, err)) = run_checker(&doc, "missing", false) else {
        eprintln!("python3 not found: checker not run");
        return;
    };
    assert!(!ok);
    assert!(err.contains("end.sum_received"), "{err}");
}
