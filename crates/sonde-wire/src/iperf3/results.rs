//! The results each side sends after `EXCHANGE_RESULTS`: the client's
//! first, then the server's, one JSON object each.
//!
//! Streams are matched by `id`. Both sides number their streams in the
//! order the data connections were made: 1, then 3, 4, 5 … (iperf3 skips
//! 2 and keeps doing so for compatibility); [`stream_id`] computes it.
//! A stream's counts are those of the side writing them: bytes it sent
//! (minus the omitted ones) if it was the sender, bytes it received if it
//! was the receiver.

use super::frame::encode_json_frame;
use super::json::{object_at, parse_object, Fields};
use super::Iperf3Error;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The id iperf3 gives its `index`-th stream (0-based): 1, 3, 4, 5, …
pub const fn stream_id(index: u32) -> u32 {
    if index == 0 {
        1
    } else {
        index.saturating_add(2)
    }
}

/// The results JSON of one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Results {
    /// `cpu_util_total`: percent of one CPU the process used.
    pub cpu_util_total: f64,
    /// `cpu_util_user`: the user-time share, percent.
    pub cpu_util_user: f64,
    /// `cpu_util_system`: the system-time share, percent.
    pub cpu_util_system: f64,
    /// `sender_has_retransmits`: 1 if this side sent TCP data and can
    /// count retransmissions, 0 if it sent but cannot, −1 if it only
    /// received.
    pub sender_has_retransmits: i64,
    /// `congestion_used`: the TCP congestion control algorithm in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// `server_output_json`: the server's whole JSON output, when the
    /// client asked for it and the server runs with `-J`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<Value>,
    /// `server_output_text`: the server's text output, when the client
    /// asked for it and the server does not run with `-J`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    /// `streams`: one entry per stream this side had.
    pub streams: Vec<StreamResult>,
}

/// One stream's entry in the results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamResult {
    /// `id`: see [`stream_id`].
    pub id: u32,
    /// `bytes`: sent (without the omitted period) or received.
    pub bytes: u64,
    /// `retransmits`: TCP retransmissions of a sender, −1 when unknown or
    /// not a sender.
    pub retransmits: i64,
    /// `jitter`: UDP receive jitter in seconds (0 for TCP and senders).
    pub jitter: f64,
    /// `errors`: UDP datagrams lost, as the receiver counts them.
    pub errors: i64,
    /// `omitted_errors` (3.21; written with `omitted_packets` or not at
    /// all): losses during the omitted period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted_errors: Option<i64>,
    /// `packets`: UDP datagrams sent, or the highest counter received.
    pub packets: i64,
    /// `omitted_packets` (3.21): datagrams of the omitted period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted_packets: Option<i64>,
    /// `start_time`: seconds from the stream's start (iperf3 writes 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<f64>,
    /// `end_time`: seconds from the stream's start to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
}

impl StreamResult {
    /// Retransmissions, if the writer counted them.
    pub fn retransmits(&self) -> Option<u64> {
        u64::try_from(self.retransmits).ok()
    }

    /// `end_time − start_time`, if both are present.
    pub fn duration(&self) -> Option<f64> {
        Some(self.end_time? - self.start_time?)
    }

    fn from_fields(f: &Fields<'_>) -> Result<Self, Iperf3Error> {
        let omitted_errors = f.i64("omitted_errors")?;
        let omitted_packets = f.i64("omitted_packets")?;
        omitted_pair(f, omitted_errors, omitted_packets)?;
        Ok(Self {
            id: f.required("id", f.u32("id")?)?,
            bytes: f.required("bytes", f.u64("bytes")?)?,
            retransmits: f.required("retransmits", f.i64("retransmits")?)?,
            jitter: f.required("jitter", f.f64("jitter")?)?,
            errors: f.required("errors", f.i64("errors")?)?,
            omitted_errors,
            packets: f.required("packets", f.i64("packets")?)?,
            omitted_packets,
            start_time: f.f64("start_time")?,
            end_time: f.f64("end_time")?,
        })
    }

