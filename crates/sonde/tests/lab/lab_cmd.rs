//! `sonde lab`: a topology file becomes namespaces, links, addresses,
//! routes and shaped queues that measure as configured; labs are listed,
//! rebuilt over leftovers, coexist, and go away without a trace.
//! Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_cli::{
    assert_rtt_of, lab, serial, serve_in, system_ping_ms, udp_in, write_topology, Down,
};
use common::{lab_allowed, sonde, stderr, u};
use std::process::Command;

const THREE: &str = r#"
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
a = "a"
b = "r"
[link.a_to_b]
loss = "3%"
[[link]]
a = "r"
b = "b"
[link.a_to_b]
rate = "9M"
"#;

#[test]
fn a_lab_measures_as_its_file_says() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    let file = write_topology("lc1", THREE);
    let _down = Down("lc1");
    let up = lab(&["up", file.to_str().unwrap()]);
    assert!(up.status.success(), "{}", stderr(&up));
    // b is at the far end of link 2: 2001:2:0:2::2 and 198.18.2.2.
    let mut server = serve_in("lc1", "b", "2001:2:0:2::2");
    // 18 Mbit/s into the 9 Mbit/s r→b shaper, 1400-byte payloads.
    let r = udp_in("lc1", "a", "2001:2:0:2::2", &["-t", "3s", "-b", "18M"]);
    let got = r["summary"]["forward"]["throughput_bps"].as_f64().unwrap();
    let expected = 9e6 * 1400.0 / 1462.0;
    assert!(
        (got - expected).abs() / expected < 0.03,
        "received {got:.0}, expected {expected:.0}"
    );
    // 3 % loss on a→r: 100-byte packets at 4 Mbit/s (under the shaper,
    // headers included) for 6 s: 30,000 packets, σ of the estimate 0.1 pp.
    let r = udp_in(
        "lc1",
        "a",
        "2001:2:0:2::2",
        &["-t", "6s", "-b", "4M", "-l", "100"],
    );
    let loss = r["summary"]["forward"]["loss_pct"].as_f64().unwrap();
    eprintln!("configured 3 %: measured {loss:.3} %");
    assert!(u(&r["summary"]["forward"]["sent_packets"]) >= 29_000);
    assert!(
        (loss - 3.0).abs() <= 0.4,
        "loss {loss:.3} %, configured 3 %"
    );
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn labs_are_listed_rebuilt_coexist_and_leave_nothing() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let f1 = write_topology("lc2", THREE);
    let f2 = write_topology("lc3", THREE);
    let _d1 = Down("lc2");
    let _d2 = Down("lc3");
    for f in [&f1, &f1, &f2] {
        // The second `up` of lc2 replaces what the first left.
        let o = lab(&["up", f.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let list = String::from_utf8_lossy(&lab(&["list"]).stdout).to_string();
    assert!(list.contains("lc2:") && list.contains("lc3:"), "{list}");
    // Routes reach across the router over both families (link 1 drops
    // 3 %, so five pings, any of which may answer).
    for target in ["2001:2:0:2::2", "198.18.2.2"] {
        let o = lab(&[
            "exec", "--lab", "lc2", "a", "--", "ping", "-c", "5", "-i", "0.2", "-W", "2", target,
        ]);
        assert!(
            o.status.success(),
            "ping {target}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // The node name is in both labs: exec without --lab is ambiguous.
    let o = lab(&["exec", "a", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("several labs"), "{}", stderr(&o));
    let show = String::from_utf8_lossy(&lab(&["show", "lc2"]).stdout).to_string();
    assert!(
        show.contains("tbf") && show.contains("rate 9Mbit"),
        "{show}"
    );
    assert!(show.contains("numgen random"), "{show}");
    for name in ["lc2", "lc3"] {
        assert!(lab(&["down", name]).status.success());
    }
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(
        !left.contains("sonde-lab-lc2") && !left.contains("sonde-lab-lc3"),
        "{left}"
    );
    let o = lab(&["down", "lc2"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a second down names the missing lab"
    );
}

#[test]
fn bad_topologies_are_refused_by_name() {
    let f = write_topology(
        "lc4",
        "[[node]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"zz\"\n",
    );
    let o = lab(&["up", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'zz'"), "{}", stderr(&o));
    let f = write_topology(
        "lc5",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\ndelay = \"1ms\"\njitter = \"5ms\"\n",
    );
    let o = lab(&["up", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("jitter at most the delay"),
        "{}",
        stderr(&o)
    );
}

/// The average RTT of `ping -c 20 -i 0.05` from `node` to `target`, in ms.
#[test]
fn the_emulator_delays_each_direction_as_configured() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    let file = write_topology(
        "lc6",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\ndelay = \"20ms\"\n",
    );
    let _down = Down("lc6");
    let up = lab(&["up", file.to_str().unwrap()]);
    assert!(up.status.success(), "{}", stderr(&up));
    for target in ["2001:2:0:1::2", "198.18.1.2"] {
        let rtt = system_ping_ms("lc6", "a", target);
        eprintln!("20 ms each way, {target}: system ping (quickest, median) {rtt:.3?} ms");
        assert_rtt_of(target, rtt, 40.0);
    }
}

#[test]
fn tcp_fills_an_emulated_long_link() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    let file = write_topology(
        "lc7",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"100M\"\ndelay = \"10ms\"\n",
    );
    let _down = Down("lc7");
    let up = lab(&["up", file.to_str().unwrap()]);
    assert!(up.status.success(), "{}", stderr(&up));
    let mut server = serve_in("lc7", "b", "2001:2:0:1::2");
    let out = sonde()
        .args(["lab", "exec", "--lab", "lc7", "a", "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["tcp", "2001:2:0:1::2", "-t", "5s", "-O", "2s", "-J"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mbps = u(&r["summary"]["total"]["throughput_bps"]) as f64 / 1e6;
    eprintln!("100 Mbit/s, 10 ms each way: TCP {mbps:.1} Mbit/s");
    assert!(mbps >= 90.0, "TCP through the emulator: {mbps:.1} Mbit/s");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn every_example_topology_is_valid() {
    // Each study's labs: examples/studies/NNN-name/*lab.toml.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/studies");
    let mut seen = 0;
    for study in std::fs::read_dir(dir).unwrap() {
        for entry in std::fs::read_dir(study.unwrap().path()).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with("lab.toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            sonde_lab::Topology::from_toml(&text, &path.display().to_string())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
        }
    }
    assert!(seen >= 5, "examples/studies has {seen} topologies");
}

/// Mean of the per-interval RFC 3550 jitter of a UDP run from a to b,
/// and the standard error of that mean (each interval's value is an
/// estimator of its own: 100 packets against the estimator's memory of
/// 16, so the intervals are nearly independent).
fn mean_interval_jitter_ms(labname: &str) -> (f64, f64) {
    // 1250-byte payloads at 2 Mbit/s: a packet every 5 ms, far more than
    // the jitter, so the emulator does not reorder them.
    let r = udp_in(
        labname,
        "a",
        "2001:2:0:1::2",
        &["-t", "10s", "-i", "500ms", "-b", "2M", "-l", "1250"],
    );
    let values: Vec<f64> = r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|i| i["sums"][0]["jitter_ms"].as_f64().unwrap())
        .collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// E|X1 - X2| of the pareto-normal jitter of σ = 1 ms, by Monte Carlo.
fn mean_abs_difference_ms() -> f64 {
    use sonde_lab::emulator::{jitter_ns, JitterDist, Rng};
    let mut rng = Rng::new(12345);
    let n = 1_000_000;
    let mut draw = || jitter_ns(JitterDist::ParetoNormal, 1e6, &mut rng);
    (0..n).map(|_| (draw() - draw()).abs()).sum::<f64>() / n as f64 / 1e6
}

#[test]
fn udp_jitter_matches_the_emulated_distribution() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    // RFC 3550 jitter converges on E|D|, D the difference of two transit
    // times: for uniform ±J that is 2J/3, for normal σ it is 2σ/√π; for
    // pareto-normal, which has no closed form, E|X1 - X2| over a million
    // draws of the distribution's definition.
    for (name, dist, expected) in [
        ("lc8", "uniform", 2.0 / 3.0),
        ("lc9", "normal", 2.0 / std::f64::consts::PI.sqrt()),
        ("lc12", "pareto-normal", mean_abs_difference_ms()),
    ] {
        let file = write_topology(
            name,
            &format!(
                "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\ndelay = \"10ms\"\njitter = \"1ms\"\njitter_dist = \"{dist}\"\n"
            ),
        );
        let up = lab(&["up", file.to_str().unwrap()]);
        assert!(up.status.success(), "{}", stderr(&up));
        let _down = Down(name);
        let mut server = serve_in(name, "b", "2001:2:0:1::2");
        // The machine's own jitter (the hosts, the emulator's wake-ups),
        // measured on the same path without the emulated jitter: it only
        // adds, and E|X + N| lies between E|X| and E|X| + E|N| (X the
        // emulated part, N the machine's, independent of it).
        let set = |jitter: &str| {
            let o = lab(&["set", name, "1", "--jitter", jitter]);
            assert!(o.status.success(), "{}", stderr(&o));
        };
        set("0ms");
        let (floor, _) = mean_interval_jitter_ms(name);
        set("1ms");
        let (got, sem) = mean_interval_jitter_ms(name);
        let _ = server.kill();
        let _ = server.wait();
        eprintln!(
            "{dist} jitter 1 ms: RFC 3550 jitter {got:.3} ± {sem:.3} ms, expected {expected:.3} ms, \
             the machine's own {floor:.3} ms"
        );
        // 4.5 standard errors of the measured mean either side, and 3 %
        // for the estimator's bias over a finite run.
        let margin = 4.5 * sem + 0.03 * expected;
        assert!(
            got >= expected - margin && got <= expected + floor + margin,
            "{dist}: {got:.3} ± {sem:.3} ms vs {expected:.3} ms (+ {floor:.3} ms of this machine's)"
        );
    }
}

#[test]
fn one_percent_loss_over_two_hundred_thousand_packets() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    let file = write_topology(
        "lc10",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nloss = \"1%\"\n",
    );
    let _down = Down("lc10");
    let up = lab(&["up", file.to_str().unwrap()]);
    assert!(up.status.success(), "{}", stderr(&up));
    let mut server = serve_in("lc10", "b", "2001:2:0:1::2");
    // 100-byte payloads at 16 Mbit/s for 10 s: 200,000 packets.
    let r = udp_in(
        "lc10",
        "a",
        "2001:2:0:1::2",
        &["-t", "10s", "-b", "16M", "-l", "100", "-i", "0"],
    );
    let s = &r["summary"]["forward"];
    let loss = s["loss_pct"].as_f64().unwrap();
    eprintln!(
        "configured 1 %: measured {loss:.3} % over {} packets",
        u(&s["sent_packets"])
    );
    // The sender's schedule is 200,000; a sender whose schedule slipped
    // more than its catch-up (a loaded machine) sends a little less.
    let sent = u(&s["sent_packets"]);
    assert!((190_000..=200_000).contains(&sent), "{s}");
    // Binomial: σ = √(0.01 · 0.99 / 190,000) = 0.023 pp; 0.2 pp is 8.8 σ.
    assert!((loss - 1.0).abs() <= 0.2, "loss {loss:.3} %");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn without_root_the_lab_says_so() {
    if !lab_allowed() {
        return;
    }
    let file = write_topology("lc11", "[[node]]\nname = \"a\"\n");
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["lab", "up", file.to_str().unwrap()])
        .output()
        .expect("setpriv (util-linux)");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("the lab needs root"), "{}", stderr(&o));
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&left.stdout).contains("sonde-lab-lc11"));
}
