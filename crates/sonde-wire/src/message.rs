//! The messages of the native control protocol.
//!
//! A test runs as: client → `TestRequest`; server → `Accepted` or
//! `Refused`; the client opens each data connection with a preamble and
//! `StreamHello`; server → `Start` once every stream is in; when data
//! stops, client → `Report`, server → `Report`. An interrupted client
//! sends `Stop` before its report. Either side may send `Abort` at any
//! time.
//!
//! A client holding a token first authenticates on the same connection:
//! client → `AuthHello`; server → `Challenge`; client → `AuthProof`;
//! server → `Authenticated` or `Refused`; then the request as above
//! ([`crate::auth`]).

use crate::auth::{Mac, Nonce};
use crate::{encode_frame, WireError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sonde_model::udp_report::ReceiverTally;
use sonde_model::{HostEnv, Interval, SideReport, TestResult, TestSpec, UdpSideReport};
use std::fmt;

/// A random 128-bit test identifier; data connections present it to join
/// their test, so it also keeps strangers from joining.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TestId(pub [u8; 16]);

impl fmt::Display for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TestId({self})")
    }
}

impl std::str::FromStr for TestId {
    type Err = WireError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || WireError::BadMessage(format!("test id '{s}' is not 32 hex digits"));
        if s.len() != 32 || !s.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Self(out))
    }
}

impl Serialize for TestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(|e| match e {
            WireError::BadMessage(why) => serde::de::Error::custom(why),
            other => serde::de::Error::custom(other),
        })
    }
}

/// A receiver's progress on one stream: the next sequence number it
/// expects (RFC 4737 NextExp). Unpaced UDP senders keep a bounded window
/// of packets beyond it, so "as fast as possible" means as fast as the
/// receiver takes, not as fast as the sender can drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamAck {
    pub stream: u16,
    pub next_expected: u64,
}

/// A server limit a test can run into, named on the wire and in messages
/// exactly as in the server's configuration (`[limits]` keys), e.g.
/// `max_duration`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Longest test, warm-up included.
    MaxDuration,
    /// Most data connections in one test.
    MaxStreams,
    /// Highest total rate of one test.
    MaxRate,
    /// Most tests running at once (its refusal is [`Refusal::Busy`]).
    MaxConcurrentTests,
    /// A limit this build does not know, by its name: what a newer server
    /// may send. Decoding keeps it so the refusal still reads right.
    Other(String),
}

impl Limit {
    /// The limit's name: its configuration key and its wire spelling.
    pub fn name(&self) -> &str {
        match self {
            Limit::MaxDuration => "max_duration",
            Limit::MaxStreams => "max_streams",
            Limit::MaxRate => "max_rate",
            Limit::MaxConcurrentTests => "max_concurrent_tests",
            Limit::Other(name) => name,
        }
    }

    /// The limit a name stands for ([`Limit::Other`] if none).
    pub fn from_name(name: &str) -> Self {
        match name {
            "max_duration" => Limit::MaxDuration,
            "max_streams" => Limit::MaxStreams,
            "max_rate" => Limit::MaxRate,
            "max_concurrent_tests" => Limit::MaxConcurrentTests,
            other => Limit::Other(other.to_string()),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::from_name(&String::deserialize(d)?))
    }
}

/// Why a server will not run a test. Each names the rule and its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Refusal {
    #[error("{limit} is {value} on this server (asked: {requested})")]
    LimitExceeded {
        limit: Limit,
        value: String,
        requested: String,
    },
    #[error("client {client} is not in this server's allowed prefixes")]
    NotAllowed { client: String },
    #[error(
        "server busy: {} is {max_concurrent_tests} and all are running",
        Limit::MaxConcurrentTests
    )]
    Busy { max_concurrent_tests: u32 },
    #[error("protocol version {offered} is not supported (this server speaks {supported})")]
    UnsupportedVersion { offered: u16, supported: u16 },
    #[error("invalid test: {field}: {detail}")]
    InvalidSpec { field: String, detail: String },
    #[error("not available on the server: {what}")]
    Unavailable { what: String },
    /// A third-party request from a client outside the server's
    /// `third_party.allow` prefixes (empty by default: none may ask).
    #[error(
        "client {client} may not ask this server for third-party tests \
         (it is not in third_party_allow and holds no token that may)"
    )]
    ThirdPartyNotAllowed { client: String },
    /// The client's token was not accepted: an unknown name, a wrong
    /// proof, a replayed or repeated proof, or an exchange out of order.
    /// Which of them is never said.
    #[error("authentication failed")]
    AuthFailed,
    /// This server runs no test for a client without a token
    /// (`auth.required`, or iperf3 clients with `auth.iperf3 = false`).
    #[error("this server requires a token (sonde's --token-file)")]
    AuthRequired,
}

