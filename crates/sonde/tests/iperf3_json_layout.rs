//! `--json=iperf3`: sonde's output in iperf3's layout parses with the same
//! script as iperf3's own `-J` output for the same test, and gives the
//! same fields (crates/sonde/tests/iperf3_json_check.py stands for a
//! script written for iperf3). Loopback only.

mod common;
use common::lab_cli::KillOnDrop;
use common::{sonde, stderr, ServerProc};
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn checker(doc: &[u8], bidir: bool, what: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("sonde-iperf3-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{}.json", what.replace(' ', "_")));
    std::fs::write(&file, doc).unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/iperf3_json_check.py"
    ));
    if bidir {
        cmd.arg("--bidir");
    }
    let o = cmd.arg(&file).output().expect("python3");
    assert!(o.status.success(), "{what}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The keys of a JSON value, recursively, with array members merged.
fn shape(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let path = format!("{at}.{k}");
                out.push(path.clone());
                shape(v, &path, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| shape(v, &format!("{at}[]"), out)),
        _ => {}
    }
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    shape(v, "", &mut out);
    out.sort();
    out.dedup();
    out
}

fn ok(o: Output, what: &str) -> Vec<u8> {
    assert!(o.status.success(), "{what}: {}", stderr(&o));
    o.stdout
}

#[test]
fn scripts_for_iperf3_read_sonde_as_they_read_iperf3() {
    let sonde_server = ServerProc::start(&["--no-reflector"]);
    let iperf3_port = 15_211u16;
    let iperf3 = KillOnDrop(
        Command::new("iperf3")
            .args(["-s", "-p", &iperf3_port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3"),
    );
    let end = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("::1", iperf3_port)).is_err() {
        assert!(Instant::now() < end, "iperf3 -s did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let cases: [(&str, &[&str]); 6] = [
        ("tcp", &[]),
        ("tcp", &["-R", "-P", "2"]),
        ("tcp", &["--bidir"]),
        ("udp", &["-b", "10M"]),
        ("udp", &["-b", "10M", "-R"]),
        ("udp", &["-b", "10M", "--bidir", "-P", "2"]),
    ];
    for (proto, args) in cases {
        let what = format!("{proto} {}", args.join(" "));
        let bidir = args.contains(&"--bidir");
        let theirs = ok(
            Command::new("iperf3")
                .args(["-c", "::1", "-p", &iperf3_port.to_string(), "-t", "1", "-J"])
                .args(if proto == "udp" { &["-u"][..] } else { &[][..] })
                .args(args)
                .output()
                .unwrap(),
            &format!("iperf3 {what}"),
        );
        let ours = ok(
            sonde()
                .args([
                    proto,
                    "::1",
                    "-p",
                    &sonde_server.port.to_string(),
                    "-t",
                    "1s",
                    "--json=iperf3",
                ])
                .args(args)
                .output()
                .unwrap(),
            &format!("sonde {what}"),
        );
        let (a, b) = (
            checker(&theirs, bidir, &format!("iperf3 {what}")),
            checker(&ours, bidir, &format!("sonde {what}")),
        );
        assert_eq!(keys(&a), keys(&b), "{what}: the script finds other fields");
        for k in ["protocol", "num_streams", "reverse"] {
            assert_eq!(a[k], b[k], "{what}: {k}");
        }
        assert_eq!(
            a["connected"].as_array().map(Vec::len),
            b["connected"].as_array().map(Vec::len),
            "{what}: connected streams"
        );
    }
    // A document without a field a script reads is refused by name.
    let mut broken: serde_json::Value = serde_json::from_slice(&ok(
        sonde()
            .args([
                "tcp",
                "::1",
                "-p",
                &sonde_server.port.to_string(),
                "-t",
                "1s",
                "--json=iperf3",
            ])
            .output()
            .unwrap(),
        "sonde tcp",
    ))
    .unwrap();
    broken["end"].as_object_mut().unwrap().remove("sum_sent");
    let file =
        std::env::temp_dir().join(format!("sonde-iperf3-broken-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_vec(&broken).unwrap()).unwrap();
    let o = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/iperf3_json_check.py"
        ))
        .arg(&file)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("sum_sent"), "{}", stderr(&o));
    drop(iperf3);
}
