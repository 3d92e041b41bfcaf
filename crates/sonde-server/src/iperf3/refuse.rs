//! Turning an iperf3 client away in its own terms: each reason sonde
//! refuses a test ([`Refusal`]) becomes the iperf3 error number whose
//! text the client prints for it (`SERVER_ERROR`), and only a server
//! with every test slot taken answers `ACCESS_DENIED` ("the server is
//! busy running a test"). A test that fails once admitted is answered
//! with IESERVERTERM ("the server has terminated") the same way.

use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::EngineError;
use sonde_wire::iperf3::{errno, ServerError, State};
use sonde_wire::{Limit, Refusal, WireError};
use std::io::Write;

/// How the server answers a refused iperf3 client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// `ACCESS_DENIED`: the client says the server is busy.
    Busy,
    /// `SERVER_ERROR` with this iperf3 error number.
    Error(i32),
}

/// Whether a client of `version` (its `client_version`, e.g. "3.12")
/// knows IEMAXSERVERTESTDURATIONEXCEEDED, added in iperf3 3.20. Older
/// clients print only "int_errno=37" for it, so they get IEDURATION,
/// whose text ("test duration too long") at least names the problem.
fn knows_duration_limit(version: Option<&str>) -> bool {
    let Some(v) = version else { return false };
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(ma), Some(mi)) if (ma, mi) >= (3, 20))
}

/// The answer for `refusal` to a client of `version`.
pub(super) fn answer(refusal: &Refusal, version: Option<&str>) -> Answer {
    let duration = if knows_duration_limit(version) {
        errno::IEMAXSERVERTESTDURATIONEXCEEDED
    } else {
        errno::IEDURATION
    };
    match refusal {
        Refusal::Busy { .. } => Answer::Busy,
        Refusal::NotAllowed { .. }
        | Refusal::ThirdPartyNotAllowed { .. }
        | Refusal::AuthFailed
        | Refusal::AuthRequired => Answer::Error(errno::IEAUTHTEST),
        Refusal::LimitExceeded { limit, .. } => Answer::Error(match limit {
            Limit::MaxDuration => duration,
            Limit::MaxStreams => errno::IENUMSTREAMS,
            Limit::MaxRate => errno::IETOTALRATE,
            Limit::MaxConcurrentTests => return Answer::Busy,
            Limit::Other(_) => errno::IEUNIMP,
        }),
        Refusal::InvalidSpec { field, .. } => Answer::Error(match field.as_str() {
            "time_s" => duration,
            "omit_s" => errno::IEOMIT,
            "parallel" => errno::IENUMSTREAMS,
            "length_bytes" => errno::IEBLOCKSIZE,
            "window_bytes" => errno::IEBUFSIZE,
            "mss_bytes" => errno::IEMSS,
            "bitrate_bps" => errno::IETOTALRATE,
            _ => errno::IEUNIMP,
        }),
        Refusal::Unavailable { what } if what.starts_with("congestion control") => {
            Answer::Error(errno::IESETCONGESTION)
        }
        Refusal::Unavailable { .. } | Refusal::UnsupportedVersion { .. } => {
            Answer::Error(errno::IEUNIMP)
        }
    }
}

/// iperf3's parameter keys and the spec fields they become, for the
/// error numbers of [`answer`].
const PARAM_FIELDS: &[(&str, &str)] = &[
    ("time", "time_s"),
    ("omit", "omit_s"),
    ("parallel", "parallel"),
    ("len", "length_bytes"),
    ("window", "window_bytes"),
    ("MSS", "mss_bytes"),
    ("bandwidth", "bitrate_bps"),
];

