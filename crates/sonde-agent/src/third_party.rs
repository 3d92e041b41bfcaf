//! The runner the endpoint runs third-party tests with: `sonde-run`'s, its
//! events handed to the endpoint's relay as they happen.

use sonde_engine::EngineError;
use sonde_model::{Event, TestResult, TestSpec};
use sonde_run::{Events, RunError, Stop};
use sonde_server::{ThirdPartyFailure, ThirdPartyRunner};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Runs third-party tests with [`sonde_run::run`].
#[derive(Debug, Default, Clone, Copy)]
pub struct RunnerRelay;

impl ThirdPartyRunner for RunnerRelay {
    fn run(
        &self,
        spec: &TestSpec,
        stop: &Arc<AtomicBool>,
        relay: &mut dyn FnMut(&Event),
    ) -> Result<TestResult, ThirdPartyFailure> {
        let stop = Stop::from(Arc::clone(stop));
        let events = Events::new();
        let rx = events.subscribe();
        let outcome = std::thread::scope(|s| {
            let runner = std::thread::Builder::new()
                .name("third-party".into())
                .spawn_scoped(s, || {
                    let outcome = sonde_run::run(spec, &stop, &events);
                    events.close();
                    outcome
                });
            let runner = match runner {
                Ok(r) => r,
                Err(e) => return Err(internal(format!("cannot start the test: {e}"))),
            };
            for event in rx {
                relay(&event);
            }
            runner
                .join()
                .unwrap_or_else(|_| Err(internal("the third-party test's thread failed".into())))
        });
        outcome.map_err(|e| ThirdPartyFailure {
            kind: e.kind().to_string(),
            message: e.to_string(),
        })
    }
}

fn internal(why: String) -> RunError {
    RunError::Internal(EngineError::Aborted(why))
}
