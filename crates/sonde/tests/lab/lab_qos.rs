//! Quality of service in the lab: DiffServ class queues, ingress marking,
//! and the studies' QoS paths (examples/lab/6net-qos.toml, geant-like.toml)
//! measured with `sonde udp` and `sonde tcp` against what they configure.
//! Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_cli::{
    example_up, json_of, lab_up, num, remarked, remarks, serial, serve_in, udp_in, udp_spawn,
    KillOnDrop,
};
use common::{lab_allowed, sonde, stderr};
use std::time::Duration;

#[test]
fn the_6net_testbed_keeps_premium_whole_and_polices_its_excess() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    let _lab = example_up("6net-qos.toml", "6net");
    let gr = "2001:2:0:4::2";
    let _server = KillOnDrop(serve_in("6net", "gr", gr));
    // Background from the Netherlands, marked EF by its sender but reset to
    // best effort at its (non-participant) access: 200 Mbit/s into the
    // 155 Mbit/s core, as in seed 004's Table 3 (120 Mbit/s, the figures'
    // heaviest load, does not congest a 155 Mbit/s link). Premium from the
    // UK: 1.5 Mbit/s of EF.
    let background = udp_spawn(
        "6net",
        "nl",
        gr,
        &["-b", "200M", "-l", "1400", "-S", "EF", "-t", "8s"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let premium = udp_in("6net", "uk", gr, &["-b", "1.5M", "-S", "EF", "-t", "5s"]);
    let background = json_of(background);
    let p = &premium["summary"]["forward"];
    let b = &background["summary"]["forward"];
    let (p_loss, b_loss) = (num(&p["loss_pct"]), num(&b["loss_pct"]));
    let reset = remarked(b, 46, 0) / num(&b["received_packets"]) * 100.0;
    eprintln!(
        "6NET: premium EF 1.5 Mbit/s lost {p_loss:.3} % beside 200 Mbit/s of background, \
         which lost {b_loss:.1} % and arrived reset to CS0 in {reset:.1} % of packets"
    );
    assert!(p_loss < 0.1, "premium loss {p_loss} %");
    assert!(b_loss > 15.0, "background loss {b_loss} %");
    assert!(reset > 99.9, "background reset in {reset} %");

    // Premium above its policer (5 % of 155 Mbit/s = 7.75 Mbit/s of IPv6
    // packets): 10 Mbit/s of 1400-byte payloads loses the excess.
    let over = udp_in(
        "6net",
        "uk",
        gr,
        &["-b", "10M", "-l", "1400", "-S", "EF", "-t", "5s"],
    );
    let loss = num(&over["summary"]["forward"]["loss_pct"]);
    let expected = (1.0 - 7.75 / (10.0 * 1448.0 / 1400.0)) * 100.0;
    eprintln!("6NET: premium at 10 Mbit/s lost {loss:.2} %, expected {expected:.2} %");
    assert!((loss - expected).abs() <= 2.0, "policed loss {loss:.2} %");
}

const STAR: &str = r#"
[[node]]
name = "a"
[[node]]
name = "c"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
a = "a"
b = "r"
[[link]]
a = "c"
b = "r"
[[link]]
a = "r"
b = "b"
"#;

/// Runs `sonde udp` from c with `args` (5 s) while a floods r → b with
/// 40 Mbit/s of best effort for 3.5 s, starting 0.3 s in (each sonde
/// control connection opens on an idle link); returns both results.
fn under_flood(host: &str, args: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let mut a = vec!["-t", "5s", "-l", "1400"];
    a.extend(args);
    let fg = udp_spawn("lq1", "c", host, &a);
    std::thread::sleep(Duration::from_millis(300));
    let flood = udp_spawn(
        "lq1",
        "a",
        "2001:2:0:3::2",
        &["-b", "40M", "-l", "1400", "-t", "3500ms"],
    );
    (json_of(fg), json_of(flood))
}

#[test]
fn diffserv_queues_serve_priority_first_and_keep_the_lbe_share() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    // 20 Mbit/s out of r towards b, LBE guaranteed 10 %; a floods it with
    // 40 Mbit/s of best effort while c sends EF (IPv4) or LBE (IPv6).
    let _lab = lab_up(
        "lq1",
        &format!("{STAR}[link.a_to_b]\nrate = \"20M\"\ndiffserv = {{ lbe_min = \"10%\" }}\n"),
    );
    let _server = KillOnDrop(serve_in("lq1", "b", "::"));
    let (ef, bg) = under_flood("198.18.3.2", &["-b", "5M", "-S", "EF"]);
    let ef_loss = num(&ef["summary"]["forward"]["loss_pct"]);
    let bg_loss = num(&bg["summary"]["forward"]["loss_pct"]);
    eprintln!("EF 5 Mbit/s over IPv4 lost {ef_loss:.3} % beside 40 Mbit/s of best effort, which lost {bg_loss:.1} %");
    assert!(ef_loss < 0.1, "EF loss {ef_loss} %");
    assert!(bg_loss > 40.0, "best effort loss {bg_loss} %");

    let (lbe, _) = under_flood("2001:2:0:3::2", &["-b", "10M", "-S", "CS1"]);
    // Seconds 1–3 are wholly under the flood. The LBE share is 10 % of
    // 20 Mbit/s of IPv6 packets: 2 × 1400 / 1448 Mbit/s of payload.
    let loaded: Vec<f64> = lbe["intervals"].as_array().unwrap()[1..3]
        .iter()
        .map(|i| num(&i["sums"][0]["throughput_bps"]) / 1e6)
        .collect();
    let got = loaded.iter().sum::<f64>() / loaded.len() as f64;
    let share = 2.0 * 1400.0 / 1448.0;
    eprintln!("LBE offered 10 Mbit/s under the flood: {got:.2} Mbit/s, its share {share:.2}");
    assert!(got >= 0.9 * share, "LBE starved: {loaded:?} Mbit/s");
    assert!(
        got <= 0.3 * 10.0,
        "LBE did not yield to best effort: {loaded:?} Mbit/s"
    );

    // Alone, LBE takes what it offers.
    let alone = udp_in(
        "lq1",
        "c",
        "2001:2:0:3::2",
        &["-b", "10M", "-l", "1400", "-S", "CS1", "-t", "3s"],
    );
    let alone_loss = num(&alone["summary"]["forward"]["loss_pct"]);
    assert!(alone_loss < 0.1, "LBE alone lost {alone_loss} %");
}

