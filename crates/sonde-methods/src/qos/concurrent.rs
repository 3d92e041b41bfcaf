//! A test beside a background: the background's tests start first (on
//! their own runner, e.g. a third-party agent) and end after it.

use sonde_model::{TestResult, TestSpec};
use sonde_run::{Events, RunError, Runner, Stop};
use std::time::Duration;

/// What ran: the foreground's outcome, then each background test's.
pub struct Beside {
    pub foreground: Result<TestResult, RunError>,
    pub background: Vec<Result<TestResult, RunError>>,
}

/// Runs `background` on `bg` (each at once, in its own thread), waits
/// `lead`, runs `foreground` on `fg`, and waits for the background to end.
/// The background's events are its own (a printer follows the
/// foreground's on `events`).
pub fn run_beside(
    fg: &dyn Runner,
    foreground: &TestSpec,
    bg: &dyn Runner,
    background: &[TestSpec],
    lead: Duration,
    stop: &Stop,
    events: &Events,
) -> Beside {
    std::thread::scope(|scope| {
        let handles: Vec<_> = background
            .iter()
            .map(|spec| scope.spawn(move || bg.run(spec, stop, &Events::new())))
            .collect();
        crate::step::idle(lead, stop);
        let foreground = fg.run(foreground, stop, events);
        let background = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(RunError::Unsupported(
                        "a background test's thread failed".into(),
                    ))
                })
            })
            .collect();
        Beside {
            foreground,
            background,
        }
    })
}
