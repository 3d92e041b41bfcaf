//! The scheduler against a real SQLite archive, with a fake path behind
//! the `Runner` trait (the only fake: the network is not what these test;
//! the lab and CLI tests run campaigns over real sockets).

use sonde_archive::{ResultFilter, RunState, Store};
use sonde_campaign::{Control, Overrides, Plan, Progress, Runners, Scheduler};
use sonde_model::{
    Direction, Figures, HostEnv, PeerKind, TestEnv, TestResult, TestSpec, Timestamp,
};
use sonde_run::{Events, RunError, Runner, Stop};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One test the fake path ran: (host, kind, began, ended).
pub(crate) type Ran = (String, String, Instant, Instant);

/// A path that takes `busy` per test and answers 8 Mbit/s, noting when
/// each test ran: (host, kind, began, ended).
#[derive(Clone, Default)]
pub(crate) struct FakePath {
    pub(crate) busy: Duration,
    pub(crate) log: Arc<Mutex<Vec<Ran>>>,
}

impl Runner for FakePath {
    fn run(&self, spec: &TestSpec, stop: &Stop, _: &Events) -> Result<TestResult, RunError> {
        let began = Instant::now();
        while began.elapsed() < self.busy {
            if stop.is_stopped() {
                return Err(RunError::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let host = spec.host().to_string();
        self.log.lock().unwrap().push((
            host,
            spec.kind().name().to_string(),
            began,
            Instant::now(),
        ));
        let mut r = TestResult::new(
            spec.clone(),
            TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
            Timestamp::now(),
        );
        r.duration_s = self.busy.as_secs_f64();
        r.summary.forward = Some(Figures {
            direction: Some(Direction::Forward),
            throughput_bps: Some(8_000_000),
            ..Figures::default()
        });
        Ok(r)
    }
}

impl Runners for FakePath {
    fn local(&self) -> Box<dyn Runner> {
        Box::new(self.clone())
    }
    fn agent(&self, agent: &str) -> Result<Box<dyn Runner>, sonde_model::host_port::HostPortError> {
        // No agent here: every name is one with no host to reach.
        Err(sonde_model::host_port::HostPortError::NoHost {
            input: agent.to_string(),
        })
    }
}

fn archive(test: &str) -> String {
    let dir = std::env::temp_dir().join(format!("sonde-sched-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("sonde.db").display().to_string()
}

fn plan_text(name: &str, repeat: &str, runs: u64, slip: &str, steps: &str) -> String {
    format!(
        "name = \"{name}\"\n[labels]\nstudy = \"test\"\n[schedule]\nrepeat = \"{repeat}\"\n\
         max_runs = {runs}\nslip = \"{slip}\"\n[[endpoint]]\nname = \"A\"\naddress = \"::1\"\n\
         [[endpoint]]\nname = \"B\"\naddress = \"b.test\"\n{steps}"
    )
}

const TCP_AND_PING: &str = "[[step]]\ntest = \"tcp\"\ntime_s = 1\n\
                            [[step]]\ntest = \"ping\"\ncount = 3\n";

fn run_plan(location: &str, text: &str, path: &FakePath, control: &Control) -> Vec<Progress> {
    run_as(location, text, "A", path, control)
}

/// Runs the plan as endpoint `me` until its schedule ends.
fn run_as(
    location: &str,
    text: &str,
    me: &str,
    path: &FakePath,
    control: &Control,
) -> Vec<Progress> {
    let plan = Plan::parse(text, &Overrides::default()).unwrap();
    let store = Store::open(location).unwrap();
    let over = Overrides::default();
    let mut s = Scheduler::new(store, plan, text, &over, me, path, control).unwrap();
    let mut seen = Vec::new();
    s.run(&mut |p| seen.push(p)).unwrap();
    seen
}

#[test]
fn every_run_is_kept_with_its_campaign_run_and_labels() {
    let location = archive("kept");
    let path = FakePath::default();
    let text = plan_text("kept", "PT1S", 3, "PT1S", TCP_AND_PING);
    let seen = run_plan(&location, &text, &path, &Control::default());
    assert!(matches!(seen.last(), Some(Progress::Finished)), "{seen:?}");
    let mut store = Store::open(&location).unwrap();
    let runs = store.runs("kept", 10).unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(runs.iter().all(|r| r.state == RunState::Done), "{runs:?}");
    let filter = ResultFilter {
        campaign: Some("kept".into()),
        label: Some(("study".into(), "test".into())),
        ..ResultFilter::default()
    };
    let results = store.list_results(&filter).unwrap();
    assert_eq!(results.len(), 6);
    // Each step's test went toward B's address, filled in by the plan.
    assert!(path.log.lock().unwrap().iter().all(|(h, ..)| h == "b.test"));
    // The occurrences are one second apart, from the first.
    let mut at: Vec<i64> = runs.iter().map(|r| r.scheduled_ns).collect();
    at.sort();
    assert_eq!(at[1] - at[0], 1_000_000_000);
    assert_eq!(at[2] - at[1], 1_000_000_000);
}

#[test]
fn a_run_that_overruns_makes_the_next_missed_with_its_reason_not_doubled() {
    let location = archive("overrun");
    let path = FakePath {
        busy: Duration::from_millis(1300),
        ..FakePath::default()
    };
    // Each run takes 2.6 s; one every second, 0.2 s of slip.
    let steps = "[[step]]\ntest = \"tcp\"\ntime_s = 1\n[[step]]\ntest = \"tcp\"\ntime_s = 1\n";
    let text = plan_text("overrun", "PT1S", 4, "PT0.2S", steps);
    run_plan(&location, &text, &path, &Control::default());
    let mut store = Store::open(&location).unwrap();
    let runs = store.runs("overrun", 10).unwrap();
    assert_eq!(runs.len(), 4, "one row per occurrence: {runs:?}");
    let missed: Vec<_> = runs
        .iter()
        .filter(|r| r.state == RunState::Missed)
        .collect();
    assert!(missed.len() >= 2, "{runs:?}");
    for m in &missed {
        let reason = m.reason.as_deref().unwrap_or("");
        assert!(reason.contains("was still going"), "{reason}");
    }
    let mut at: Vec<i64> = runs.iter().map(|r| r.scheduled_ns).collect();
    at.dedup();
    assert_eq!(at.len(), 4);
}

#[test]
fn two_schedulers_on_one_archive_never_run_an_occurrence_twice() {
    let location = archive("twice");
    let path = FakePath {
        busy: Duration::from_millis(200),
        ..FakePath::default()
    };
    let text = plan_text(
        "twice",
        "PT1S",
        3,
        "PT1S",
        "[[step]]\ntest = \"tcp\"\ntime_s = 1\n",
    );
    // The plan must exist before both start, anchored once.
    Store::open(&location)
        .unwrap()
        .put_campaign("twice", &text, None, sonde_campaign::now_ns())
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| run_plan(&location, &text, &path, &Control::default()));
        }
    });
    let mut store = Store::open(&location).unwrap();
    let runs = store.runs("twice", 10).unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(
        path.log.lock().unwrap().len(),
        3,
        "each occurrence ran once"
    );
}

#[test]
fn throughput_steps_on_one_path_never_overlap() {
    let location = archive("overlap");
    let path = FakePath {
        busy: Duration::from_millis(400),
        ..FakePath::default()
    };
    let steps = "[[step]]\ntest = \"tcp\"\ntime_s = 1\n[[step]]\ntest = \"ping\"\ncount = 3\n\
                 [[step]]\ntest = \"tcp\"\ntime_s = 1\n";
    let one = plan_text("one", "PT2S", 2, "PT2S", steps);
    let two = plan_text("two", "PT2S", 2, "PT2S", steps);
    std::thread::scope(|s| {
        s.spawn(|| run_plan(&location, &one, &path, &Control::default()));
        s.spawn(|| run_plan(&location, &two, &path, &Control::default()));
    });
    let log = path.log.lock().unwrap();
    let tcp: Vec<_> = log.iter().filter(|(_, k, ..)| k == "tcp").collect();
    assert_eq!(tcp.len(), 8, "{}", tcp.len());
    for (i, a) in tcp.iter().enumerate() {
        for b in &tcp[i + 1..] {
            assert!(a.3 <= b.2 || b.3 <= a.2, "two tcp tests overlapped");
        }
    }
    let mut store = Store::open(&location).unwrap();
    for name in ["one", "two"] {
        let runs = store.runs(name, 10).unwrap();
        assert!(runs.iter().all(|r| r.state == RunState::Done), "{runs:?}");
    }
}

#[test]
fn a_run_left_by_a_dead_process_is_marked_interrupted_and_the_schedule_goes_on() {
    let location = archive("dead");
    let text = plan_text(
        "dead",
        "PT1S",
        3,
        "PT1S",
        "[[step]]\ntest = \"ping\"\ncount = 1\n",
    );
    let mut store = Store::open(&location).unwrap();
    let now = sonde_campaign::now_ns();
    store
        .put_campaign("dead", &text, None, now - 10_000_000_000)
        .unwrap();
    // A run claimed by a process that no longer exists (pid 4194304 is
    // above Linux's pid_max), holding a lease.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let owner = format!("{}:4194304", host.trim());
    assert!(store
        .claim_run("r0", "dead", now - 10_000_000_000, now, &owner)
        .unwrap());
    assert!(store
        .acquire_lease("p", &owner, now, now + 600_000_000_000)
        .unwrap());
    let seen = run_plan(&location, &text, &FakePath::default(), &Control::default());
    assert!(
        seen.iter()
            .any(|p| matches!(p, Progress::Recovered { run_id, .. } if run_id == "r0")),
        "{seen:?}"
    );
    let runs = store.runs("dead", 10).unwrap();
    let r0 = runs.iter().find(|r| r.id == "r0").unwrap();
    assert_eq!(r0.state, RunState::Interrupted);
    assert!(r0
        .reason
        .as_deref()
        .unwrap()
        .contains("ended before it did"));
    assert!(
        store.lease("p", now).unwrap().is_none(),
        "its lease is dropped"
    );
    // The schedule went on from now: only the occurrences after the dead
    // run were left (its was the first; two remain, here missed or run).
    assert_eq!(runs.len(), 3, "{runs:?}");
}

#[test]
fn a_plan_names_what_is_wrong() {
    let bad = |text: &str| {
        Plan::parse(text, &Overrides::default())
            .unwrap_err()
            .to_string()
    };
    let base = plan_text("p", "PT1H", 1, "PT1M", "");
    let e = bad(&format!("{base}[[step]]\ntest = \"tcp\"\nto = \"C\"\n"));
    assert!(e.contains("step 1") && e.contains("'C'"), "{e}");
    let e = bad(&format!("{base}[[step]]\ntest = \"tcp\"\nparalel = 2\n"));
    assert!(e.contains("step 1") && e.contains("paralel"), "{e}");
    let e = bad(&format!("{base}[[step]]\nname = \"x\"\n"));
    assert!(e.contains("say what it runs"), "{e}");
    let e = bad(&base);
    assert!(e.contains("battery is empty"), "{e}");
    let e = bad(&format!(
        "{base}[[step]]\nmethod = \"repeat\"\n[step.test]\ntest = \"tcp\"\nhost = \"@D\"\n"
    ));
    assert!(e.contains("'@D' names no endpoint"), "{e}");
    let ok = Plan::parse(
        &format!(
            "{base}[[step]]\nmethod = \"repeat\"\n[step.test]\ntest = \"tcp\"\nhost = \"@B\"\n"
        ),
        &Overrides::default(),
    )
    .unwrap();
    let sonde_campaign::StepBody::Method(sonde_model::MethodSpec::Repeat(r)) = &ok.steps[0].body
    else {
        panic!("not a repeat step");
    };
    assert_eq!(r.test.host(), "b.test");
}

#[test]
fn an_endpoints_port_is_where_its_tcp_and_udp_steps_go() {
    let text = |address: &str| {
        format!(
            "name = \"p\"\n[schedule]\nrepeat = \"PT1H\"\n[[endpoint]]\nname = \"A\"\n\
             address = \"a.test\"\n[[endpoint]]\nname = \"B\"\naddress = \"{address}\"\n\
             [[step]]\ntest = \"tcp\"\n[[step]]\ntest = \"udp\"\nport = 7000\n\
             [[step]]\ntest = \"ping\"\n"
        )
    };
    let port = |plan: &Plan, i: usize| match &plan.steps[i].body {
        sonde_campaign::StepBody::Test(sonde_model::TestSpec::Tcp(s)) => (s.host.clone(), s.port),
        sonde_campaign::StepBody::Test(sonde_model::TestSpec::Udp(s)) => (s.host.clone(), s.port),
        other => panic!("step {i}: {other:?}"),
    };
    for address in ["127.0.0.1:25301", "[::1]:25301"] {
        let plan = Plan::parse(&text(address), &Overrides::default()).unwrap();
        let host = address.rsplit_once(':').unwrap().0.trim_matches(['[', ']']);
        assert_eq!(port(&plan, 0), (host.to_string(), 25301), "{address}");
        // A step's own port wins.
        assert_eq!(port(&plan, 1), (host.to_string(), 7000), "{address}");
        assert_eq!(plan.endpoints[1].address, host);
    }
    // Without one, the default.
    let plan = Plan::parse(&text("b.test"), &Overrides::default()).unwrap();
    assert_eq!(port(&plan, 0), ("b.test".to_string(), 5201));
    // A port that is none is refused when the plan is read (campaign
    // check), naming the endpoint.
    let e = Plan::parse(&text("b.test:99999"), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("endpoint B") && e.contains("'99999' is not a port"),
        "{e}"
    );
}

#[test]
fn the_example_plans_read_and_the_studys_battery_scales_to_the_lab() {
    // Each study's plans: examples/studies/NNN-name/*plan.toml.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/studies");
    let mut names = Vec::new();
    for study in std::fs::read_dir(dir).unwrap() {
        for entry in std::fs::read_dir(study.unwrap().path()).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with("plan.toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let plan = Plan::parse(&text, &Overrides::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            names.push(plan.name);
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "6net-af-video",
            "6net-qos",
            "balticgrid-rtt",
            "balticgrid-throughput",
            "geant-stesta",
            "ipsec-wlan",
            "twaren-efficiency"
        ]
    );
    let text = std::fs::read_to_string(format!("{dir}/000-geant-stesta/plan.toml")).unwrap();
    let full = Plan::parse(&text, &Overrides::default()).unwrap();
    assert_eq!(full.steps.len(), 8);
    assert_eq!(
        full.run_length(),
        Duration::from_secs(6 * 300) + 2 * Duration::from_secs(302)
    );
    let lab = Plan::parse(
        &text,
        &Overrides {
            scale: Some(1.0 / 30.0),
            ..Overrides::default()
        },
    )
    .unwrap();
    let sonde_campaign::StepBody::Test(TestSpec::Tcp(tcp)) = &lab.steps[0].body else {
        panic!("step 1 is TCP");
    };
    assert_eq!(tcp.time, Duration::from_secs(10));
    let sonde_campaign::StepBody::Test(TestSpec::Ping(ping)) = &lab.steps[6].body else {
        panic!("step 7 is a ping");
    };
    assert_eq!(ping.count, 10);
    assert_eq!(
        lab.schedule.cadence,
        sonde_campaign::schedule::Cadence::Every(Duration::from_secs(120))
    );
    assert_eq!(lab.steps[7].from, "B");
}

/// The typed progress a method step streams through the scheduler is the
/// one the method gives when run directly (as `sonde repeat` and the API
/// run it): the same events, in the same order.
#[test]
fn a_method_step_streams_the_methods_own_typed_progress() {
    use sonde_model::{Event, MethodEvent, Spec};
    let steps = "[[step]]\nname = \"thrice\"\nmethod = \"repeat\"\n\
                 [step.test]\ntest = \"tcp\"\nhost = \"b.test\"\ntime_s = 1\n\
                 [step.step.repeat]\nrule = \"times\"\nruns = 3\n";
    let text = plan_text("method-events", "PT1H", 1, "PT1S", steps);
    let seen = run_plan(
        &archive("method-events"),
        &text,
        &FakePath::default(),
        &Control::default(),
    );
    let through_campaign: Vec<MethodEvent> = seen
        .into_iter()
        .filter_map(|p| match p {
            Progress::Method { step, event } => {
                assert_eq!(step, "thrice");
                Some(event)
            }
            _ => None,
        })
        .collect();
    let plan = Plan::parse(&text, &Overrides::default()).unwrap();
    let Spec::Method(method) = &plan.steps[0].body else {
        panic!("a method step")
    };
    let events = Events::new();
    let rx = events.subscribe();
    let direct = sonde_methods::run_method(&FakePath::default(), method, &Stop::new(), &events);
    events.close();
    let direct_result = direct.unwrap();
    let direct: Vec<MethodEvent> = rx
        .iter()
        .filter_map(|e| match e {
            Event::Method(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(through_campaign.len(), 3, "{through_campaign:?}");
    assert_eq!(direct.len(), direct_result.trials.len());
    // The same runs, in order: each event's test as the method asked it.
    let specs = |events: &[MethodEvent]| -> Vec<TestSpec> {
        events
            .iter()
            .map(|e| match e {
                MethodEvent::RepeatRun(r) => r.spec.clone(),
                other => panic!("not a repeat run: {other:?}"),
            })
            .collect()
    };
    assert_eq!(specs(&through_campaign), specs(&direct));
}

#[test]
fn the_quick_form_takes_the_plans_quick_table_and_each_steps_quick_keys() {
    let text = r#"
name = "q"
[schedule]
repeat = "PT1H"
[quick]
scale = 0.1
max_runs = 1
[[endpoint]]
name = "A"
address = "::1"
[[endpoint]]
name = "B"
address = "::2"
[[step]]
test = "udp"
time_s = 60
bitrate_bps = "10M"
quick = { bitrate_bps = "1M" }
"#;
    let rate_and_time = |over: &Overrides| {
        let plan = Plan::parse(text, over).unwrap();
        let sonde_campaign::StepBody::Test(TestSpec::Udp(udp)) = &plan.steps[0].body else {
            panic!("a udp step");
        };
        (udp.bitrate.bps(), udp.time, plan.schedule.max_runs)
    };
    assert_eq!(
        rate_and_time(&Overrides::default()),
        (10_000_000, Duration::from_secs(60), None)
    );
    let quick = Overrides {
        quick: true,
        ..Overrides::default()
    };
    assert_eq!(
        rate_and_time(&quick),
        (1_000_000, Duration::from_secs(6), Some(1))
    );
    // What the command line gives wins over [quick].
    let both = Overrides {
        scale: Some(0.5),
        ..quick.clone()
    };
    assert_eq!(rate_and_time(&both).1, Duration::from_secs(30));
    assert_eq!(quick.describe(), "quick");
    // A plan without [quick] has no desk form.
    let bare = text.replace("[quick]\nscale = 0.1\nmax_runs = 1\n", "");
    let e = Plan::parse(&bare, &quick).unwrap_err().to_string();
    assert!(e.contains("--quick: the plan has no [quick] table"), "{e}");
}

#[test]
fn the_quick_form_skips_steps_and_swaps_a_repeat_rule_whole() {
    let text = r#"
name = "q"
[schedule]
repeat = "P1D"
[quick]
max_runs = 1
[[endpoint]]
name = "A"
address = "::1"
[[endpoint]]
name = "B"
address = "::2"
[[step]]
name = "kept"
method = "sweep"
test = { test = "udp", host = "@B", bitrate_bps = "10M", time_s = 30 }
variable = { kind = "payloads", values = [128, 1408] }
directions = ["forward"]
step = { repeat = { rule = "until_stable", stddev_pct = 0.5, min_runs = 30, max_runs = 200 } }
quick = { step = { repeat = { rule = "once" } } }
[[step]]
name = "left out"
test = "udp"
quick = { skip = true }
"#;
    let quick = Overrides {
        quick: true,
        ..Overrides::default()
    };
    let names =
        |plan: &Plan| -> Vec<String> { plan.steps.iter().map(|s| s.name.clone()).collect() };
    let full = Plan::parse(text, &Overrides::default()).unwrap();
    assert_eq!(names(&full), ["kept", "left out"]);
    let desk = Plan::parse(text, &quick).unwrap();
    assert_eq!(names(&desk), ["kept"]);
    let repeat = |plan: &Plan| {
        let json = serde_json::to_value(&plan.steps[0].body).unwrap();
        json["step"]["repeat"]["rule"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        (repeat(&full), repeat(&desk)),
        ("until_stable".into(), "once".into())
    );
    // Every step skipped leaves no battery; a skip that is not a boolean
    // is named.
    let none = text.replace(
        "quick = { step = { repeat = { rule = \"once\" } } }",
        "quick = { skip = true }",
    );
    let e = Plan::parse(&none, &quick).unwrap_err().to_string();
    assert!(e.contains("every step has quick.skip"), "{e}");
    let bad = text.replace("skip = true", "skip = \"yes\"");
    let e = Plan::parse(&bad, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("step 2: quick.skip: true or false"), "{e}");
}