    fn check(&self, index: usize) -> Result<(), Iperf3Error> {
        let at = |key: &str| format!("streams[{index}].{key}");
        finite(&at("jitter"), self.jitter)?;
        if let Some(t) = self.start_time {
            finite(&at("start_time"), t)?;
        }
        if let Some(t) = self.end_time {
            finite(&at("end_time"), t)?;
        }
        if self.omitted_errors.is_some() != self.omitted_packets.is_some() {
            return Err(Iperf3Error::Encode(format!(
                "{} and {} must be written together",
                at("omitted_errors"),
                at("omitted_packets")
            )));
        }
        Ok(())
    }
}

/// iperf3 3.21 refuses a stream with one of the omitted counts but not
/// the other, so a reader does too.
fn omitted_pair(
    f: &Fields<'_>,
    errors: Option<i64>,
    packets: Option<i64>,
) -> Result<(), Iperf3Error> {
    match (errors, packets) {
        (Some(_), None) => Err(Iperf3Error::MissingKey {
            key: f.path("omitted_packets"),
        }),
        (None, Some(_)) => Err(Iperf3Error::MissingKey {
            key: f.path("omitted_errors"),
        }),
        _ => Ok(()),
    }
}

impl Results {
    /// The entry of stream `id`, if present.
    pub fn stream(&self, id: u32) -> Option<&StreamResult> {
        self.streams.iter().find(|s| s.id == id)
    }

    /// Reads a results payload (the JSON inside the frame).
    pub fn from_json(payload: &[u8]) -> Result<Self, Iperf3Error> {
        Self::from_map(&parse_object(payload, "results")?)
    }

    /// The JSON payload, compact, keys in iperf3's order. Refuses
    /// non-finite numbers (JSON cannot carry them) and a lone omitted
    /// count.
    pub fn to_json(&self) -> Result<Vec<u8>, Iperf3Error> {
        self.check()?;
        serde_json::to_vec(self).map_err(|e| Iperf3Error::Encode(e.to_string()))
    }

    /// The whole frame: length prefix and JSON.
    pub fn to_frame(&self) -> Result<Vec<u8>, Iperf3Error> {
        encode_json_frame(&self.to_json()?)
    }

    /// Reads results from a parsed JSON object. The keys iperf3 requires
    /// are required here too: the three CPU figures,
    /// `sender_has_retransmits`, `streams`, and in each stream `id`,
    /// `bytes`, `retransmits`, `jitter`, `errors` and `packets`.
    pub fn from_map(map: &Map<String, Value>) -> Result<Self, Iperf3Error> {
        let f = Fields::new(map, String::new());
        let cpu_util_total = f.required("cpu_util_total", f.f64("cpu_util_total")?)?;
        let cpu_util_user = f.required("cpu_util_user", f.f64("cpu_util_user")?)?;
        let cpu_util_system = f.required("cpu_util_system", f.f64("cpu_util_system")?)?;
        let sender_has_retransmits =
            f.required("sender_has_retransmits", f.i64("sender_has_retransmits")?)?;
        let streams = f
            .required("streams", f.array("streams")?)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let path = format!("streams[{i}]");
                let map = object_at(v, &path)?;
                StreamResult::from_fields(&Fields::new(map, format!("{path}.")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            cpu_util_total,
            cpu_util_user,
            cpu_util_system,
            sender_has_retransmits,
            congestion_used: f.string("congestion_used")?,
            server_output_json: f.get("server_output_json").cloned(),
            server_output_text: f.string("server_output_text")?,
            streams,
        })
    }

    fn check(&self) -> Result<(), Iperf3Error> {
        finite("cpu_util_total", self.cpu_util_total)?;
        finite("cpu_util_user", self.cpu_util_user)?;
        finite("cpu_util_system", self.cpu_util_system)?;
        self.streams
            .iter()
            .enumerate()
            .try_for_each(|(i, s)| s.check(i))
    }
}

impl<'de> Deserialize<'de> for Results {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        Self::from_map(&map).map_err(serde::de::Error::custom)
    }
}

fn finite(key: &str, value: f64) -> Result<(), Iperf3Error> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(Iperf3Error::Encode(format!(
            "{key} is {value}, which JSON cannot carry"
        )))
    }
}
