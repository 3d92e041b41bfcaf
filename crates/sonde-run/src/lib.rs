//! The runner: "run this spec, stream me its events, give me its result".
//!
//! [`run`] takes any [`TestSpec`](sonde_model::TestSpec) (tcp, udp,
//! ping), validates it, connects, finds out whether the peer is iperf3,
//! measures latency under load when asked, and returns the
//! [`TestResult`](sonde_model::TestResult). While it runs it sends owned
//! [`Event`](sonde_model::Event)s to every subscriber of an [`Events`]
//! hub: the text printer and the JSON writer, a campaign's progress and
//! the portal's live view (`sonde-web`'s `live`). Methods and the
//! scheduler call it through the
//! [`Runner`] trait, so they can be tested with a scripted fake.
//!
//! The runner prints nothing and stores nothing.

mod battery;
mod error;
mod events;
mod http;
mod iperf3_client;
mod iperf3_tcp;
mod iperf3_udp;
mod latency;
mod live;
mod native_tcp;
mod native_udp;
mod ping;
mod runner;
mod stop;
mod tcp;
mod third_party;
mod token;
mod trace;
mod udp;

pub use battery::run_battery;
pub use error::RunError;
pub use events::Events;
pub use http::knee;
pub use runner::{run, LocalRunner, Runner};
pub use stop::{BoundedStop, Stop};
pub use third_party::{ThirdPartyRunner, THIRD_PARTY_FRAME_MAX};
pub use token::TokenRunner;
