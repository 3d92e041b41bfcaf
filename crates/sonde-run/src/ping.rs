//! Running a ping spec: ICMP echo, or STAMP with the key its key file
//! holds.

use crate::{Events, RunError, Stop};
use sonde_engine::ping::{run_ping, PingEvent};
use sonde_model::{Event, PingSpec, TestResult};
use sonde_wire::stamp::key::parse_hex_key;
use std::path::Path;

/// The key in `path`, read now: keys are named by path in a spec and
/// never stored in a result.
fn read_key(path: &Path) -> Result<Vec<u8>, RunError> {
    let bad = |reason: String| RunError::KeyFile {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    parse_hex_key(&text).map_err(|e| bad(e.to_string()))
}

pub fn run(spec: &PingSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
    if let (Some(name), None) = (&spec.key, &spec.key_file) {
        // Only an agent knows its keys by name (`[keys]`): its gate puts
        // the file in before the test runs.
        return Err(RunError::Unsupported(format!(
            "key '{name}': a key by name is for a request to an agent with [keys]; \
             here, give its file (key_file, --key-file)"
        )));
    }
    let key = spec.key_file.as_deref().map(read_key).transpose()?;
    let result = run_ping(spec, key.as_deref(), stop.flag(), &mut |e| match e {
        PingEvent::Series {
            size,
            target,
            method,
        } => events.emit(Event::Series {
            size_bytes: size,
            target,
            method,
        }),
        PingEvent::Reply(r) => events.emit(Event::Reply(*r)),
    })?;
    Ok(result)
}
