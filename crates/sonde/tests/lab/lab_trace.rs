//! `sonde trace` on a lab path of four routers, a → r1 → r2 → r3 → r4 → b,
//! whose r3 resets every DSCP to CS0 as packets arrive from r2 (ingress
//! marking `reset`): over IPv6 and IPv4 the hops are exactly the
//! configured routers in order, then b, with ICMP echo, UDP and TCP SYN
//! probes; with `-S EF` r1 and r2 quote the probe as EF, r3 and r4 as
//! CS0, and r3 is named as the hop that changed it; r2's next link
//! carries 1400 bytes, and `--mtu` finds 1400 told by hop 2; then r2
//! sends no Time Exceeded, and it is a hop of `*` the trace goes on past.
//! The system's `traceroute -I` gives the same hops and its `tracepath`
//! the same MTU, told by the same hop. The EF trace and the MTU's, as
//! text, are docs/trace.md's walkthrough `trc`, run first as written.
//! Light traffic (a few probes): runs beside the measuring tests, on a
//! lab of its own. Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_cli::{agent_in, lab_up, serve_in, Down, KillOnDrop};
use common::walkthrough::Walkthrough;
use common::{lab_allowed, sonde, stderr};
use serde_json::Value;
use std::collections::BTreeSet;

const ROUTERS: [&str; 4] = ["r1", "r2", "r3", "r4"];

fn up() -> Down {
    let mut body = String::from("[[node]]\nname = \"a\"\n");
    for r in ROUTERS {
        body += &format!("[[node]]\nname = \"{r}\"\nkind = \"router\"\n");
    }
    body += "[[node]]\nname = \"b\"\n";
    let chain = ["a", "r1", "r2", "r3", "r4", "b"];
    for (i, pair) in chain.windows(2).enumerate() {
        body += &format!("[[link]]\na = \"{}\"\nb = \"{}\"\n", pair[0], pair[1]);
        // Link 3 is r2 → r3: it carries 1400-byte packets, and r3 resets
        // what arrives from r2.
        if i == 2 {
            body += "mtu = 1400\n[link.a_to_b]\nmarking = \"reset\"\n";
        }
    }
    let down = lab_up("trc", &body);
    // A router's ICMP errors are rate-limited (a burst, then one a
    // second); the test's probes come in quick succession.
    for r in ROUTERS.iter().chain(&["b"]) {
        in_node(
            r,
            &[
                "sysctl",
                "-qw",
                "net.ipv4.icmp_ratelimit=0",
                "net.ipv6.icmp.ratelimit=0",
            ],
        );
    }
    down
}

fn in_node(node: &str, cmd: &[&str]) -> std::process::Output {
    in_lab("trc", node, cmd)
}

/// `cmd` run in `node` of `lab`, which must succeed.
fn in_lab(lab: &str, node: &str, cmd: &[&str]) -> std::process::Output {
    let out = sonde()
        .args(["lab", "exec", "--lab", lab, node, "--"])
        .args(cmd)
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", stderr(&out));
    out
}

/// `sonde trace TARGET -J ARGS` from node a: the result's `trace`
/// figures (the result checked against its schema first).
fn trace(target: &str, args: &[&str]) -> Value {
    let mut cmd = vec![env!("CARGO_BIN_EXE_sonde"), "trace", target, "-J"];
    cmd.extend(args);
    let doc: Value = serde_json::from_slice(&in_node("a", &cmd).stdout).unwrap();
    common::schema::assert_valid(&common::schema::result_v3(), &doc);
    assert_eq!(doc["test"], "trace", "{doc}");
    doc["trace"].clone()
}

/// The addresses that answered a hop's probes (of a trace's `-J`).
fn answering(hop: &Value) -> BTreeSet<&str> {
    hop["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["from"].as_str())
        .collect()
}

/// Each hop's answering address (`*` for none) and the DSCP it quoted.
fn hops(t: &Value) -> Vec<(String, Option<u64>)> {
    t["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let first = h["probes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| !p.is_null());
            match first {
                Some(p) => (p["from"].as_str().unwrap().to_string(), p["dscp"].as_u64()),
                None => ("*".into(), None),
            }
        })
        .collect()
}

