use super::*;
use sonde_model::{HttpSpec, PingSpec, Rate, TcpSpec};

fn gate(limits: Limits) -> Arc<Gate> {
    let targets = TargetsConfig {
        ping: vec!["2001:db8:1::/48".parse().unwrap()],
        trace: vec!["2001:db8:2::/48".parse().unwrap()],
        http: vec!["http://[2001:db8:1::80]/ok/".into()],
    };
    Gate::new(limits, targets, vec!["2001:db8:9::/48".parse().unwrap()])
}

fn api() -> Origin {
    Origin::Api { who: "ops".into() }
}

fn spec(json: &str) -> Spec {
    Spec::parse(json).unwrap()
}

#[test]
fn a_remote_request_names_no_file_in_any_field() {
    let g = gate(Limits::default());
    let http = spec(
        r#"{"test": "http", "url": "http://[2001:db8:1::80]/ok/x", "method": "POST",
            "body_file": "/etc/sonde/agent.toml"}"#,
    );
    for origin in [api(), Origin::ApiCampaign, Origin::Mesh] {
        let e = g.check(&origin, &http).unwrap_err();
        assert_eq!(e.rule(), "no_files", "{origin}: {e}");
        assert_eq!(e.at(), "/body_file");
        assert!(e.to_string().contains("/etc/sonde/agent.toml"), "{e}");
    }
    let nested = spec(
        r#"{"method": "repeat", "test": {"test": "ping", "host": "2001:db8:1::1",
            "proto": "udp", "count": 3, "key_file": "/root/key"}}"#,
    );
    let e = g.check(&api(), &nested).unwrap_err();
    assert_eq!((e.rule().as_str(), e.at()), ("no_files", "/test/key_file"));
    // The command line and the operator's own plans may.
    assert!(g.check(&Origin::CommandLine, &http).is_ok());
    assert!(g.check(&Origin::OperatorPlan, &nested).is_ok());
}

