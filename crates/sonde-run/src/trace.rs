//! Running a trace spec: the path hop by hop, each hop an event as it is
//! complete.

use crate::{Events, RunError, Stop};
use sonde_engine::trace::test::{run_trace, target_of};
use sonde_model::{Event, TestResult, TraceSpec};

pub fn run(spec: &TraceSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
    let target = target_of(spec)?;
    events.emit(Event::Trace { target });
    let result = run_trace(spec, target, stop.flag(), &mut |h| {
        events.emit(Event::Hop(h.clone()));
    })?;
    Ok(result)
}