/// A limit a server applied by cutting the test down rather than
/// refusing it: the test runs with `value` where `requested` was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    pub limit: Limit,
    /// The limit class whose cap it is.
    pub class: String,
    pub value: String,
    pub requested: String,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cut to {} by the server (class {}; asked: {})",
            self.limit, self.value, self.class, self.requested
        )
    }
}

impl Refusal {
    /// Its `reason` as the wire names it (`limit_exceeded`): the serde
    /// tag, so the log and the wire cannot spell it two ways.
    pub fn reason(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v["reason"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The limit the test ran into, if a limit refused it.
    pub fn limit(&self) -> Option<&Limit> {
        match self {
            Refusal::LimitExceeded { limit, .. } => Some(limit),
            Refusal::Busy { .. } => Some(&Limit::MaxConcurrentTests),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    TestRequest {
        request: TestSpec,
        env: HostEnv,
        /// The client takes `udp_interval` messages while a UDP test's
        /// data flows. Absent (false) from older clients, and ignored by
        /// older servers: both then do without, as before.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        live_intervals: bool,
        /// The client runs the test as the server cuts it down
        /// (`accepted.spec`). Absent (false) from older clients: a server
        /// then refuses where it would have cut.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        accepts_cuts: bool,
    },
    /// Opens an authenticated connection: the token's name and the
    /// client's fresh nonce. The server answers `challenge` or `refused`.
    AuthHello {
        token_name: String,
        client_nonce: Nonce,
    },
    /// The client's proof ([`crate::auth::client_proof`]) over the
    /// server's challenge.
    AuthProof {
        mac: Mac,
    },
    StreamHello {
        test_id: TestId,
        stream: u16,
    },
    /// A third-party test: the server runs `request` itself, as a client,
    /// toward `request.host`, whose own sonde server must accept it
    /// (docs/protocol.md). The server answers with `third_party_*`
    /// messages, or `refused`.
    ThirdPartyRequest {
        request: TestSpec,
        env: HostEnv,
    },
    Report {
        report: SideReport,
    },
    UdpReport {
        report: UdpSideReport,
    },
    /// The client was interrupted: stop the streams, then swap reports.
    Stop,
    /// Unpaced UDP: how far each stream the client receives has got.
    Progress {
        acks: Vec<StreamAck>,
    },
    Abort {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    Accepted {
        test_id: TestId,
        env: HostEnv,
        /// For UDP tests: the server's UDP port of each stream.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        udp_ports: Vec<u16>,
        /// The limits the server cut the test down to (only to a client
        /// that `accepts_cuts`); empty: it runs as asked.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cuts: Vec<Cut>,
        /// With `cuts`: the test the server runs, which the client must
        /// run too.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spec: Option<TestSpec>,
    },
    /// The server's nonce, fresh for this connection, for the client to
    /// prove its token over.
    Challenge {
        server_nonce: Nonce,
    },
    /// The proof was right: the limit class the client's tests run
    /// under, and the server's own proof ([`crate::auth::server_proof`]).
    Authenticated {
        class: String,
        proof: Mac,
    },
    Refused {
        refusal: Refusal,
    },
    Start,
    /// Unpaced UDP: how far each stream the server receives has got.
    Progress {
        acks: Vec<StreamAck>,
    },
    Report {
        report: SideReport,
    },
    UdpReport {
        report: UdpSideReport,
    },
    /// What the server's receivers counted in one interval, sent as the
    /// interval ends, to a client that asked (`live_intervals`).
    UdpInterval(ReceivedInterval),
    /// A third-party test's target accepted it: the test runs now.
    ThirdPartyConnected {
        server: std::net::SocketAddr,
        env: HostEnv,
    },
    /// One interval of a running third-party test, as the agent measured it.
    ThirdPartyInterval {
        interval: Interval,
    },
    /// A third-party test's whole result.
    ThirdPartyResult {
        result: Box<TestResult>,
    },
    /// A third-party test gave no result: why, by the runner's error kind
    /// (`refused`, `denied`, `busy`, `unreachable`, `protocol`, …).
    ThirdPartyFailed {
        kind: String,
        message: String,
    },
    Abort {
        reason: String,
    },
}

/// One interval of a UDP test's receivers, while data flows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceivedInterval {
    /// The interval's place among the test's intervals (0 first, those
    /// of the warm-up included), the same on both ends.
    pub index: u32,
    pub streams: Vec<StreamReceived>,
}

/// What one receiving stream counted in an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamReceived {
    pub stream: u16,
    pub tally: ReceiverTally,
}

/// A message as one complete frame.
pub fn encode_message<M: Serialize>(msg: &M) -> Result<Vec<u8>, WireError> {
    let json = serde_json::to_vec(msg).map_err(|e| WireError::Encode(e.to_string()))?;
    encode_frame(&json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusals_reason_is_its_tag_on_the_wire() {
        let busy = Refusal::Busy {
            max_concurrent_tests: 4,
        };
        assert_eq!(busy.reason(), "busy");
        assert_eq!(Refusal::AuthRequired.reason(), "auth_required");
        let over = Refusal::LimitExceeded {
            limit: Limit::MaxDuration,
            value: "5s".into(),
            requested: "10s".into(),
        };
        assert_eq!(over.reason(), "limit_exceeded");
    }
    use crate::decode::{decode_message, WireMessage};
    use crate::{FrameDecoder, HANDSHAKE_FRAME_MAX};
    use proptest::prelude::*;
    use sonde_model::TcpSpec;

    fn round_trip<M: Serialize + WireMessage>(m: &M) -> M {
        let wire = encode_message(m).unwrap();
        let mut d = FrameDecoder::new(HANDSHAKE_FRAME_MAX);
        d.push(&wire).unwrap();
        decode_message(&d.next_frame().unwrap().unwrap()).unwrap()
    }

    #[test]
    fn messages_round_trip() {
        let req = ClientMessage::TestRequest {
            request: TestSpec::Tcp(TcpSpec {
                host: "::1".into(),
                ..TcpSpec::default()
            }),
            env: HostEnv::default(),
            live_intervals: false,
            accepts_cuts: true,
        };
        assert_eq!(round_trip(&req), req);
        let hello = ClientMessage::AuthHello {
            token_name: "friend".into(),
            client_nonce: crate::auth::HexBytes([7; 32]),
        };
        assert_eq!(round_trip(&hello), hello);
        let proof = ClientMessage::AuthProof {
            mac: crate::auth::HexBytes([9; 32]),
        };
        assert_eq!(round_trip(&proof), proof);
        for m in [
            ServerMessage::Challenge {
                server_nonce: crate::auth::HexBytes([1; 32]),
            },
            ServerMessage::Authenticated {
                class: "friends".into(),
                proof: crate::auth::HexBytes([2; 32]),
            },
            ServerMessage::Refused {
                refusal: Refusal::AuthFailed,
            },
        ] {
            assert_eq!(round_trip(&m), m);
        }
        let refused = ServerMessage::Refused {
            refusal: Refusal::LimitExceeded {
                limit: Limit::MaxDuration,
                value: "5m".into(),
                requested: "1h".into(),
            },
        };
        assert_eq!(round_trip(&refused), refused);
        assert_eq!(round_trip(&ServerMessage::Start), ServerMessage::Start);
    }

    /// Live intervals are asked for in the request: an older server
    /// reads the request without the field, and an older client's
    /// request (without it) asks for none.
    #[test]
    fn live_intervals_are_optional_both_ways() {
        let req = ClientMessage::TestRequest {
            request: TestSpec::Udp(sonde_model::UdpSpec {
                host: "::1".into(),
                ..sonde_model::UdpSpec::default()
            }),
            env: HostEnv::default(),
            live_intervals: true,
            accepts_cuts: false,
        };
        assert_eq!(round_trip(&req), req);
        let mut json = serde_json::to_value(&req).unwrap();
        assert_eq!(json["live_intervals"], true);
        json.as_object_mut().unwrap().remove("live_intervals");
        let old: ClientMessage = serde_json::from_value(json).unwrap();
        assert!(matches!(
            old,
            ClientMessage::TestRequest {
                live_intervals: false,
                ..
            }
        ));
        let iv = ServerMessage::UdpInterval(ReceivedInterval {
            index: 3,
            streams: vec![StreamReceived {
                stream: 0,
                tally: ReceiverTally {
                    packets: 90,
                    expected: 100,
                    ..ReceiverTally::default()
                },
            }],
        });
        assert_eq!(round_trip(&iv), iv);
        let text = String::from_utf8(encode_message(&iv).unwrap()[4..].to_vec()).unwrap();
        assert!(
            text.starts_with(r#"{"type":"udp_interval","index":3,"#),
            "{text}"
        );
    }

    #[test]
    fn refusals_read_as_sentences() {
        let r = Refusal::LimitExceeded {
            limit: Limit::MaxStreams,
            value: "8".into(),
            requested: "16".into(),
        };
        assert_eq!(r.to_string(), "max_streams is 8 on this server (asked: 16)");
        let busy = Refusal::Busy {
            max_concurrent_tests: 4,
        };
        assert_eq!(
            busy.to_string(),
            "server busy: max_concurrent_tests is 4 and all are running"
        );
        assert_eq!(busy.limit(), Some(&Limit::MaxConcurrentTests));
    }

    /// The wire JSON of a limit refusal is what it was when the limit was
    /// a string; names this build does not know still decode.
    #[test]
    fn limits_are_spelled_as_their_config_keys() {
        for (limit, name) in [
            (Limit::MaxDuration, "max_duration"),
            (Limit::MaxStreams, "max_streams"),
            (Limit::MaxRate, "max_rate"),
            (Limit::MaxConcurrentTests, "max_concurrent_tests"),
        ] {
            assert_eq!(limit.to_string(), name);
            assert_eq!(Limit::from_name(name), limit);
            let r = Refusal::LimitExceeded {
                limit: limit.clone(),
                value: "1".into(),
                requested: "2".into(),
            };
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(
                json,
                format!(
                    r#"{{"reason":"limit_exceeded","limit":"{name}","value":"1","requested":"2"}}"#
                )
            );
            assert_eq!(serde_json::from_str::<Refusal>(&json).unwrap(), r);
            assert_eq!(r.limit(), Some(&limit));
        }
        let newer =
            r#"{"reason":"limit_exceeded","limit":"max_packets","value":"9","requested":"10"}"#;
        let r: Refusal = serde_json::from_str(newer).unwrap();
        assert_eq!(r.limit(), Some(&Limit::Other("max_packets".into())));
        assert_eq!(r.to_string(), "max_packets is 9 on this server (asked: 10)");
        assert_eq!(serde_json::to_string(&r).unwrap(), newer);
        let busy = r#"{"reason":"busy","max_concurrent_tests":2}"#;
        let r: Refusal = serde_json::from_str(busy).unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), busy);
    }

    #[test]
    fn wrong_types_are_errors() {
        let bad = br#"{"type":"stream_hello","test_id":5,"stream":"x"}"#;
        assert!(decode_message::<ClientMessage>(bad).is_err());
        let bad = br#"{"type":"stream_hello","test_id":"zz","stream":1}"#;
        match decode_message::<ClientMessage>(bad) {
            Err(WireError::Malformed { field, .. }) => assert_eq!(field, "test_id"),
            other => panic!("{other:?}"),
        }
        // A server message is not located: serde's words as they are.
        assert!(matches!(
            decode_message::<ServerMessage>(b"{}"),
            Err(WireError::BadMessage(_))
        ));
    }

    proptest! {
        #[test]
        fn test_ids_round_trip(bytes in any::<[u8; 16]>()) {
            let id = TestId(bytes);
            prop_assert_eq!(id.to_string().parse::<TestId>().unwrap(), id);
        }

        #[test]
        fn hello_round_trips(bytes in any::<[u8; 16]>(), stream in any::<u16>()) {
            let m = ClientMessage::StreamHello { test_id: TestId(bytes), stream };
            prop_assert_eq!(round_trip(&m), m);
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_message::<ClientMessage>(&bytes);
            let _ = decode_message::<ServerMessage>(&bytes);
        }
    }
}