#[test]
fn ingress_marking_trusts_resets_or_filters() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    // Three hosts on router r. Into r: a's link filters EF and lists a's
    // own prefixes; c's link filters EF with the same list (c is not on
    // it); z's link resets every DSCP. Nothing is marked leaving r.
    let filter = "marking = \"filter\"\nef_from = [\"2001:2:0:1::/64\", \"198.18.1.0/24\"]\n";
    let _lab = lab_up(
        "lq2",
        &format!(
            "[[node]]\nname = \"a\"\n[[node]]\nname = \"c\"\n[[node]]\nname = \"z\"\n\
             [[node]]\nname = \"r\"\nkind = \"router\"\n\
             [[link]]\na = \"a\"\nb = \"r\"\n[link.a_to_b]\n{filter}\
             [[link]]\na = \"c\"\nb = \"r\"\n[link.a_to_b]\n{filter}\
             [[link]]\na = \"z\"\nb = \"r\"\n[link.a_to_b]\nmarking = \"reset\"\n"
        ),
    );
    let _on_z = KillOnDrop(serve_in("lq2", "z", "::"));
    let _on_a = KillOnDrop(serve_in("lq2", "a", "::"));
    let run = |node: &str, host: &str, dscp: &str| {
        let r = udp_in("lq2", node, host, &["-b", "1M", "-S", dscp, "-t", "2s"]);
        r["summary"]["forward"].clone()
    };
    for (z, a) in [
        ("2001:2:0:3::1", "2001:2:0:1::1"),
        ("198.18.3.1", "198.18.1.1"),
    ] {
        let listed = run("a", z, "EF");
        assert!(num(&listed["received_packets"]) > 0.0);
        assert!(remarks(&listed).is_empty(), "a's EF is kept: {listed}");
        let unlisted = run("c", z, "EF");
        let n = num(&unlisted["received_packets"]);
        eprintln!(
            "{z}: EF from c (not listed) arrived as CS0 in {} of {n}",
            remarked(&unlisted, 46, 0)
        );
        assert!(
            n > 0.0 && remarked(&unlisted, 46, 0) == n,
            "c's EF is reset: {unlisted}"
        );
        let af = run("c", z, "AF41");
        assert!(remarks(&af).is_empty(), "a filter leaves AF41 alone: {af}");
        let reset = run("z", a, "AF41");
        let n = num(&reset["received_packets"]);
        assert!(
            n > 0.0 && remarked(&reset, 34, 0) == n,
            "z's DSCP is reset: {reset}"
        );
    }
}

