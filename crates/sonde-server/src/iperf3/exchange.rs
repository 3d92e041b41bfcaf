//! The steps of iperf3's control exchange that TCP and UDP tests share
//! on the server: how long the client has for each, and the swap of
//! results that ends every test.

use crate::limits::END_GRACE;
use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::EngineError;
use sonde_wire::iperf3::{Params, Results, State};
use std::net::SocketAddr;
use std::time::Duration;

/// How long the client has for each step of the handshake and results.
pub(super) const STEP_WAIT: Duration = Duration::from_secs(10);

/// After the client's TEST_END: asks for its results, sends `ours`, and
/// lets it display them. The client's results are returned.
pub(super) fn swap_results(
    control: &mut Iperf3Control,
    ours: &Results,
) -> Result<Results, EngineError> {
    control.send_state(State::ExchangeResults)?;
    let theirs = control.recv_results(END_GRACE)?;
    control.send_results(ours)?;
    control.send_state(State::DisplayResults)?;
    // The client answers IPERF_DONE, or just closes.
    let _ = control.recv_state(END_GRACE);
    Ok(theirs)
}

/// Adds the server's text output to `ours` when the client asked for it
/// (`--get-server-output`). iperf3's server sends `server_output_json`
/// instead only when it runs with `-J` itself; `sonde serve` has no such
/// mode, so the client always gets the text.
pub(super) fn add_server_output(
    ours: &mut Results,
    params: &Params,
    peer: SocketAddr,
    sending: &[bool],
    udp: bool,
) {
    if params.get_server_output {
        ours.server_output_text = Some(super::output::text(peer, ours, sending, udp));
    }
}

/// Waits for the client's TEST_END. A test the client bounds (`-n`,
/// `-k`) that is still running at the server's limit is ended by the
/// server: SERVER_TERMINATE, as iperf3's server sends when it stops a
/// test.
pub(super) fn await_test_end(
    control: &mut Iperf3Control,
    limit: Duration,
) -> Result<State, EngineError> {
    let end = control.recv_state(limit + END_GRACE);
    if let Err(EngineError::Timeout { .. }) = &end {
        let _ = control.send_state(State::ServerTerminate);
    }
    end
}
