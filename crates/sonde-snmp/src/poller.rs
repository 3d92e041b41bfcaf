//! Polling one target: its interfaces found by name (IF-MIB `ifName`,
//! else `ifDescr`), then at each poll one GET of `sysUpTime` and each
//! interface's octet counters and speed, turned by a [`Follower`] per
//! interface into bytes moved, kept as interface samples (the portal's
//! load beside latency) and as readings (Mbit/s each way, and the share
//! of the interface's speed).

use crate::counter::{Follower, Poll, Step, Width};
use crate::snmp_config::SnmpTarget;
use async_snmp::{Auth, AuthProtocol, Client, Oid, PrivProtocol, Retry, UdpHandle, Value};
use sonde_archive::{Counters, InterfaceSample};
use sonde_readings::Reading;
use std::collections::BTreeMap;

/// Why a poll did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SnmpError {
    #[error("snmp '{target}': {what}: {reason}")]
    Agent {
        target: String,
        what: &'static str,
        reason: String,
    },
}

const SYS_UPTIME: &[u32] = &[1, 3, 6, 1, 2, 1, 1, 3, 0];
const IF_DESCR: &[u32] = &[1, 3, 6, 1, 2, 1, 2, 2, 1, 2];
const IF_SPEED: &[u32] = &[1, 3, 6, 1, 2, 1, 2, 2, 1, 5];
const IF_IN_OCTETS: &[u32] = &[1, 3, 6, 1, 2, 1, 2, 2, 1, 10];
const IF_OUT_OCTETS: &[u32] = &[1, 3, 6, 1, 2, 1, 2, 2, 1, 16];
const IF_NAME: &[u32] = &[1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1];
const IF_HC_IN_OCTETS: &[u32] = &[1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 6];
const IF_HC_OUT_OCTETS: &[u32] = &[1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 10];
const IF_HIGH_SPEED: &[u32] = &[1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 15];

fn column(base: &[u32], index: u32) -> Oid {
    let mut arcs = base.to_vec();
    arcs.push(index);
    Oid::from_slice(&arcs)
}

/// An interface followed: its index, its name, its counters.
#[derive(Debug)]
struct Followed {
    index: u32,
    name: String,
    follower: Follower,
    /// Whether the poll interval was found too long for its 32-bit
    /// counters (said once).
    warned: bool,
}

/// What one poll gave.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Polled {
    /// Each interface's totals, named `TARGET:IFNAME`.
    pub samples: Vec<InterfaceSample>,
    /// Each interface's rates over the interval since the last poll.
    pub readings: Vec<Reading>,
    /// Interfaces whose interval could not be measured, and why.
    pub breaks: Vec<(String, &'static str)>,
    /// What the operator should know (said once per interface).
    pub warnings: Vec<String>,
}

/// A connected target and the interfaces it follows.
pub struct Poller {
    target: SnmpTarget,
    width: Width,
    client: Client<UdpHandle>,
    followed: Vec<Followed>,
}

/// `name` as part of a reading's metric: characters a reading's name
/// cannot carry become `_`, and it is cut to leave room for the suffix.
pub fn metric_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':') {
                c
            } else {
                '_'
            }
        })
        .take(sonde_readings::reading::MAX_NAME - 10)
        .collect()
}

impl Poller {
    /// A client for `target` (the request is not sent yet).
    pub async fn connect(target: SnmpTarget) -> Result<Self, SnmpError> {
        let client = client_of(&target).await?;
        Ok(Self {
            width: target.width(),
            target,
            client,
            followed: Vec::new(),
        })
    }

    /// A new client for the same target, keeping what the interfaces'
    /// followers know: after a failed poll (an agent that restarted has
    /// a new SNMPv3 engine time, which a new client discovers).
    pub async fn reconnect(&mut self) -> Result<(), SnmpError> {
        self.client = client_of(&self.target).await?;
        Ok(())
    }

    fn fail(&self, what: &'static str, reason: impl ToString) -> SnmpError {
        SnmpError::Agent {
            target: self.target.name.clone(),
            what,
            reason: reason.to_string(),
        }
    }