#[test]
fn pings_and_http_go_only_where_the_operator_allowed() {
    let g = gate(Limits::default());
    let ping = |host: &str| {
        spec(&format!(
            r#"{{"test": "ping", "host": "{host}", "count": 3}}"#
        ))
    };
    assert!(g.check(&api(), &ping("2001:db8:1::7")).is_ok());
    for host in ["::1", "127.0.0.1", "169.254.169.254", "fe80::1"] {
        let e = g.check(&api(), &ping(host)).unwrap_err();
        assert_eq!(e.rule(), "consent", "{host}: {e}");
        assert!(e.to_string().contains("targets.ping"), "{e}");
    }
    let http = |url: &str| {
        spec(&format!(
            r#"{{"test": "http", "url": "{url}", "time_s": 5}}"#
        ))
    };
    assert!(g
        .check(&api(), &http("http://[2001:db8:1::80]/ok/a"))
        .is_ok());
    let e = g
        .check(&Origin::ApiCampaign, &http("http://[::1]:8080/"))
        .unwrap_err();
    assert_eq!((e.rule().as_str(), e.at()), ("consent", "/host"));
    // TCP and UDP: their server decides.
    let tcp = spec(r#"{"test": "tcp", "host": "192.0.2.1", "time_s": 5}"#);
    assert!(g.check(&api(), &tcp).is_ok());
    // A mesh share: only mesh.targets, whatever the test.
    let e = g.check(&Origin::Mesh, &tcp).unwrap_err();
    assert!(e.to_string().contains("mesh.targets"), "{e}");
    assert!(g.check(&Origin::Mesh, &ping("2001:db8:9::2")).is_ok());
    let sweep = spec(r#"{"method": "repeat", "test": {"test": "http", "url": "http://[::1]/"}}"#);
    let e = g.check(&api(), &sweep).unwrap_err();
    assert_eq!((e.rule().as_str(), e.at()), ("consent", "/test/host"));
}

#[test]
fn traces_go_only_where_the_operator_allowed_and_end_in_time() {
    let g = gate(Limits {
        max_duration: Duration::from_secs(60),
        ..Limits::default()
    });
    let trace = |host: &str| spec(&format!(r#"{{"test": "trace", "host": "{host}"}}"#));
    // A trace is not a ping: targets.ping's prefix does not let it out.
    assert!(g.check(&api(), &trace("2001:db8:2::7")).is_ok());
    for host in ["2001:db8:1::7", "::1", "169.254.169.254", "fe80::1"] {
        for origin in [api(), Origin::ApiCampaign] {
            let e = g.check(&origin, &trace(host)).unwrap_err();
            assert_eq!(
                (e.rule().as_str(), e.at()),
                ("consent", "/host"),
                "{host}: {e}"
            );
            assert!(e.to_string().contains("targets.trace"), "{e}");
        }
    }
    // A trace of 255 hops waiting 10 s a probe: 42 minutes at worst.
    let long = spec(r#"{"test": "trace", "host": "2001:db8:2::7", "max_hops": 255, "wait_s": 10}"#);
    let e = g.check(&api(), &long).unwrap_err();
    assert_eq!(
        (e.rule().as_str(), e.at()),
        ("max_duration", "/max_hops"),
        "{e}"
    );
    assert!(g.check(&Origin::CommandLine, &trace("::1")).is_ok());
}

#[test]
fn limits_bound_the_whole_work() {
    let g = gate(Limits {
        max_duration: Duration::from_secs(10),
        max_streams: 16,
        max_rate: Some(Rate::from_bps(100_000_000)),
        ..Limits::default()
    });
    // Five series of 10 × 0.2 s, each waiting up to 600 s for its answers.
    let ping = spec(
        r#"{"test": "ping", "host": "2001:db8:1::1", "count": 10, "interval_s": 0.2,
            "sizes": [56, 100, 200, 300, 400], "timeout_s": 600}"#,
    );
    let e = g.check(&api(), &ping).unwrap_err();
    assert_eq!(e.rule(), "max_duration", "{e}");
    assert!(e.to_string().contains("50m 10s"), "{e}");
    let flood = spec(
        r#"{"test": "ping", "host": "2001:db8:1::1", "count": 1000, "interval_s": 0.001,
            "sizes": [65000], "timeout_s": 1}"#,
    );
    let e = g.check(&api(), &flood).unwrap_err();
    assert_eq!(e.rule(), "max_rate", "{e}");
    let endless = spec(r#"{"test": "ping", "host": "2001:db8:1::1", "count": 0}"#);
    assert_eq!(
        g.check(&api(), &endless).unwrap_err().rule(),
        "max_duration"
    );
    let http = spec(
        r#"{"test": "http", "url": "http://[2001:db8:1::80]/ok/", "time_s": 5, "timeout_s": 1,
            "connections": 256}"#,
    );
    assert_eq!(g.check(&api(), &http).unwrap_err().rule(), "max_streams");
    let tcp = TestSpec::Tcp(TcpSpec {
        host: "::1".into(),
        time: Duration::from_secs(3600),
        ..TcpSpec::default()
    });
    assert_eq!(
        g.check_trial(&api(), &tcp).unwrap_err().rule(),
        "max_duration"
    );
    // A method: every trial in all, against max_work.
    let g = gate(Limits {
        max_work: Duration::from_secs(60),
        ..Limits::default()
    });
    let repeat = spec(
        r#"{"method": "repeat", "test": {"test": "tcp", "host": "::1", "time_s": 10},
            "step": {"repeat": {"rule": "times", "runs": 10}}}"#,
    );
    let e = g.check(&api(), &repeat).unwrap_err();
    assert_eq!(e.rule(), "max_work", "{e}");
    // The command line has no limits.
    assert!(g.check(&Origin::CommandLine, &repeat).is_ok());
}

#[test]
fn slots_are_held_while_admitted() {
    let g = gate(Limits {
        max_concurrent_tests: 2,
        ..Limits::default()
    });
    let ping = Spec::Test(TestSpec::Ping(PingSpec {
        host: "2001:db8:1::1".into(),
        count: 2,
        ..PingSpec::default()
    }));
    let a = g.admit(&api(), &ping).unwrap();
    assert_eq!(a.deadline, Some(ping_bound() + GRACE));
    let _b = g.admit(&api(), &ping).unwrap();
    let e = g.admit(&api(), &ping).unwrap_err();
    assert_eq!(e.rule(), "max_concurrent_tests");
    drop(a);
    assert!(g.admit(&api(), &ping).is_ok());
    let _ = HttpSpec::default();
}

fn ping_bound() -> Duration {
    let p = PingSpec {
        count: 2,
        ..PingSpec::default()
    };
    p.interval * 2 + p.timeout
}

#[test]
fn the_agents_gate_shares_the_control_ports_slots() {
    // A real server's slots (bound, not serving: the slots are counted
    // whether or not it accepts).
    let server = sonde_server::Server::bind(sonde_server::ServerConfig {
        bind: vec!["::1".parse().unwrap()],
        port: 0,
        limits: Limits {
            max_concurrent_tests: 1,
            ..Limits::default()
        },
        ..sonde_server::ServerConfig::default()
    })
    .unwrap();
    let shared = server.slots();
    let g = Gate::of_server(
        shared.clone(),
        TargetsConfig::default(),
        Vec::new(),
        Default::default(),
    );
    let tcp = spec(r#"{"test": "tcp", "host": "::1", "time_s": 5}"#);
    // A client's test holds the one slot: the API waits its turn.
    let client = shared.claim().unwrap();
    assert_eq!(g.running(), 1);
    assert_eq!(
        g.admit(&api(), &tcp).unwrap_err().rule(),
        "max_concurrent_tests"
    );
    drop(client);
    let admitted = g.admit(&api(), &tcp).unwrap();
    assert!(shared.claim().is_none(), "the API's test holds it now");
    drop(admitted);
    assert!(shared.claim().is_some());
}
