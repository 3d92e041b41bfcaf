//! A battery: several tests run one after another, as the studies ran
//! theirs (TCP each way, UDP each way, pings), and as a campaign's slot
//! will. A test that fails does not stop the others; a stop does.

use crate::{Events, RunError, Runner, Stop};
use sonde_model::{TestResult, TestSpec};

/// Runs `specs` in order with `runner`; one outcome per spec, in order.
/// Once `stop` is set, the specs not yet started are `Interrupted`.
pub fn run_battery(
    runner: &dyn Runner,
    specs: &[TestSpec],
    stop: &Stop,
    events: &Events,
) -> Vec<Result<TestResult, RunError>> {
    specs
        .iter()
        .map(|spec| {
            if stop.is_stopped() {
                return Err(RunError::Interrupted);
            }
            runner.run(spec, stop, events)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{HostEnv, PingSpec, TcpSpec, TestEnv, Timestamp};
    use std::sync::Mutex;

    /// A fake path: answers each spec with a scripted outcome and
    /// remembers what it was asked.
    struct ScriptedRunner {
        script: Mutex<Vec<Result<(), RunError>>>,
        asked: Mutex<Vec<TestSpec>>,
        stop_after: Option<usize>,
    }

    impl ScriptedRunner {
        fn new(script: Vec<Result<(), RunError>>) -> Self {
            Self {
                script: Mutex::new(script.into_iter().rev().collect()),
                asked: Mutex::new(Vec::new()),
                stop_after: None,
            }
        }
    }

    impl Runner for ScriptedRunner {
        fn run(&self, spec: &TestSpec, stop: &Stop, _: &Events) -> Result<TestResult, RunError> {
            let mut asked = self.asked.lock().unwrap();
            asked.push(spec.clone());
            if self.stop_after == Some(asked.len()) {
                stop.stop();
            }
            let env = TestEnv {
                client: HostEnv::default(),
                server: HostEnv::default(),
                peer: None,
                source: None,
                target: None,
                method: None,
            };
            let next = self.script.lock().unwrap().pop().expect("script too short");
            next.map(|()| TestResult::new(spec.clone(), env, Timestamp::now()))
        }
    }

    fn specs() -> Vec<TestSpec> {
        vec![
            TcpSpec {
                host: "a".into(),
                ..TcpSpec::default()
            }
            .into(),
            PingSpec {
                host: "b".into(),
                ..PingSpec::default()
            }
            .into(),
            TcpSpec {
                host: "c".into(),
                ..TcpSpec::default()
            }
            .into(),
        ]
    }

    #[test]
    fn a_failed_test_does_not_stop_the_battery() {
        let runner =
            ScriptedRunner::new(vec![Ok(()), Err(RunError::PeerBusy("busy".into())), Ok(())]);
        let out = run_battery(&runner, &specs(), &Stop::new(), &Events::new());
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].as_ref().unwrap().spec.host(), "a");
        assert!(matches!(out[1], Err(RunError::PeerBusy(_))));
        assert_eq!(out[2].as_ref().unwrap().spec.host(), "c");
        let asked: Vec<String> = runner
            .asked
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.host().to_string())
            .collect();
        assert_eq!(asked, ["a", "b", "c"], "in order, each once");
    }

    #[test]
    fn a_stop_leaves_the_rest_unrun() {
        let mut runner = ScriptedRunner::new(vec![Ok(()), Ok(()), Ok(())]);
        runner.stop_after = Some(1);
        let out = run_battery(&runner, &specs(), &Stop::new(), &Events::new());
        assert!(out[0].is_ok());
        assert!(matches!(out[1], Err(RunError::Interrupted)));
        assert!(matches!(out[2], Err(RunError::Interrupted)));
        assert_eq!(runner.asked.lock().unwrap().len(), 1);
    }
}
