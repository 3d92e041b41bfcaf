//! Link load from a router over SNMP: the real net-snmp `snmpd` runs
//! inside the lab's router and reports that router's real interface
//! counters while a UDP test loads its link; an agent on the sender's side
//! polls it every second (`[[snmp]]`) over SNMPv3 with auth and privacy
//! (64-bit counters) and over v2c (32-bit counters, one of which the
//! router's agent is made to start just below 2^32 so that it wraps during
//! the load). The polled rates must be the test's within 5 %, across the
//! wrap, and raise an alert on them; a restart of the router's agent must break one interval and no
//! more; a v3 user with a wrong password must get nothing.

use crate::common;
use common::lab_cli::KillOnDrop;
use common::{lab_allowed, lab_json, lab_server, ServerProc};
use sonde_lab::{Chain, Link, Netns};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const NET: u8 = 78;
const IF_IN_OCTETS: &str = ".1.3.6.1.2.1.2.2.1.10";
const IF_OUT_OCTETS: &str = ".1.3.6.1.2.1.2.2.1.16";

/// An snmpd in the router with the configuration `dir/snmpd-TAG.conf`,
/// listening on `port`; killed when dropped.
fn start_snmpd(router: &Netns, dir: &Path, tag: &str, port: u16) -> KillOnDrop {
    let persist = dir.join(format!("persist-{tag}"));
    std::fs::create_dir_all(&persist).unwrap();
    let log = dir.join(format!("snmpd-{tag}.log"));
    let mut cmd = router.command("/usr/sbin/snmpd");
    cmd.env("SNMP_PERSISTENT_DIR", &persist)
        .args(["-f", "-C", "-c"])
        .arg(dir.join(format!("snmpd-{tag}.conf")))
        .arg("-Lf")
        .arg(&log)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = KillOnDrop(cmd.spawn().expect("start snmpd"));
    // Listening once its UDP socket is bound in the router.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = router
            .run("ss", &["-Hlun", "sport", "=", &format!(":{port}")])
            .unwrap();
        if !String::from_utf8_lossy(&out.stdout).trim().is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "snmpd did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

/// What the router's agent answers for a 32-bit octet counter the script
/// overrides (the script itself, run where snmpd runs it).
fn wrapped_counter(router: &Netns, script: &Path, oid: &str) -> u64 {
    let out = router
        .run("sh", &[&script.display().to_string(), "-g", oid])
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .nth(2)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("the counter script said {text:?}"))
}