    /// The interfaces followed, by name.
    pub fn interfaces(&self) -> Vec<String> {
        self.followed.iter().map(|f| f.name.clone()).collect()
    }

    /// Finds the interfaces to follow by name: the configured ones (by
    /// `ifName`, else `ifDescr`), or every one but loopback. A configured
    /// one the agent does not have is an error that names it.
    pub async fn resolve(&mut self) -> Result<(), SnmpError> {
        let mut names: BTreeMap<u32, String> = BTreeMap::new();
        let mut descrs: BTreeMap<u32, String> = BTreeMap::new();
        for (base, into) in [(IF_NAME, &mut names), (IF_DESCR, &mut descrs)] {
            let walked = self
                .client
                .walk(Oid::from_slice(base))
                .map_err(|e| self.fail("walk", e))?
                .collect()
                .await
                .map_err(|e| self.fail("walk", e))?;
            for vb in walked {
                let (Some(&index), Some(text)) = (vb.oid.arcs().last(), vb.value.as_bytes()) else {
                    continue;
                };
                into.insert(index, String::from_utf8_lossy(text).into_owned());
            }
        }
        let named = |index: u32| names.get(&index).or(descrs.get(&index)).cloned();
        let mut chosen: Vec<(u32, String)> = Vec::new();
        if self.target.interfaces.is_empty() {
            let all: std::collections::BTreeSet<u32> =
                names.keys().chain(descrs.keys()).copied().collect();
            for index in all {
                if let Some(name) = named(index).filter(|n| n != "lo") {
                    chosen.push((index, name));
                }
            }
        } else {
            for want in &self.target.interfaces {
                let found = names
                    .iter()
                    .find(|(_, n)| *n == want)
                    .or_else(|| descrs.iter().find(|(_, n)| *n == want));
                match found {
                    Some((&index, _)) => chosen.push((index, want.clone())),
                    None => {
                        return Err(self.fail(
                            "interfaces",
                            format!("the agent has no interface '{want}' (by ifName or ifDescr)"),
                        ))
                    }
                }
            }
        }
        let width = self.width;
        let mut kept: Vec<Followed> = std::mem::take(&mut self.followed);
        self.followed = chosen
            .into_iter()
            .map(|(index, name)| {
                // An interface still at its index keeps its follower.
                match kept.iter().position(|f| f.index == index && f.name == name) {
                    Some(i) => kept.swap_remove(i),
                    None => Followed {
                        index,
                        name,
                        follower: Follower::new(width),
                        warned: false,
                    },
                }
            })
            .collect();
        Ok(())
    }

