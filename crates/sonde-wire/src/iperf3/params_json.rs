//! Reading and writing [`Params`] as JSON: iperf3's key order and value
//! types on output, lenient reading on input (see the `params` module).

use super::frame::encode_json_frame;
use super::json::{parse_object, Fields};
use super::params::{Params, Protocol, DEFAULT_TIME};
use super::Iperf3Error;
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

impl Params {
    /// Reads a parameters payload (the JSON inside the frame).
    pub fn from_json(payload: &[u8]) -> Result<Self, Iperf3Error> {
        Self::from_map(&parse_object(payload, "parameters")?)
    }

    /// The JSON payload, compact, keys in iperf3's order.
    pub fn to_json(&self) -> Result<Vec<u8>, Iperf3Error> {
        serde_json::to_vec(self).map_err(|e| Iperf3Error::Encode(e.to_string()))
    }

    /// The whole frame: length prefix and JSON.
    pub fn to_frame(&self) -> Result<Vec<u8>, Iperf3Error> {
        encode_json_frame(&self.to_json()?)
    }

    /// Reads parameters from a parsed JSON object.
    pub fn from_map(map: &Map<String, Value>) -> Result<Self, Iperf3Error> {
        let f = Fields::new(map, String::new());
        Ok(Self {
            protocol: protocol(&f)?,
            omit: f.u32("omit")?.unwrap_or(0),
            server_affinity: f.u32("server_affinity")?,
            time: f.u32("time")?.unwrap_or(DEFAULT_TIME),
            num: f.u64("num")?.unwrap_or(0),
            blockcount: f.u64("blockcount")?.unwrap_or(0),
            mss: f.u32("MSS")?.unwrap_or(0),
            nodelay: f.flag("nodelay")?,
            parallel: f.u32("parallel")?.unwrap_or(1),
            reverse: f.flag("reverse")?,
            bidirectional: f.flag("bidirectional")?,
            mptcp: f.flag("mptcp")?,
            window: f.u32("window")?.unwrap_or(0),
            len: f.u32("len")?.unwrap_or(0),
            bandwidth: f.u64("bandwidth")?.unwrap_or(0),
            fqrate: f.u64("fqrate")?.unwrap_or(0),
            pacing_timer: f.u32("pacing_timer")?.unwrap_or(0),
            burst: f.u32("burst")?.unwrap_or(0),
            gso: f.opt_flag("gso")?,
            gso_dg_size: f.u32("gso_dg_size")?,
            gso_bf_size: f.u32("gso_bf_size")?,
            gro: f.opt_flag("gro")?,
            gro_bf_size: f.u32("gro_bf_size")?,
            tos: f.u8("TOS")?.unwrap_or(0),
            flowlabel: f.u32("flowlabel")?.unwrap_or(0),
            title: f.string("title")?,
            extra_data: f.string("extra_data")?,
            congestion: f.string("congestion")?,
            congestion_used: f.string("congestion_used")?,
            get_server_output: f.flag("get_server_output")?,
            udp_counters_64bit: f.flag("udp_counters_64bit")?,
            repeating_payload: f.flag("repeating_payload")?,
            zerocopy: f.flag("zerocopy")?,
            dont_fragment: f.flag("dont_fragment")?,
            authtoken: f.string("authtoken")?,
            skip_rx_copy: f.flag("skip_rx_copy")?,
            client_version: f.string("client_version")?,
        })
    }
}

/// The protocol the flags select; more than one is refused.
fn protocol(f: &Fields<'_>) -> Result<Protocol, Iperf3Error> {
    let mut chosen: Option<Protocol> = None;
    for candidate in [Protocol::Tcp, Protocol::Udp, Protocol::Sctp] {
        if !f.flag(candidate.key())? {
            continue;
        }
        if let Some(first) = chosen {
            return Err(Iperf3Error::Conflict(format!(
                "both \"{}\" and \"{}\" are set",
                first.key(),
                candidate.key()
            )));
        }
        chosen = Some(candidate);
    }
    Ok(chosen.unwrap_or_default())
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        m.serialize_entry(self.protocol.key(), &true)?;
        m.serialize_entry("omit", &self.omit)?;
        put_some(&mut m, "server_affinity", &self.server_affinity)?;
        m.serialize_entry("time", &self.time)?;
        m.serialize_entry("num", &self.num)?;
        m.serialize_entry("blockcount", &self.blockcount)?;
        put_nonzero(&mut m, "MSS", self.mss.into())?;
        put_true(&mut m, "nodelay", self.nodelay)?;
        m.serialize_entry("parallel", &self.parallel)?;
        put_true(&mut m, "reverse", self.reverse)?;
        put_true(&mut m, "bidirectional", self.bidirectional)?;
        put_true(&mut m, "mptcp", self.mptcp)?;
        put_nonzero(&mut m, "window", self.window.into())?;
        put_nonzero(&mut m, "len", self.len.into())?;
        put_nonzero(&mut m, "bandwidth", self.bandwidth)?;
        put_nonzero(&mut m, "fqrate", self.fqrate)?;
        put_nonzero(&mut m, "pacing_timer", self.pacing_timer.into())?;
        put_nonzero(&mut m, "burst", self.burst.into())?;
        put_some(&mut m, "gso", &self.gso.map(u8::from))?;
        put_some(&mut m, "gso_dg_size", &self.gso_dg_size)?;
        put_some(&mut m, "gso_bf_size", &self.gso_bf_size)?;
        put_some(&mut m, "gro", &self.gro.map(u8::from))?;
        put_some(&mut m, "gro_bf_size", &self.gro_bf_size)?;
        put_nonzero(&mut m, "TOS", self.tos.into())?;
        put_nonzero(&mut m, "flowlabel", self.flowlabel.into())?;
        put_some(&mut m, "title", &self.title)?;
        put_some(&mut m, "extra_data", &self.extra_data)?;
        put_some(&mut m, "congestion", &self.congestion)?;
        put_some(&mut m, "congestion_used", &self.congestion_used)?;
        put_one(&mut m, "get_server_output", self.get_server_output)?;
        put_one(&mut m, "udp_counters_64bit", self.udp_counters_64bit)?;
        put_one(&mut m, "repeating_payload", self.repeating_payload)?;
        put_one(&mut m, "zerocopy", self.zerocopy)?;
        put_one(&mut m, "dont_fragment", self.dont_fragment)?;
        put_some(&mut m, "authtoken", &self.authtoken)?;
        put_one(&mut m, "skip_rx_copy", self.skip_rx_copy)?;
        put_some(&mut m, "client_version", &self.client_version)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        Self::from_map(&map).map_err(serde::de::Error::custom)
    }
}

fn put_some<M: SerializeMap, T: Serialize>(
    m: &mut M,
    key: &str,
    value: &Option<T>,
) -> Result<(), M::Error> {
    match value {
        Some(v) => m.serialize_entry(key, v),
        None => Ok(()),
    }
}

fn put_nonzero<M: SerializeMap>(m: &mut M, key: &str, value: u64) -> Result<(), M::Error> {
    if value == 0 {
        return Ok(());
    }
    m.serialize_entry(key, &value)
}

/// A flag iperf3 reads as a JSON `true`.
fn put_true<M: SerializeMap>(m: &mut M, key: &str, set: bool) -> Result<(), M::Error> {
    if !set {
        return Ok(());
    }
    m.serialize_entry(key, &true)
}

/// A flag iperf3 reads as a number.
fn put_one<M: SerializeMap>(m: &mut M, key: &str, set: bool) -> Result<(), M::Error> {
    if !set {
        return Ok(());
    }
    m.serialize_entry(key, &1u8)
}
