//! Topology files, good and bad, against what they must give.

use super::*;

const LADDER: &str = r#"
    name = "t1"
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
    rate = "100M"
    [link.b_to_a]
    loss = "1%"
    [[link]]
    a = "r"
    b = "b"
    mtu = 9000
"#;

#[test]
fn a_ladder_parses_with_per_direction_overrides() {
    let t = Topology::from_toml(LADDER, "t.toml").unwrap();
    assert_eq!(t.kind_of("r"), NodeKind::Router);
    let l = &t.links[0];
    let rate = Some(sonde_model::Rate::from_bps(100_000_000));
    assert_eq!(l.direction(true).rate, rate);
    assert_eq!(l.direction(true).loss, None);
    assert_eq!(l.direction(false).random_loss(), Some(0.01));
    assert_eq!(l.direction(false).rate, rate);
}

#[test]
fn a_cpu_share_makes_the_link_emulated() {
    let t = Topology::from_toml(&format!("{LADDER}cpu = 1\n"), "t.toml").unwrap();
    let l = &t.links[1];
    assert_eq!(l.cpu, Some(1.0));
    assert!(l.emulated() && !t.links[0].emulated());
}

fn bad(text: &str) -> TopologyError {
    Topology::from_toml(text, "t.toml").unwrap_err()
}

/// LADDER with `extra` appended.
fn bad_ladder(extra: &str) -> TopologyError {
    bad(&format!("{LADDER}\n{extra}"))
}

/// LADDER with a fourth link, a → b, of `keys`.
fn bad_link(keys: &str) -> TopologyError {
    bad_ladder(&format!("[[link]]\na = \"a\"\nb = \"b\"\n{keys}"))
}

/// The direction-key error of link 3, and the direction it names.
fn profile_error(e: TopologyError) -> (ProfileError, Option<LinkDirection>) {
    match e {
        TopologyError::Profile {
            link: 3,
            a,
            b,
            direction,
            source,
        } if (a.as_str(), b.as_str()) == ("a", "b") => (*source, direction),
        other => panic!("not an error of link 3 (a–b): {other:?}"),
    }
}

