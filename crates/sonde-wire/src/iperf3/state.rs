//! State bytes: each step of the control exchange is announced by one
//! signed byte.

use super::Iperf3Error;

/// Who puts a state byte on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// One state byte of the control connection (a signed byte on the wire).
///
/// Several values are defined by iperf3 but never sent; they decode so
/// that a peer's byte can be named, and [`State::sender`] says `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum State {
    /// Server → client: every data connection is in; start the test.
    /// `TEST_RUNNING` follows at once.
    TestStart = 1,
    /// Server → client: data may flow.
    TestRunning = 2,
    /// Defined, never sent.
    ResultRequest = 3,
    /// Client → server: the client has finished the test.
    TestEnd = 4,
    /// Defined, never sent.
    StreamBegin = 5,
    /// Defined, never sent.
    StreamRunning = 6,
    /// Defined, never sent.
    StreamEnd = 7,
    /// Defined, never sent.
    AllStreamsEnd = 8,
    /// Server → client: send the parameters.
    ParamExchange = 9,
    /// Server → client: open the data connections.
    CreateStreams = 10,
    /// Server → client: the server is shutting down (a signal).
    ServerTerminate = 11,
    /// Client → server: the client is shutting down (a signal).
    ClientTerminate = 12,
    /// Server → client: send your results, then read mine.
    ExchangeResults = 13,
    /// Server → client: results are exchanged; print them.
    DisplayResults = 14,
    /// The server's idle state; never sent.
    IperfStart = 15,
    /// Client → server: the client is done; the last byte of a test.
    IperfDone = 16,
    /// Server → client: busy with another test (or, on a data
    /// connection, a cookie it does not know).
    AccessDenied = -1,
    /// Server → client: an error; two big-endian `i32`s follow
    /// ([`ServerError`](super::ServerError)).
    ServerError = -2,
}

impl State {
    /// Every state iperf3 defines, in value order (errors last).
    pub const ALL: [State; 18] = [
        State::TestStart,
        State::TestRunning,
        State::ResultRequest,
        State::TestEnd,
        State::StreamBegin,
        State::StreamRunning,
        State::StreamEnd,
        State::AllStreamsEnd,
        State::ParamExchange,
        State::CreateStreams,
        State::ServerTerminate,
        State::ClientTerminate,
        State::ExchangeResults,
        State::DisplayResults,
        State::IperfStart,
        State::IperfDone,
        State::AccessDenied,
        State::ServerError,
    ];

    /// The value as iperf3 defines it.
    pub const fn as_i8(self) -> i8 {
        self as i8
    }

    /// The byte on the wire (two's complement for the negative states).
    pub const fn to_byte(self) -> u8 {
        self.as_i8().to_be_bytes()[0]
    }

    /// Reads one byte from the wire.
    pub fn from_byte(byte: u8) -> Result<Self, Iperf3Error> {
        Self::try_from(i8::from_be_bytes([byte]))
    }

    /// iperf3's name for the state, as in its source and debug output.
    pub const fn name(self) -> &'static str {
        match self {
            State::TestStart => "TEST_START",
            State::TestRunning => "TEST_RUNNING",
            State::ResultRequest => "RESULT_REQUEST",
            State::TestEnd => "TEST_END",
            State::StreamBegin => "STREAM_BEGIN",
            State::StreamRunning => "STREAM_RUNNING",
            State::StreamEnd => "STREAM_END",
            State::AllStreamsEnd => "ALL_STREAMS_END",
            State::ParamExchange => "PARAM_EXCHANGE",
            State::CreateStreams => "CREATE_STREAMS",
            State::ServerTerminate => "SERVER_TERMINATE",
            State::ClientTerminate => "CLIENT_TERMINATE",
            State::ExchangeResults => "EXCHANGE_RESULTS",
            State::DisplayResults => "DISPLAY_RESULTS",
            State::IperfStart => "IPERF_START",
            State::IperfDone => "IPERF_DONE",
            State::AccessDenied => "ACCESS_DENIED",
            State::ServerError => "SERVER_ERROR",
        }
    }

    /// Which side sends this state; `None` for states never sent.
    pub const fn sender(self) -> Option<Side> {
        match self {
            State::TestEnd | State::ClientTerminate | State::IperfDone => Some(Side::Client),
            State::TestStart
            | State::TestRunning
            | State::ParamExchange
            | State::CreateStreams
            | State::ServerTerminate
            | State::ExchangeResults
            | State::DisplayResults
            | State::AccessDenied
            | State::ServerError => Some(Side::Server),
            State::ResultRequest
            | State::StreamBegin
            | State::StreamRunning
            | State::StreamEnd
            | State::AllStreamsEnd
            | State::IperfStart => None,
        }
    }
}

impl TryFrom<i8> for State {
    type Error = Iperf3Error;

    fn try_from(value: i8) -> Result<Self, Self::Error> {
        State::ALL
            .into_iter()
            .find(|s| s.as_i8() == value)
            .ok_or(Iperf3Error::UnknownState(value))
    }
}

impl TryFrom<u8> for State {
    type Error = Iperf3Error;

    fn try_from(byte: u8) -> Result<Self, Self::Error> {
        Self::from_byte(byte)
    }
}

impl From<State> for i8 {
    fn from(state: State) -> i8 {
        state.as_i8()
    }
}

impl From<State> for u8 {
    fn from(state: State) -> u8 {
        state.to_byte()
    }
}