/// The answer to parameters that do not read (`e`): a key whose value
/// is wrong gets the error number of the option it stands for (as a
/// refused value of it would); anything else IERECVPARAMS ("unable to
/// receive parameters from client").
pub(super) fn malformed_params(e: &WireError) -> Answer {
    let WireError::Malformed { field, reason } = e else {
        return Answer::Error(errno::IERECVPARAMS);
    };
    match PARAM_FIELDS.iter().find(|(key, _)| key == field) {
        Some((_, spec_field)) => {
            let refusal = Refusal::InvalidSpec {
                field: (*spec_field).into(),
                detail: reason.clone(),
            };
            answer(&refusal, None)
        }
        None => Answer::Error(errno::IERECVPARAMS),
    }
}

/// Sends `answer` on the control connection.
pub(super) fn send(control: &mut Iperf3Control, answer: Answer) -> Result<(), EngineError> {
    match answer {
        Answer::Busy => control.send_state(State::AccessDenied),
        Answer::Error(i_errno) => {
            let report = ServerError {
                i_errno,
                errno: Some(0),
            };
            let mut stream = control.stream();
            stream
                .write_all(&report.encode())
                .map_err(EngineError::io("sending an iperf3 server error"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(limit: Limit) -> Refusal {
        Refusal::LimitExceeded {
            limit,
            value: "1".into(),
            requested: "2".into(),
        }
    }

    #[test]
    fn only_a_full_server_is_busy() {
        let busy = Refusal::Busy {
            max_concurrent_tests: 1,
        };
        assert_eq!(answer(&busy, Some("3.12")), Answer::Busy);
        let not_allowed = Refusal::NotAllowed {
            client: "::1".into(),
        };
        assert_eq!(
            answer(&not_allowed, Some("3.12")),
            Answer::Error(errno::IEAUTHTEST)
        );
        assert_eq!(
            answer(&over(Limit::MaxRate), None),
            Answer::Error(errno::IETOTALRATE)
        );
        assert_eq!(
            answer(&over(Limit::MaxStreams), None),
            Answer::Error(errno::IENUMSTREAMS)
        );
    }

    #[test]
    fn the_duration_error_is_the_one_the_client_knows() {
        let r = over(Limit::MaxDuration);
        assert_eq!(answer(&r, Some("3.12")), Answer::Error(errno::IEDURATION));
        assert_eq!(answer(&r, Some("3.19.1")), Answer::Error(errno::IEDURATION));
        assert_eq!(answer(&r, None), Answer::Error(errno::IEDURATION));
        for v in ["3.20", "3.21", "3.21+", "4.0"] {
            assert_eq!(
                answer(&r, Some(v)),
                Answer::Error(errno::IEMAXSERVERTESTDURATIONEXCEEDED),
                "{v}"
            );
        }
    }

    #[test]
    fn an_invalid_field_names_its_iperf3_error() {
        let bad = |field: &str| Refusal::InvalidSpec {
            field: field.into(),
            detail: String::new(),
        };
        assert_eq!(
            answer(&bad("length_bytes"), None),
            Answer::Error(errno::IEBLOCKSIZE)
        );
        assert_eq!(answer(&bad("omit_s"), None), Answer::Error(errno::IEOMIT));
        assert_eq!(answer(&bad("profile"), None), Answer::Error(errno::IEUNIMP));
        let cc = Refusal::Unavailable {
            what: "congestion control 'x' (the server has: cubic)".into(),
        };
        assert_eq!(answer(&cc, None), Answer::Error(errno::IESETCONGESTION));
    }

    #[test]
    fn malformed_parameters_get_the_option_s_error_or_ierecvparams() {
        let bad = |field: &str| WireError::Malformed {
            field: field.into(),
            reason: "wrong".into(),
        };
        assert_eq!(
            malformed_params(&bad("parallel")),
            Answer::Error(errno::IENUMSTREAMS)
        );
        assert_eq!(
            malformed_params(&bad("time")),
            Answer::Error(errno::IEDURATION)
        );
        assert_eq!(
            malformed_params(&bad("title")),
            Answer::Error(errno::IERECVPARAMS)
        );
        assert_eq!(
            malformed_params(&WireError::BadMessage("not JSON".into())),
            Answer::Error(errno::IERECVPARAMS)
        );
    }
}