fn json_events(server: &ServerProc, event: &str) -> Vec<serde_json::Value> {
    server
        .log()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == event)
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "no readings");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn link_load_polled_from_the_routers_snmpd_is_the_tests_load() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let chain = Chain::new(NET, Link::default(), Link::default()).expect("build the lab chain");
    let dir = common::TempDir::new("snmp");
    let router6 = format!("2001:2:0:{NET:x}::ff");
    let read = |file: &str| {
        let out = chain.r.run("cat", &[file]).unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let index = read("/sys/class/net/to_b/ifindex");
    let tx_now: u64 = read("/sys/class/net/to_b/statistics/tx_bytes")
        .parse()
        .unwrap();
    // The 32-bit out counter of `to_b` starts 12 MB below 2^32: the load
    // (40 Mbit/s for 12 s, 60 MB) takes it past the wrap.
    let offset = (1u64 << 32) - tx_now % (1 << 32) - 12_000_000;
    let script = dir.join("wrap32.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ \"$1\" = \"-g\" ] || exit 0\ncase \"$2\" in\n\
             {IF_IN_OCTETS}.{index}) f=rx_bytes; off=0 ;;\n\
             {IF_OUT_OCTETS}.{index}) f=tx_bytes; off={offset} ;;\n*) exit 0 ;;\nesac\n\
             v=$(cat /sys/class/net/to_b/statistics/$f)\n\
             echo \"$2\"\necho counter\necho $(( (v + off) % 4294967296 ))\n"
        ),
    )
    .unwrap();
    // Two agents in the router, each with its own cache of the
    // interface table: net-snmp's own IF-MIB over v3 (64-bit counters),
    // and one whose 32-bit octet counters of `to_b` come through the
    // script, over v2c.
    std::fs::write(
        dir.join("snmpd-64.conf"),
        format!(
            "agentAddress udp6:[{router6}]:161\n\
             createUser labv3 SHA-256 \"auth-pass-1\" AES \"priv-pass-1\"\n\
             rouser labv3 priv\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("snmpd-32.conf"),
        format!(
            "agentAddress udp6:[{router6}]:1161\n\
             rocommunity6 lab-public 2001:2:0:{NET:x}::/64\n\
             pass {IF_IN_OCTETS}.{index} /bin/sh {s}\n\
             pass {IF_OUT_OCTETS}.{index} /bin/sh {s}\n",
            s = script.display()
        ),
    )
    .unwrap();
    let snmpd = start_snmpd(&chain.r, &dir, "64", 161);
    let _snmpd32 = start_snmpd(&chain.r, &dir, "32", 1161);

    let target = |name: &str, port: u16, rest: &str| {
        format!(
            "[[snmp]]\nname = \"{name}\"\naddress = \"[{router6}]:{port}\"\n\
             interfaces = [\"to_a\", \"to_b\"]\nevery = \"1s\"\ntimeout = \"0.5s\"\n{rest}\n"
        )
    };
    let v3 = |password: &str| {
        format!(
            "version = \"3\"\nuser = \"labv3\"\nauth = \"sha256\"\n\
             auth_password = \"{password}\"\nprivacy = \"aes128\"\n\
             privacy_password = \"priv-pass-1\""
        )
    };
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        [
            target("r1v3", 161, &v3("auth-pass-1")),
            target("r1w", 1161, "community = \"lab-public\"\ncounters = 32"),
            target("r1bad", 161, &v3("wrong-pass-1")),
            // An alert on the polled load.
            "[[alert]]\nname = \"hot-link\"\nmetric = \"reading\"\nprobe = \"r1v3\"\n\
             reading = \"to_b.out\"\nabove = 20\nclear = 10\n"
                .to_string(),
        ]
        .concat(),
    )
    .unwrap();
    let db = dir.join("agent.db");
    let mut cmd = chain.a.command(env!("CARGO_BIN_EXE_sonde"));
    cmd.env_remove("SONDE_LOG").args(["--log-format", "json"]);
    let agent = ServerProc::start_with(
        cmd,
        &["--bind", &chain.a6],
        &[
            "--no-reflector",
            "--config",
            &config.display().to_string(),
            &format!("--archive={}", db.display()),
        ],
    );
    let peer = lab_server(&chain.b, &[&chain.b6]);
    // Two polls before the load: the followers have a start.
    std::thread::sleep(Duration::from_secs(3));

    let before32 = wrapped_counter(&chain.r, &script, &format!("{IF_OUT_OCTETS}.{index}"));
    let start = sonde_model::clock::now_ns();
    let r = lab_json(
        &chain.a,
        "udp",
        &chain.b6,
        peer.port,
        &["-t", "12s", "-b", "40M", "-l", "1400"],
    );
    let end = sonde_model::clock::now_ns();
    let after32 = wrapped_counter(&chain.r, &script, &format!("{IF_OUT_OCTETS}.{index}"));
    assert!(
        after32 < before32,
        "the 32-bit counter did not wrap: {before32} then {after32}"
    );
    let s = &r["summary"]["forward"];
    let payload_bps = s["throughput_bps"].as_f64().unwrap();
    // On the wire of the router's link each 1400-byte payload is a frame
    // of 1400 + 8 (UDP) + 40 (IPv6) + 14 (Ethernet) bytes: what the
    // interface counters count.
    let truth_mbps = payload_bps * 1462.0 / 1400.0 / 1e6;
    // One more poll after the load ends.
    std::thread::sleep(Duration::from_millis(1500));

    let mut store = sonde_archive::Store::open(&db.display().to_string()).unwrap();
    // The intervals between polls wholly inside the load (from 1 s after
    // the command started to just before it ended), as the portal's load
    // beside latency draws them: Mbit/s between successive samples.
    let inside =
        |store: &mut sonde_archive::Store, interface: &str, out: bool| -> Vec<(i64, f64)> {
            let samples = store
                .interface_samples(interface, start - 5_000_000_000, end + 5_000_000_000)
                .unwrap();
            samples
                .windows(2)
                .filter(|w| w[0].at_ns >= start + 1_000_000_000 && w[1].at_ns <= end - 300_000_000)
                .map(|w| {
                    let count = |i: usize| {
                        let c = w[i].counters;
                        if out {
                            c.tx_bytes
                        } else {
                            c.rx_bytes
                        }
                    };
                    let bytes = count(1).checked_sub(count(0)).unwrap_or_else(|| {
                        panic!("{interface}: the total went down during the load: {w:?}")
                    });
                    let secs = (w[1].at_ns - w[0].at_ns) as f64 / 1e9;
                    (w[1].at_ns, bytes as f64 * 8.0 / secs / 1e6)
                })
                .collect()
        };
    let mut checked = Vec::new();
    for (probe, interface, out) in [
        ("r1v3", "to_b", true),
        ("r1v3", "to_a", false),
        ("r1w", "to_b", true),
        ("r1w", "to_a", false),
    ] {
        let rates = inside(&mut store, &format!("{probe}:{interface}"), out);
        let values: Vec<f64> = rates.iter().map(|r| r.1).collect();
        assert!(values.len() >= 2, "{probe}:{interface}: {rates:?}");
        let m = median(values.clone());
        checked.push(format!(
            "{probe}:{interface}: median {m:.2} Mbit/s of {values:.2?}"
        ));
        assert!(
            (m - truth_mbps).abs() <= 0.05 * truth_mbps,
            "{probe}:{interface}: {m:.2} Mbit/s polled, the test's {truth_mbps:.2}; {values:.2?}"
        );
        // Every interval, the wrapped one too, is the load: a wrap taken
        // for a reset would leave a gap, one taken for bytes a spike.
        for v in &values {
            assert!(
                (v - truth_mbps).abs() <= 0.15 * truth_mbps,
                "{probe}:{interface}: an interval of {v:.2} Mbit/s in {values:.2?} \
                 ({truth_mbps:.2})"
            );
        }
        // The readings say the same, each at its interval's end.
        let metric = format!("{interface}.{}", if out { "out" } else { "in" });
        for (at, rate) in &rates {
            let kept = store.raw_readings(probe, &metric, *at, at + 1, 1).unwrap();
            assert!(
                kept.len() == 1 && (kept[0].1 - rate).abs() <= 1e-6 * rate,
                "{probe} {metric} at {at}: {kept:?}, the samples say {rate}"
            );
        }
    }
    eprintln!("the test's load: {truth_mbps:.2} Mbit/s on the wire; polled: {checked:#?}");
    let breaks = json_events(&agent, "snmp_counter_break");
    assert!(breaks.is_empty(), "breaks during the load: {breaks:?}");
    // The share of the interface's speed comes with the rates (veth
    // reports 10 Gbit/s).
    let util = store
        .raw_readings("r1v3", "to_b.out_util", start, end, 100)
        .unwrap();
    assert!(
        util.iter()
            .any(|(_, v)| (v - truth_mbps / 100.0).abs() <= 0.05 * truth_mbps / 100.0),
        "{util:?}"
    );

    // The alert on the readings was raised by the load.
    let raised = json_events(&agent, "alert_raised");
    assert!(
        raised
            .iter()
            .any(|e| e["alert"] == "hot-link" && e["path"] == "reading to_b.out of r1v3"),
        "{raised:?}"
    );

    // The wrong password gets no answer, and nothing is kept under it.
    assert!(
        json_events(&agent, "snmp_poll_failed")
            .iter()
            .any(|e| e["target"] == "r1bad"),
        "{}",
        agent.log()
    );
    assert!(store
        .reading_series()
        .unwrap()
        .iter()
        .all(|s| s.probe != "r1bad"),);

    // The router's agent restarts: its uptime starts again while the
    // kernel's counters go on; one interval is broken, then polls go on.
    drop(snmpd);
    let snmpd = start_snmpd(&chain.r, &dir, "64", 161);
    let restarted = sonde_model::clock::now_ns();
    let deadline = Instant::now() + Duration::from_secs(15);
    let broke = || {
        json_events(&agent, "snmp_counter_break")
            .iter()
            .any(|e| e["target"] == "r1v3" && e["reason"] == "the agent restarted")
    };
    while !broke() {
        assert!(
            Instant::now() < deadline,
            "no break after the restart: {}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let after = store
            .raw_readings("r1v3", "to_b.out", restarted, i64::MAX, 10)
            .unwrap();
        if !after.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no reading after the restart: {}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(snmpd);
}