#[test]
fn the_geant_path_punishes_udp_above_its_limiter() {
    if !lab_allowed() {
        return;
    }
    let _one = serial();
    let _lab = example_up("geant-like.toml", "geant");
    let b = "2001:2:0:2::2";
    let _server = KillOnDrop(serve_in("geant", "b", b));
    // TCP is not limited: 100 Mbit/s carries 100 × 1428 / 1514 = 94.3
    // Mbit/s of TCP over IPv6 (seed 000: 93.1).
    let tcp = sonde()
        .args(["lab", "exec", "--lab", "geant", "a", "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["tcp", b, "-t", "5s", "-O", "2s", "-J"])
        .output()
        .unwrap();
    assert!(tcp.status.success(), "{}", stderr(&tcp));
    let tcp: serde_json::Value = serde_json::from_slice(&tcp.stdout).unwrap();
    let tcp_mbps = num(&tcp["summary"]["total"]["throughput_bps"]) / 1e6;

    let udp = |args: &[&str]| {
        let mut a = vec!["-l", "1400", "-t", "4s"];
        a.extend(args);
        udp_in("geant", "a", b, &a)
    };
    let below = udp(&["-b", "80M"]);
    let below_pdr = num(&below["summary"]["forward"]["pdr_pct"]);
    let above = udp(&["-b", "95M"]);
    let above_pdr = num(&above["summary"]["forward"]["pdr_pct"]);
    let back = udp(&["-b", "95M", "-R"]);
    let back_mbps = num(&back["summary"]["reverse"]["throughput_bps"]) / 1e6;
    // 88 Mbit/s of IPv6 packets is 88 × 1400 / 1448 of payload.
    let cut = 88.0 * 1400.0 / 1448.0;
    eprintln!(
        "GEANT-like: TCP {tcp_mbps:.1} Mbit/s; UDP A→B PDR {below_pdr:.2} % at 80 Mbit/s, \
         {above_pdr:.2} % at 95; B→A at 95 Mbit/s: {back_mbps:.2} Mbit/s (limit {cut:.2})"
    );
    assert!(tcp_mbps >= 90.0, "TCP {tcp_mbps:.1} Mbit/s");
    assert!(below_pdr >= 99.9, "below the limiter: PDR {below_pdr} %");
    // 5 % passes once the bucket (10 ms deep, one burst of debt) has
    // drained: about 0.1 s of 4 s at 95 Mbit/s.
    assert!(
        (3.0..=10.0).contains(&above_pdr),
        "punished: PDR {above_pdr} %"
    );
    assert!(
        (back_mbps - cut).abs() <= 0.03 * cut,
        "B→A cut to {back_mbps:.2} Mbit/s"
    );
}
