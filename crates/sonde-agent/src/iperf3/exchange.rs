//! The steps of iperf3's control exchange that TCP and UDP tests share
//! on the server: how long the client has for each, and the swap of
//! results that ends every test.

use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::EngineError;
use sonde_wire::iperf3::{Results, State};
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
    let theirs = control.recv_results(STEP_WAIT)?;
    control.send_results(ours)?;
    control.send_state(State::DisplayResults)?;
    // The client answers IPERF_DONE, or just closes.
    let _ = control.recv_state(STEP_WAIT);
    Ok(theirs)
}
