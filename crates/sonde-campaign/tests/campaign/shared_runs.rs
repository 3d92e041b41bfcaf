//! One plan run from both of its ends on one archive (docs/campaigns.md,
//! "A battery from both ends"): every run has every step, each step run
//! once by the endpoint the plan names, and a step nobody runs says why.
//! A real SQLite archive; the path behind the `Runner` trait is a fake
//! (the lab test runs the same from two hosts over real sockets).

use super::scheduler::FakePath;
use sonde_archive::{RunState, StepState, Store};
use sonde_campaign::{campaign_status, Control, Overrides, Plan, Progress, Scheduler};
use std::time::Duration;

/// The scheduler tests' fake path, 100 ms a test: what each endpoint's
/// scheduler ran, as (kind, host).
type Path = FakePath;

fn path() -> Path {
    FakePath {
        busy: Duration::from_millis(100),
        ..FakePath::default()
    }
}

fn ran(p: &Path) -> Vec<(String, String)> {
    let log = p.log.lock().unwrap();
    log.iter()
        .map(|(host, kind, ..)| (kind.clone(), host.clone()))
        .collect()
}

fn archive(test: &str) -> String {
    let dir = std::env::temp_dir().join(format!("sonde-shared-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("sonde.db").display().to_string()
}

/// A battery of two steps from A and one from B (its ping back), every
/// 3 s, three times, 2 s of slip: B, started 250 ms late, is well within
/// it on a loaded machine.
fn plan(name: &str) -> String {
    format!(
        "name = \"{name}\"\n[schedule]\nrepeat = \"PT3S\"\nmax_runs = 3\nslip = \"PT2S\"\n\
         [[endpoint]]\nname = \"A\"\naddress = \"a.test\"\n\
         [[endpoint]]\nname = \"B\"\naddress = \"b.test\"\n\
         [[step]]\nname = \"tcp A to B\"\ntest = \"tcp\"\ntime_s = 1\n\
         [[step]]\nname = \"ping B to A\"\nfrom = \"B\"\nto = \"A\"\ntest = \"ping\"\ncount = 1\n\
         [[step]]\nname = \"ping A to B\"\ntest = \"ping\"\ncount = 1\n"
    )
}

fn run_as(location: &str, text: &str, me: &str, path: &Path) -> Vec<Progress> {
    let plan = Plan::parse(text, &Overrides::default()).unwrap();
    let store = Store::open(location).unwrap();
    let control = Control::default();
    let over = Overrides::default();
    let mut s = Scheduler::new(store, plan, text, &over, me, path, &control).unwrap();
    let mut seen = Vec::new();
    s.run(&mut |p| seen.push(p)).unwrap();
    seen
}

#[test]
fn a_plan_run_from_both_ends_has_every_step_in_every_run_each_once() {
    let location = archive("both");
    let text = plan("both");
    Store::open(&location)
        .unwrap()
        .put_campaign("both", &text, None, sonde_campaign::now_ns())
        .unwrap();
    let (a, b) = (path(), path());
    std::thread::scope(|s| {
        s.spawn(|| run_as(&location, &text, "A", &a));
        // B comes a little late, within the first run's slip: it joins
        // that run rather than moving on to the next.
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(250));
            run_as(&location, &text, "B", &b)
        });
    });
    let mut store = Store::open(&location).unwrap();
    let runs = store.runs("both", 10).unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    for r in &runs {
        assert_eq!(r.state, RunState::Done, "{r:?}");
        let steps = store.run_steps(&r.id).unwrap();
        let names: Vec<_> = steps
            .iter()
            .map(|s| (s.name.as_str(), s.endpoint.as_str(), s.state))
            .collect();
        assert_eq!(
            names,
            [
                ("tcp A to B", "A", StepState::Done),
                ("ping B to A", "B", StepState::Done),
                ("ping A to B", "A", StepState::Done),
            ],
            "run {}",
            r.id
        );
    }
    // Each endpoint ran its own steps, three times each, and nothing else.
    let mut on_a = ran(&a);
    on_a.sort();
    assert_eq!(on_a.len(), 6, "{on_a:?}");
    assert!(on_a.iter().all(|(_, host)| host == "b.test"), "{on_a:?}");
    let on_b = ran(&b);
    assert_eq!(on_b, vec![("ping".to_string(), "a.test".to_string()); 3]);
    let status = campaign_status(&mut store, "both", 10).unwrap().unwrap();
    assert_eq!(status.runs.get("done"), Some(&3), "{:?}", status.runs);
    assert_eq!(status.runs.len(), 1, "{:?}", status.runs);
}

#[test]
fn a_run_whose_other_end_never_comes_is_partial_and_names_the_step_and_why() {
    let location = archive("alone");
    let text = plan("alone").replace("max_runs = 3", "max_runs = 2");
    let a = path();
    let seen = run_as(&location, &text, "A", &a);
    let mut store = Store::open(&location).unwrap();
    let runs = store.runs("alone", 10).unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for r in &runs {
        assert_eq!(r.state, RunState::Partial, "{r:?}");
        let reason = r.reason.as_deref().unwrap_or("");
        assert!(
            reason.contains("ping B to A (missed: no scheduler as endpoint B joined"),
            "{reason}"
        );
        let steps = store.run_steps(&r.id).unwrap();
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[1].state, StepState::Missed);
        assert_eq!(steps[1].holder, None);
    }
    assert_eq!(ran(&a).len(), 4);
    assert!(
        seen.iter().any(|p| matches!(
            p,
            Progress::Settled {
                state: RunState::Partial,
                ..
            }
        )),
        "{seen:?}"
    );
    assert!(matches!(seen.last(), Some(Progress::Finished)), "{seen:?}");
    let status = campaign_status(&mut store, "alone", 10).unwrap().unwrap();
    assert_eq!(status.runs.get("partial"), Some(&2), "{:?}", status.runs);
    assert_eq!(status.partial.len(), 2);
}

#[test]
fn overrides_are_kept_beside_the_plan_not_written_into_it() {
    let location = archive("over");
    let text = plan("over");
    let over = Overrides {
        scale: Some(0.5),
        repeat: Some("PT1S".into()),
        max_runs: Some(1),
        ..Overrides::default()
    };
    let plan = Plan::parse(&text, &over).unwrap();
    assert_eq!(plan.schedule.max_runs, Some(1));
    let store = Store::open(&location).unwrap();
    let control = Control::default();
    let fake = path();
    Scheduler::new(store, plan, &text, &over, "A", &fake, &control).unwrap();
    let mut store = Store::open(&location).unwrap();
    let row = store.campaigns().unwrap().remove(0);
    assert_eq!(row.plan, text, "the plan as written");
    assert_eq!(
        Overrides::from_json(row.overrides.as_deref()).unwrap(),
        over
    );
    let status = campaign_status(&mut store, "over", 10).unwrap().unwrap();
    assert_eq!(
        status.overrides.as_deref(),
        Some("scale 0.5, repeat PT1S, max_runs 1")
    );
    assert!(status.plan_error.is_none(), "{status:?}");
}