/// One lab for the file: the traces first, then r2 made silent.
#[test]
fn a_trace_gives_the_routers_in_order_names_the_hop_that_rewrote_ef_and_passes_a_silent_one() {
    if !lab_allowed() {
        return;
    }
    // docs/trace.md's walkthrough, as written: its text names the hop
    // that rewrote EF, and the path MTU.
    {
        let walked = Walkthrough::named("docs/trace.md", "trc").run(&[]);
        let traces = walked.of("trace");
        assert_eq!(traces.len(), 2, "the EF trace and the MTU's");
        let text = &traces[0].stdout;
        assert!(
            text.lines().any(|l| l.starts_with(" 3 ")
                && l.contains("2001:2:0:3::2")
                && l.contains("DSCP changed here (EF to CS0)")),
            "{text}"
        );
        let text = &traces[1].stdout;
        assert!(text.contains("path MTU 1400 bytes"), "{text}");
    }
    let _down = up();
    // Each router answers from its address on link n toward a.
    let v6 = |n: u8| format!("2001:2:0:{n}::2");
    let v4 = |n: u8| format!("198.18.{n}.2");
    // Each kind of probe: its flags, how the target answers, and the
    // DSCP that answer quotes (an echo reply and a RST quote nothing; a
    // UDP probe's Port Unreachable quotes it as it arrived, CS0).
    let kinds: [(&[&str], &str, Option<u64>); 3] = [
        (&[], "echo_reply", None),
        (&["--proto", "udp"], "port_unreachable", Some(0)),
        (&["--proto", "tcp", "-p", "80"], "rst", None),
    ];
    for (target, addr) in [
        ("2001:2:0:5::2", &v6 as &dyn Fn(u8) -> String),
        ("198.18.5.2", &v4),
    ] {
        for (flags, answer, last_dscp) in kinds {
            let mut args = vec!["-q", "2", "-w", "2s", "-S", "EF"];
            args.extend(flags);
            let t = trace(target, &args);
            let want: Vec<(String, Option<u64>)> = vec![
                (addr(1), Some(46)),
                (addr(2), Some(46)),
                (addr(3), Some(0)),
                (addr(4), Some(0)),
                (target.to_string(), last_dscp),
            ];
            assert_eq!(hops(&t), want, "{flags:?} to {target}: {t}");
            assert_eq!(t["arrived"], true, "{t}");
            assert_eq!(t["dscp_changed_at"], 3, "{t}");
            assert_eq!(t["hops"][4]["probes"][0]["answer"], answer, "{t}");
            // Every probe answered, each hop by one address (one flow).
            for h in t["hops"].as_array().unwrap() {
                let probes = h["probes"].as_array().unwrap();
                assert!(probes.iter().all(|p| !p.is_null()), "{h}");
                assert!(probes.iter().all(|p| p["from"] == probes[0]["from"]), "{h}");
            }
        }
    }
    // The system's traceroute (ICMP) gives the same hops, and its
    // tracepath the same MTU told by the same hop (first: once a probe
    // was told, the kernel keeps the path's MTU, and tracepath starts
    // from it).
    for target in ["2001:2:0:5::2", "198.18.5.2"] {
        let ours: Vec<String> = hops(&trace(target, &["-q", "1"]))
            .into_iter()
            .map(|(a, _)| a)
            .collect();
        let out = in_node("a", &["traceroute", "-n", "-I", "-q", "1", target]);
        let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect();
        assert_eq!(ours, theirs, "traceroute to {target}");
        let out = in_node("a", &["tracepath", "-n", target]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(text.contains("Resume: pmtu 1400"), "{text}");
        let told = text
            .lines()
            .find(|l| l.contains("pmtu 1400") && !l.contains("LOCALHOST") && !l.contains("Resume"))
            .and_then(|l| l.split_whitespace().nth(1));
        let ours = trace(target, &["-q", "1", "--mtu"]);
        assert_eq!(told, ours["mtu_steps"][0]["from"].as_str(), "{text}");
    }

    // The path MTU: r2 (hop 2) says its next link carries 1400 bytes,
    // and a 1400-byte packet arrives.
    for (target, told_by) in [
        ("2001:2:0:5::2", "2001:2:0:2::2"),
        ("198.18.5.2", "198.18.2.2"),
    ] {
        let t = trace(target, &["-q", "1", "--mtu"]);
        assert_eq!(t["path_mtu"], 1400, "{t}");
        assert_eq!(
            t["mtu_steps"],
            serde_json::json!([{"from": told_by, "hop": 2, "mtu": 1400}]),
            "{t}"
        );
    }
    // `sonde overhead --path-mtu` measures the same 1400 and checks a
    // stack against it: 1352 bytes of UDP payload make a 1400-byte IPv6
    // packet, which fits; 1353 do not.
    let out = in_node(
        "a",
        &[
            env!("CARGO_BIN_EXE_sonde"),
            "overhead",
            "ipv6/udp",
            "--payloads",
            "1352,1353",
            "--path-mtu",
            "2001:2:0:5::2",
            "-J",
        ],
    );
    let said = stderr(&out);
    assert!(
        said.contains("path MTU toward 2001:2:0:5::2: 1400 B (told by hop 2, 2001:2:0:2::2)")
            && said.contains("above the MTU of 1400 B at payload 1353 B (1401 B of packet)"),
        "{said}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let exceeds: Vec<&Value> = doc[0]["payloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["exceeds_mtu"])
        .collect();
    assert_eq!(exceeds, [&Value::from(false), &Value::from(true)], "{doc}");

    // r2 sends no Time Exceeded, in either family.
    in_node(
        "r2",
        &[
            "nft",
            "add table inet silent; add chain inet silent out { type filter hook output \
             priority 0; }; add rule inet silent out icmp type time-exceeded drop; add rule \
             inet silent out icmpv6 type time-exceeded drop",
        ],
    );
    for target in ["2001:2:0:5::2", "198.18.5.2"] {
        let t = trace(target, &["-q", "1", "-w", "1s"]);
        let got: Vec<String> = hops(&t).into_iter().map(|(a, _)| a).collect();
        assert_eq!(got.len(), 5, "{t}");
        assert_eq!(got[1], "*", "{t}");
        assert_eq!(got[4], target, "{t}");
        assert_eq!(t["arrived"], true);
    }
}

/// A diamond, a → r1 → (r2 | r3) → r4 → b: traces kept in an archive,
/// r1's route to b moved from r2 to r3 between them, and the archive
/// finds the change at hop 2, once, with both routes; a trace on the same
/// route again is no change, and neither is r4, silent (the lab's
/// `silent` key), at hop 3 of each. `sonde report` draws the latest
/// route and names the change. Then r1 balances over r2 and r3 (ECMP):
/// a multipath trace finds both at hop 2, and records no change.
#[test]
fn a_route_moved_between_two_traces_is_kept_as_a_change_at_its_hop() {
    if !lab_allowed() {
        return;
    }
    let mut body = String::from("[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n");
    for r in ["r1", "r2", "r3", "r4"] {
        body += &format!("[[node]]\nname = \"{r}\"\nkind = \"router\"\n");
    }
    // r4 sends no ICMP (the lab's `silent`): hop 3 is a `*` in every
    // trace, a wildcard that hides no change.
    body += "silent = true\n";
    for (a, b) in [
        ("a", "r1"),
        ("r1", "r2"),
        ("r1", "r3"),
        ("r2", "r4"),
        ("r3", "r4"),
        ("r4", "b"),
    ] {
        body += &format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\n");
    }
    let _down = lab_up("trcd", &body);
    let dir = common::TempDir::new("trcd");
    let archive = format!("--archive={}", dir.join("a.db").display());
    let b = "2001:2:0:6::2";
    let traced = |n: usize| {
        for _ in 0..n {
            let out = sonde()
                .args(["lab", "exec", "--lab", "trcd", "a", "--"])
                .args([env!("CARGO_BIN_EXE_sonde"), "trace", b, "-q", "1", &archive])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
        }
    };
    traced(2);
    // r1 now sends b's traffic through r3 (link 3's b end).
    let out = sonde()
        .args(["lab", "exec", "--lab", "trcd", "r1", "--"])
        .args([
            "ip",
            "-6",
            "route",
            "replace",
            "2001:2:0:6::/64",
            "via",
            "2001:2:0:3::2",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    traced(2);
    let out = sonde()
        .args(["results", &archive, "changes", "-J"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let changes: Value = serde_json::from_slice(&out.stdout).unwrap();
    let changes = changes.as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let c = &changes[0];
    assert_eq!(c["at_hop"], 2, "{c}");
    assert_eq!(c["before"][1], "2001:2:0:2::2", "{c}");
    assert_eq!(c["after"][1], "2001:2:0:3::2", "{c}");
    assert_eq!(
        (&c["target_addr"], &c["before"][3], &c["before"][2]),
        (&b.into(), &b.into(), &Value::Null),
        "{c}"
    );
    let text = sonde()
        .args(["results", &archive, "changes", "--target", b])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("the route changed at hop 2"), "{text}");
    assert!(
        text.contains("after:  2001:2:0:1::2 2001:2:0:3::2"),
        "{text}"
    );
    // The report's path table (004 Table 2): the latest trace hop by hop,
    // through r3 now, and where the route changed.
    let out = sonde()
        .args(["report", &archive, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let table = report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"].as_str().unwrap().contains("the path to"))
        .unwrap_or_else(|| panic!("no path table: {report}"));
    let addresses: Vec<&str> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_str().unwrap())
        .collect();
    assert_eq!(
        addresses,
        ["2001:2:0:1::2", "2001:2:0:3::2", "*", b],
        "{table}"
    );
    let note = table["note"].as_str().unwrap();
    assert!(
        note.contains("the latest of 4 traces") && note.contains("the route changed at hop 2 at"),
        "{note}"
    );

    // r1 balances b's traffic over r2 and r3 by flow (ECMP, hashing
    // addresses and ports), with the routers' ICMP unlimited for the
    // bursts of flows. A Paris trace is one flow: one of them at hop 2.
    // The multipath trace finds both there (99.9 %: 11 answers before it
    // rules out a second interface, a chance of 1 in 1,000 of missing
    // it), r1 alone at hop 1, r4 silent, and b.
    let in_diamond = |node: &str, cmd: &[&str]| in_lab("trcd", node, cmd);
    for r in ["r1", "r2", "r3", "b"] {
        in_diamond(
            r,
            &[
                "sysctl",
                "-qw",
                "net.ipv4.icmp_ratelimit=0",
                "net.ipv6.icmp.ratelimit=0",
            ],
        );
    }
    in_diamond(
        "r1",
        &[
            "sysctl",
            "-qw",
            "net.ipv6.fib_multipath_hash_policy=1",
            "net.ipv4.fib_multipath_hash_policy=1",
        ],
    );
    for (family, net, via2, via3, target) in [
        ("-6", "2001:2:0:6::/64", "2001:2:0:2::2", "2001:2:0:3::2", b),
        (
            "-4",
            "198.18.6.0/24",
            "198.18.2.2",
            "198.18.3.2",
            "198.18.6.2",
        ),
    ] {
        in_diamond(
            "r1",
            &[
                "ip", family, "route", "replace", net, "nexthop", "via", via2, "nexthop", "via",
                via3,
            ],
        );
        let paris = in_diamond(
            "a",
            &[
                env!("CARGO_BIN_EXE_sonde"),
                "trace",
                target,
                "--proto",
                "udp",
                "-w",
                "0.3s",
                "-J",
            ],
        );
        let paris: Value = serde_json::from_slice(&paris.stdout).unwrap();
        let at2 = answering(&paris["trace"]["hops"][1]);
        assert_eq!(at2.len(), 1, "one flow, one way: {paris}");
        let mda = in_diamond(
            "a",
            &[
                env!("CARGO_BIN_EXE_sonde"),
                "trace",
                target,
                "--proto",
                "udp",
                "--multipath",
                "--confidence",
                "99.9",
                "-w",
                "0.3s",
                "-J",
                &archive,
            ],
        );
        let doc: Value = serde_json::from_slice(&mda.stdout).unwrap();
        common::schema::assert_valid(&common::schema::result_v3(), &doc);
        let found: Vec<BTreeSet<&str>> = doc["trace"]["hops"]
            .as_array()
            .unwrap()
            .iter()
            .map(answering)
            .collect();
        let r1 = if family == "-6" {
            "2001:2:0:1::2"
        } else {
            "198.18.1.2"
        };
        let want: Vec<BTreeSet<&str>> =
            vec![[r1].into(), [via2, via3].into(), [].into(), [target].into()];
        assert_eq!(found, want, "{doc}");
        // Every probe is its own flow, and hop 2 had 11 answers at least.
        let hop2 = doc["trace"]["hops"][1]["probes"].as_array().unwrap();
        let flows: BTreeSet<u64> = hop2.iter().filter_map(|p| p["flow"].as_u64()).collect();
        assert!(flows.len() >= 11 && flows.len() == hop2.len(), "{doc}");
    }
    // A multipath trace has no one route: it is kept, and no change.
    let text = sonde()
        .args(["results", &archive, "changes", "-J"])
        .output()
        .unwrap();
    let changes: Value = serde_json::from_slice(&text.stdout).unwrap();
    assert_eq!(changes.as_array().unwrap().len(), 1, "{changes}");
}

/// An MPLS hop inside the link a → r1 (the lab's `mpls` key: sonde's
/// emulator as an LSR in the uniform TTL model) is hop 1 of every trace,
/// r1 hop 2 and b hop 3; the hop's Time Exceeded carries its label stack
/// in an ICMP extension (RFC 4884, RFC 4950), which the trace reports
/// with the probe's precedence as traffic class (EF: 5) and TTL 1, in
/// `-J` and as text. The system's `traceroute -e` reads the same labels
/// from the same answers: the emulator's bytes are the RFC's.
#[test]
fn a_hop_inside_an_mpls_tunnel_reports_its_label_stack() {
    if !lab_allowed() {
        return;
    }
    let body = "[[node]]\nname = \"a\"\n[[node]]\nname = \"r1\"\nkind = \"router\"\n\
                [[node]]\nname = \"b\"\n\
                [[link]]\na = \"a\"\nb = \"r1\"\n[link.a_to_b]\n\
                mpls = { labels = [16005, 299776], address = [\"2001:2:0:1::fe\", \"198.18.1.254\"] }\n\
                [[link]]\na = \"r1\"\nb = \"b\"\n";
    let _down = lab_up("trcm", body);
    in_lab(
        "trcm",
        "r1",
        &[
            "sysctl",
            "-qw",
            "net.ipv4.icmp_ratelimit=0",
            "net.ipv6.icmp.ratelimit=0",
        ],
    );
    let stack = serde_json::json!([
        {"label": 16005, "tc": 5, "ttl": 1},
        {"label": 299776, "tc": 5, "ttl": 1}
    ]);
    for (target, lsr, r1) in [
        ("2001:2:0:2::2", "2001:2:0:1::fe", "2001:2:0:1::2"),
        ("198.18.2.2", "198.18.1.254", "198.18.1.2"),
    ] {
        let sonde_exe = env!("CARGO_BIN_EXE_sonde");
        let cmd = [
            sonde_exe, "trace", target, "-J", "-q", "2", "-w", "2s", "-S", "EF",
        ];
        let doc: Value = serde_json::from_slice(&in_lab("trcm", "a", &cmd).stdout).unwrap();
        common::schema::assert_valid(&common::schema::result_v3(), &doc);
        let t = &doc["trace"];
        let got: Vec<String> = hops(t).into_iter().map(|(a, _)| a).collect();
        assert_eq!(got, [lsr, r1, target], "{t}");
        for p in t["hops"][0]["probes"].as_array().unwrap() {
            assert_eq!(p["mpls"], stack, "{t}");
            assert_eq!(p["quoted_ttl"], 1, "{t}");
        }
        for h in &t["hops"].as_array().unwrap()[1..] {
            assert!(
                h["probes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|p| p.get("mpls").is_none()),
                "{h}"
            );
        }
        // As text: hop 1 with its stack.
        let out = in_lab(
            "trcm",
            "a",
            &[sonde_exe, "trace", target, "-q", "1", "-S", "EF"],
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            text.lines().any(|l| l.starts_with(" 1 ")
                && l.contains(lsr)
                && l.contains("[MPLS L=16005 TC=5 TTL=1, L=299776 TC=5 TTL=1]")),
            "{text}"
        );
        // The system's traceroute reads the extension the same way (its
        // probes unmarked: TC 0), bottom of stack on the last entry.
        let out = in_lab(
            "trcm",
            "a",
            &["traceroute", "-n", "-e", "-I", "-q", "1", target],
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let first = text.lines().nth(1).unwrap_or_default();
        assert!(
            first.contains(lsr)
                && first.contains("<MPLS:L=16005,E=0,S=0,T=1/L=299776,E=0,S=1,T=1>"),
            "{text}"
        );
    }
    path_change_alert_when_the_tunnel_goes();
}

/// The same lab, watched: an agent in node a traces b every 2 s as a
/// campaign, with a `path_changed` rule. Taking the MPLS hop out of the
/// running link (`sonde lab set --mpls off`) between two runs moves b
/// from hop 3 to hop 2: the alert is raised once, by the first trace
/// without the hop, and cleared by the next, on the same route.
fn path_change_alert_when_the_tunnel_goes() {
    let (a, b) = ("2001:2:0:1::1", "2001:2:0:2::2");
    let dir = common::TempDir::new("trcm");
    std::fs::create_dir_all(dir.join("campaigns")).unwrap();
    std::fs::write(
        dir.join("campaigns/path.toml"),
        format!(
            "name = \"path\"\n[schedule]\nrepeat = \"PT2S\"\n\
             [[endpoint]]\nname = \"A\"\naddress = \"{a}\"\n\
             [[endpoint]]\nname = \"B\"\naddress = \"{b}\"\n\
             [[step]]\nname = \"path A to B\"\nfrom = \"A\"\nto = \"B\"\ntest = \"trace\"\n\
             queries = 1\nwait_s = \"1s\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "[[alert]]\nname = \"moved\"\nmetric = \"path_changed\"\ntest = \"trace\"\n",
    )
    .unwrap();
    let db = dir.join("agent.db");
    let _b = KillOnDrop(serve_in("trcm", "b", b));
    let _agent = agent_in("trcm", "a", a, &dir, &db);
    let events = |s: &Value| {
        s["alerts"]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    // Deadlines, not timings: runs every 2 s, 60 s allowed for each wait.
    let s = common::cli::status_until(&db, 60, |s| s["results"].as_u64().unwrap_or(0) >= 2);
    assert!(s["results"].as_u64().unwrap_or(0) >= 2, "{s}");
    assert!(events(&s).is_empty(), "the route held: {s}");
    let o = sonde()
        .args(["lab", "set", "trcm", "1", "--from", "a", "--mpls", "off"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s = common::cli::status_until(&db, 60, |s| events(s).len() >= 2);
    let ev = events(&s);
    // Newest first: raised by the trace that moved, cleared by the next.
    let edges: Vec<&str> = ev.iter().map(|e| e["edge"].as_str().unwrap()).collect();
    assert_eq!(edges, ["cleared", "raised"], "{s}");
    assert_eq!(ev[1]["rule"], "moved", "{s}");
    assert_eq!(ev[1]["value"], 1.0, "{s}");
}
