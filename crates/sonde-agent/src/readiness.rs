//! What the daemon tells its service manager (systemd's `Type=notify`,
//! through `$NOTIFY_SOCKET`): ready once every socket listens and every
//! part has started, stopping when it begins to stop. Without a service
//! manager (no `$NOTIFY_SOCKET`) nothing is sent.

use sd_notify::NotifyState;

fn tell(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!(error = %e, "cannot notify the service manager");
    }
}

/// Every socket listens and every part has started.
pub fn ready(status: &str) {
    tell(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// The daemon has begun to stop.
pub fn stopping(why: &str) {
    tell(&[NotifyState::Stopping, NotifyState::Status(why)]);
}
