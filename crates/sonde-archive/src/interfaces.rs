//! The agent's interface counters over time (bytes, packets and drops
//! each way), sampled every few seconds: the link load the portal draws
//! beside latency.

use crate::sql::Value;
use crate::{ArchiveError, Store};

/// One interface's counters at one time, as the kernel counts them
/// (totals since the interface came up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
}

/// A sample: an interface, when, and its counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceSample {
    pub interface: String,
    pub at_ns: i64,
    pub counters: Counters,
}

fn big(v: u64) -> Value {
    Value::Int(Some(i64::try_from(v).unwrap_or(i64::MAX)))
}

impl Store {
    /// Keeps `samples` in one transaction (a sample kept twice stays once).
    pub fn put_interface_samples(
        &mut self,
        samples: &[InterfaceSample],
    ) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |sql| {
            for s in samples {
                let c = s.counters;
                sql.execute(
                    "INSERT INTO interface_samples (interface, at_ns, rx_bytes, tx_bytes, \
                     rx_packets, tx_packets, rx_dropped, tx_dropped) VALUES ($1, $2, $3, $4, $5, \
                     $6, $7, $8) ON CONFLICT DO NOTHING",
                    &[
                        Value::Text(Some(s.interface.clone())),
                        Value::Int(Some(s.at_ns)),
                        big(c.rx_bytes),
                        big(c.tx_bytes),
                        big(c.rx_packets),
                        big(c.tx_packets),
                        big(c.rx_dropped),
                        big(c.tx_dropped),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// The interfaces sampled, by name.
    pub fn interface_names(&mut self) -> Result<Vec<String>, ArchiveError> {
        self.backend.sql().texts(
            "SELECT DISTINCT interface FROM interface_samples ORDER BY interface",
            &[],
        )
    }

    /// The samples of `interface` from `since_ns` until before
    /// `until_ns`, oldest first.
    pub fn interface_samples(
        &mut self,
        interface: &str,
        since_ns: i64,
        until_ns: i64,
    ) -> Result<Vec<InterfaceSample>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT at_ns, rx_bytes, tx_bytes, rx_packets, tx_packets, rx_dropped, tx_dropped \
             FROM interface_samples WHERE interface = $1 AND at_ns >= $2 AND at_ns < $3 ORDER BY \
             at_ns",
            &[
                Value::Text(Some(interface.to_string())),
                Value::Int(Some(since_ns)),
                Value::Int(Some(until_ns)),
            ],
        )?;
        let n =
            |r: &Vec<Value>, i: usize| r.get(i).and_then(Value::int).map_or(0, |v| v.max(0) as u64);
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(InterfaceSample {
                    interface: interface.to_string(),
                    at_ns: r.first()?.int()?,
                    counters: Counters {
                        rx_bytes: n(r, 1),
                        tx_bytes: n(r, 2),
                        rx_packets: n(r, 3),
                        tx_packets: n(r, 4),
                        rx_dropped: n(r, 5),
                        tx_dropped: n(r, 6),
                    },
                })
            })
            .collect())
    }
}