#[test]
fn each_mistake_in_the_file_is_its_own_kind() {
    assert!(matches!(
        bad("[[node]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"zz\""),
        TopologyError::UnknownNode { link: 1, node } if node == "zz"
    ));
    assert!(matches!(
        bad_ladder("[[node]]\nname = \"a\""),
        TopologyError::DuplicateNode { name } if name == "a"
    ));
    assert!(matches!(
        bad("name = \"a-b\"\n[[node]]\nname = \"a\""),
        TopologyError::BadLabName { name } if name == "a-b"
    ));
    assert!(matches!(bad("name = \"x\""), TopologyError::NoNodes));
    assert!(matches!(
        bad("[[node]]\nname = \"a_b\""),
        TopologyError::BadNodeName { name } if name == "a_b"
    ));
    assert!(matches!(
        bad_link("cpu = 2.0"),
        TopologyError::BadCpu { link: 3, .. }
    ));
    assert!(matches!(
        bad_link("cpu = 0.001"),
        TopologyError::BadCpu { link: 3, .. }
    ));
    assert!(matches!(
        bad("[[node]]\nname = \"b-l3\""),
        TopologyError::LinkEndName { name } if name == "b-l3"
    ));
    assert!(matches!(
        bad_ladder("[[link]]\na = \"b\"\nb = \"b\""),
        TopologyError::SelfLink { link: 3, node } if node == "b"
    ));
    assert!(matches!(
        bad_link("mtu = 1000"),
        TopologyError::BadMtu {
            link: 3,
            mtu: 1000,
            ..
        }
    ));
    let many = "[[link]]\na = \"a\"\nb = \"b\"\n".repeat(249);
    assert!(matches!(
        bad_ladder(&many),
        TopologyError::TooManyLinks { count: 251 }
    ));
    // Not TOML, or not shaped as a topology: where in the file.
    assert!(matches!(
        bad("[[node]\nname = \"a\""),
        TopologyError::Syntax { file, line: Some(1), .. } if file == "t.toml"
    ));
    let e = bad("[[node]]\nname = \"a\"\nkind = \"switch\"");
    assert!(
        matches!(
            &e,
            TopologyError::Syntax {
                line: Some(3),
                column: Some(8),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(matches!(
        bad_ladder("[[link]]\na = \"a\"\nb = \"b\"\nmtu = \"x\""),
        TopologyError::Syntax { .. }
    ));
    assert!(matches!(
        Topology::load(Path::new("/nonexistent/sonde-lab.toml")),
        Err(TopologyError::Read { file, .. }) if file == Path::new("/nonexistent/sonde-lab.toml")
    ));
}

#[test]
fn a_bad_value_names_its_link_key_and_value() {
    use ProfileError as P;
    // Among the link's own keys: no direction.
    let (e, dir) = profile_error(bad_link("delay = \"soon\""));
    assert_eq!(dir, None);
    assert_eq!(
        e,
        P::BadDuration {
            key: "delay".into(),
            value: "soon".into()
        }
    );
    // In a direction table: that direction.
    let (e, dir) = profile_error(bad_link("[link.a_to_b]\nrate = \"fast\""));
    assert_eq!(dir, Some(LinkDirection::AToB));
    assert!(matches!(e, P::BadRate { key, .. } if key == "rate"));
    let (e, dir) = profile_error(bad_link("[link.b_to_a]\nloss = \"150%\""));
    assert_eq!(dir, Some(LinkDirection::BToA));
    assert_eq!(
        e,
        P::PercentageOutOfRange {
            key: "loss".into(),
            value: "150%".into()
        }
    );
    let (e, _) = profile_error(bad_link("speed = 1"));
    assert!(matches!(e, P::UnknownKey { key, .. } if key == "speed"));
    // A direction table takes direction keys only.
    let (e, _) = profile_error(bad_link("[link.a_to_b]\nmtu = 1500"));
    assert!(matches!(e, P::UnknownKey { key, .. } if key == "mtu"));
}

#[test]
fn keys_that_do_not_go_together_name_the_direction() {
    use ProfileError as P;
    let (e, dir) = profile_error(bad_link("delay = \"10ms\"\njitter = \"20ms\""));
    assert_eq!(dir, Some(LinkDirection::AToB));
    assert!(matches!(e, P::JitterAboveDelay { .. }));
    // Only b → a has the reorder.
    let (e, dir) = profile_error(bad_link("[link.b_to_a]\nreorder = \"1%\""));
    assert_eq!(dir, Some(LinkDirection::BToA));
    assert_eq!(e, P::ReorderWithoutDelay);
    let (e, _) = profile_error(bad_link(
        "policer = [{ rate = \"1M\" }]\nmarking = \"reset\"",
    ));
    assert_eq!(
        e,
        P::PolicerBeforeMarking {
            marking: crate::profile::Marking::Reset
        }
    );
    assert!(bad_link("rate = \"1k\"").profile_error().is_some());
    assert!(bad_ladder("[[node]]\nname = \"a\"")
        .profile_error()
        .is_none());
}

#[test]
fn a_node_may_be_silent_and_a_wrong_value_is_named_where_it_is() {
    let t = Topology::from_toml(
        &LADDER.replace("kind = \"router\"", "kind = \"router\"\n    silent = true"),
        "t.toml",
    )
    .unwrap();
    let silent: Vec<(&str, bool)> = t
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.silent))
        .collect();
    assert_eq!(silent, [("a", false), ("r", true), ("b", false)]);
    let e = bad("[[node]]\nname = \"a\"\nsilent = \"yes\"").to_string();
    assert!(
        e.starts_with("t.toml: TOML parse error at line 3, column 10 (`silent = \"yes\"`)"),
        "{e}"
    );
}

#[test]
fn messages_say_where_and_what() {
    let text = |e: TopologyError| e.to_string();
    assert_eq!(
        text(bad_link("[link.b_to_a]\nreorder = \"1%\"")),
        "link 3 (a–b), b → a: reorder needs a delay: a reordered frame skips it"
    );
    assert_eq!(
        text(bad_link("delay = \"soon\"")),
        "link 3 (a–b): delay: 'soon' is not a duration (e.g. 20ms)"
    );
    assert_eq!(
        text(bad("[[node]]\nname = \"a\"\nkind = \"switch\"")),
        "t.toml: TOML parse error at line 3, column 8 (`kind = \"switch\"`): \
         unknown variant `switch`, expected `host` or `router`"
    );
}

#[test]
fn every_impairment_key_reaches_the_emulator() {
    let t = Topology::from_toml(
        &format!(
            "{LADDER}\n{}",
            r#"[[link]]
            a = "a"
            b = "b"
            delay = "10ms"
            jitter = "1ms"
            jitter_dist = "pareto-normal"
            loss = { p = "1%", r = "25%", loss_bad = "50%" }
            duplicate = "0.5%"
            reorder = 0.02
            queue = "100p"
            policer = [{ rate = "7.75M", dscp = "EF" }, { rate = "1.55M", dscp = 8, protocol = "udp", action = "remark:CS0", punish = "5%" }]
            [link.a_to_b]
            rate = "155M"
            diffserv = { lbe_min = "2%" }
            [link.b_to_a]
            policer = []
            marking = "filter"
            ef_from = ["2001:2:0:1::/64", "198.18.1.0/24"]"#
        ),
        "t.toml",
    )
    .unwrap();
    let l = &t.links[2];
    assert!(l.emulated());
    let d = l.direction(true);
    assert_eq!(d.queue, Some(crate::profile::QueueLimit::Packets(100)));
    assert_eq!(d.diffserv.as_ref().map(|d| d.lbe_share()), Some(0.02));
    let imp = d.impairment();
    assert_eq!((imp.delay_ns, imp.jitter_ns), (10_000_000, 1_000_000));
    assert_eq!(imp.dist, crate::emulator::JitterDist::ParetoNormal);
    let g = imp.gilbert.unwrap();
    assert_eq!((g.p, g.r, g.loss_good, g.loss_bad), (0.01, 0.25, 0.0, 0.5));
    assert_eq!((imp.duplicate, imp.reorder), (0.005, 0.02));
    assert_eq!(imp.policers.len(), 2);
    assert_eq!(imp.policers[0].burst, 9687, "10 ms at 7.75 Mbit/s");
    assert_eq!(imp.policers[0].dscp, Some(46));
    assert_eq!(imp.policers[1].exceed, crate::emulator::Exceed::Remark(0));
    assert_eq!(imp.policers[1].punish, Some(0.05));
    assert_eq!(imp.policers[1].protocol, Some(17));
    // b → a has the link-wide keys but none of a → b's, and its own
    // empty policer list overrides the link's.
    let back = l.direction(false);
    assert!(back.diffserv.is_none() && back.rate.is_none());
    assert_eq!(back.ef_from.as_ref().map(Vec::len), Some(2));
    assert!(back.impairment().policers.is_empty());
    assert_eq!(
        back.impairment().dist,
        crate::emulator::JitterDist::ParetoNormal
    );
}