    /// One poll: every followed interface's counters at `at_ns` (the
    /// time the answer came is taken instead when it is later).
    pub async fn poll(&mut self) -> Result<Polled, SnmpError> {
        if self.followed.is_empty() {
            self.resolve().await?;
        }
        let (in_col, out_col) = match self.width {
            Width::Bits32 => (IF_IN_OCTETS, IF_OUT_OCTETS),
            Width::Bits64 => (IF_HC_IN_OCTETS, IF_HC_OUT_OCTETS),
        };
        let mut oids = vec![Oid::from_slice(SYS_UPTIME)];
        for f in &self.followed {
            for base in [in_col, out_col, IF_SPEED, IF_HIGH_SPEED] {
                oids.push(column(base, f.index));
            }
        }
        let answer = self
            .client
            .get_many(&oids)
            .await
            .map_err(|e| self.fail("get", e))?;
        let at_ns = sonde_model::clock::now_ns();
        let values: BTreeMap<Vec<u32>, Value> = answer
            .varbinds
            .into_iter()
            .map(|vb| (vb.oid.arcs().to_vec(), vb.value))
            .collect();
        let get = |oid: &Oid| values.get(oid.arcs());
        let uptime = get(&Oid::from_slice(SYS_UPTIME))
            .and_then(Value::as_u32)
            .ok_or_else(|| self.fail("get", "no sysUpTime in the answer"))?;
        let mut out = Polled::default();
        let mut missing = Vec::new();
        for f in &mut self.followed {
            let counter = |base| get(&column(base, f.index)).and_then(Value::as_u64);
            let (Some(in_octets), Some(out_octets)) = (counter(in_col), counter(out_col)) else {
                missing.push(f.name.clone());
                continue;
            };
            let speed_bps = speed_of(counter(IF_HIGH_SPEED), counter(IF_SPEED));
            if let (Width::Bits32, Some(speed), false) = (self.width, speed_bps, f.warned) {
                let safe = crate::counter::longest_safe_interval_s(speed);
                if self.target.every.as_secs_f64() >= safe {
                    f.warned = true;
                    out.warnings.push(format!(
                        "{}: its 32-bit counters can wrap twice between polls at line rate \
                         (every {safe:.0} s at {} Mbit/s): poll more often or use counters = 64",
                        f.name,
                        speed / 1_000_000
                    ));
                }
            }
            let poll = Poll {
                at_ns,
                uptime,
                in_octets,
                out_octets,
            };
            let step = f.follower.step(poll, speed_bps);
            if step == Step::Stale {
                // Nothing counted afresh: neither a sample nor a rate.
                continue;
            }
            let (rx, tx) = f.follower.totals();
            out.samples.push(InterfaceSample {
                interface: format!("{}:{}", self.target.name, f.name),
                at_ns,
                counters: Counters {
                    rx_bytes: rx,
                    tx_bytes: tx,
                    ..Counters::default()
                },
            });
            match step {
                Step::Moved {
                    secs,
                    in_bytes,
                    out_bytes,
                    ..
                } => out.readings.extend(readings_of(
                    &self.target.name,
                    &f.name,
                    at_ns,
                    secs,
                    (in_bytes, out_bytes),
                    speed_bps,
                )),
                Step::Break(b) => out.breaks.push((f.name.clone(), b.describe())),
                Step::First | Step::Stale => {}
            }
        }
        if !missing.is_empty() {
            // Interfaces renumbered (a line card swapped, a tunnel made
            // again): found again by name at the next poll.
            self.followed.clear();
            return Err(self.fail(
                "get",
                format!(
                    "no counters for {}: looked up again next time",
                    missing.join(", ")
                ),
            ));
        }
        Ok(out)
    }
}

/// The interface's speed in bit/s: `ifHighSpeed` (Mbit/s) where the
/// agent has it, else `ifSpeed` unless it is at its ceiling (2^32 - 1:
/// "faster than this"); 0 is unknown.
fn speed_of(high_mbps: Option<u64>, speed_bps: Option<u64>) -> Option<u64> {
    match (high_mbps, speed_bps) {
        (Some(h), _) if h > 0 => Some(h * 1_000_000),
        (_, Some(s)) if s > 0 && s < u64::from(u32::MAX) => Some(s),
        _ => None,
    }
}

/// The readings of one interval: Mbit/s in and out, and each as a share
/// of the interface's speed when it is known.
fn readings_of(
    probe: &str,
    interface: &str,
    at_ns: i64,
    secs: f64,
    (in_bytes, out_bytes): (u64, u64),
    speed_bps: Option<u64>,
) -> Vec<Reading> {
    let part = metric_part(interface);
    let mut out = Vec::new();
    for (way, bytes) in [("in", in_bytes), ("out", out_bytes)] {
        let bps = bytes as f64 * 8.0 / secs;
        let reading = |metric: String, unit: &str, value: f64| Reading {
            probe: probe.to_string(),
            metric,
            unit: unit.to_string(),
            value,
            at_ns,
            with: None,
        };
        out.push(reading(format!("{part}.{way}"), "Mbit/s", bps / 1e6));
        if let Some(speed) = speed_bps {
            out.push(reading(
                format!("{part}.{way}_util"),
                "%",
                100.0 * bps / speed as f64,
            ));
        }
    }
    out
}

async fn client_of(target: &SnmpTarget) -> Result<Client<UdpHandle>, SnmpError> {
    let fail = |what, reason: String| SnmpError::Agent {
        target: target.name.clone(),
        what,
        reason,
    };
    let (host, port) = target
        .host_port()
        .map_err(|e| fail("address", e.reason.clone()))?;
    let auth = auth_of(target).map_err(|r| fail("credentials", r))?;
    let retry =
        Retry::fixed(1, std::time::Duration::ZERO).map_err(|e| fail("retry", e.to_string()))?;
    Client::builder((host, port), auth)
        .request_timeout(target.timeout)
        .retry(retry)
        .connect()
        .await
        .map_err(|e| fail("connect", e.to_string()))
}

fn auth_of(t: &SnmpTarget) -> Result<Auth, String> {
    if t.version == "2c" {
        return Ok(Auth::v2c(t.community.clone().unwrap_or_default()));
    }
    let user = t.user.clone().unwrap_or_default();
    let Some(auth) = &t.auth else {
        return Ok(Auth::usm(user));
    };
    let auth_protocol = match auth.as_str() {
        "md5" => AuthProtocol::Md5,
        "sha1" => AuthProtocol::Sha1,
        "sha224" => AuthProtocol::Sha224,
        "sha256" => AuthProtocol::Sha256,
        "sha384" => AuthProtocol::Sha384,
        "sha512" => AuthProtocol::Sha512,
        other => return Err(format!("auth '{other}' is not known")),
    };
    let auth_password = t.auth_password.clone().unwrap_or_default();
    let config = async_snmp::UsmConfig::new(user);
    let config = match &t.privacy {
        None => config.auth(auth_protocol, auth_password),
        Some(p) => {
            let privacy = match p.as_str() {
                "des" => PrivProtocol::Des,
                "aes128" => PrivProtocol::Aes128,
                "aes192" => PrivProtocol::Aes192Blumenthal,
                "aes256" => PrivProtocol::Aes256Blumenthal,
                other => return Err(format!("privacy '{other}' is not known")),
            };
            config.auth_priv(
                auth_protocol,
                auth_password,
                privacy,
                t.privacy_password.clone().unwrap_or_default(),
            )
        }
    }
    .map_err(|e| e.to_string())?;
    Ok(Auth::from(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_shares_of_an_interval() {
        let r = readings_of("r1", "Gi0/1", 7, 10.0, (12_500_000, 0), Some(100_000_000));
        let named: Vec<(&str, &str, f64)> = r
            .iter()
            .map(|r| (r.metric.as_str(), r.unit.as_str(), r.value))
            .collect();
        assert_eq!(
            named,
            vec![
                ("Gi0_1.in", "Mbit/s", 10.0),
                ("Gi0_1.in_util", "%", 10.0),
                ("Gi0_1.out", "Mbit/s", 0.0),
                ("Gi0_1.out_util", "%", 0.0),
            ]
        );
        for r in &r {
            assert!(
                sonde_readings::reading::valid_name(&r.metric),
                "{}",
                r.metric
            );
        }
        assert_eq!(readings_of("r1", "e", 7, 10.0, (0, 0), None).len(), 2);
    }

    #[test]
    fn the_speed_from_either_column() {
        assert_eq!(
            speed_of(Some(10_000), Some(u64::from(u32::MAX))),
            Some(10_000_000_000)
        );
        assert_eq!(speed_of(Some(0), Some(100_000_000)), Some(100_000_000));
        assert_eq!(speed_of(None, Some(u64::from(u32::MAX))), None);
        assert_eq!(speed_of(None, None), None);
    }

    #[test]
    fn long_or_odd_interface_names_still_make_metric_names() {
        let long = "x".repeat(200);
        let part = metric_part(&long);
        assert!(sonde_readings::reading::valid_name(&format!(
            "{part}.out_util"
        )));
        assert_eq!(
            metric_part("ge-0/0/1.100 (uplink)"),
            "ge-0_0_1.100__uplink_"
        );
    }
}
