//! Reading the keys of one link direction by hand, so that each value
//! that cannot be read names its key and the value as written.

use super::*;
use toml::Value;

pub(super) const DIRECTION_KEYS: [&str; 19] = [
    "rate",
    "queue_ms",
    "queue",
    "loss",
    "delay",
    "jitter",
    "jitter_dist",
    "line_rate",
    "line_queue",
    "rio",
    "duplicate",
    "reorder",
    "policer",
    "diffserv",
    "marking",
    "flow_label",
    "ef_from",
    "mpls",
    "tunnel",
];
pub(super) const DIRECTION_KNOWN: &str =
    "rate, queue_ms, queue, loss, delay, jitter, jitter_dist, \
                               line_rate, line_queue, rio, duplicate, reorder, policer, diffserv, marking, flow_label, ef_from, mpls, tunnel";
pub(super) const GILBERT_KEYS: [&str; 4] = ["p", "r", "loss_good", "loss_bad"];
pub(super) const GILBERT_KNOWN: &str = "p, r, loss_good, loss_bad";
pub(super) const POLICER_KEYS: [&str; 6] =
    ["rate", "burst", "dscp", "protocol", "action", "punish"];
pub(super) const POLICER_KNOWN: &str = "rate, burst, dscp, protocol, action, punish";
pub(super) const DIFFSERV_KEYS: [&str; 3] = ["priority", "lbe", "lbe_min"];
pub(super) const DIFFSERV_KNOWN: &str = "priority, lbe, lbe_min";
pub(super) const MPLS_KEYS: [&str; 2] = ["labels", "address"];
pub(super) const MPLS_KNOWN: &str = "labels, address";
pub(super) const TUNNEL_KEYS: [&str; 4] = ["overhead", "mtu", "address", "cipher"];
pub(super) const TUNNEL_KNOWN: &str = "overhead, mtu, address, cipher";

/// `key` inside `table` ("" for the direction's own keys).
pub(super) fn path(table: &str, key: &str) -> String {
    if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    }
}

pub(super) fn wrong_type(key: &str, expected: &'static str, v: &Value) -> ProfileError {
    ProfileError::WrongType {
        key: key.to_string(),
        expected,
        found: v.type_str(),
    }
}

/// A string or a number as written (numbers in decimal).
pub(super) fn scalar(key: &str, expected: &'static str, v: &Value) -> Result<String, ProfileError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        _ => Err(wrong_type(key, expected, v)),
    }
}

/// The first key of `t` not in `known`.
pub(super) fn unknown_key(
    table: &str,
    t: &Table,
    keys: &[&str],
    known: &'static str,
) -> Result<(), ProfileError> {
    match t.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(ProfileError::UnknownKey {
            key: path(table, k),
            known,
        }),
        None => Ok(()),
    }
}

/// `key` of `t`, read by `read` if present.
pub(super) fn opt<T>(
    t: &Table,
    table: &str,
    key: &str,
    read: fn(&str, &Value) -> Result<T, ProfileError>,
) -> Result<Option<T>, ProfileError> {
    t.get(key).map(|v| read(&path(table, key), v)).transpose()
}

pub(super) fn read_rate(key: &str, v: &Value) -> Result<Rate, ProfileError> {
    scalar(key, "a rate such as \"100M\"", v)?
        .parse()
        .map_err(|source| ProfileError::BadRate {
            key: key.to_string(),
            source,
        })
}

pub(super) fn read_size(key: &str, v: &Value) -> Result<ByteSize, ProfileError> {
    scalar(key, "a size such as \"15K\"", v)?
        .parse()
        .map_err(|source| ProfileError::BadSize {
            key: key.to_string(),
            source,
        })
}

pub(super) fn read_duration(key: &str, v: &Value) -> Result<Duration, ProfileError> {
    let s = scalar(key, "a duration such as \"20ms\"", v)?;
    // The one duration parser: "20ms", or a bare number of seconds.
    sonde_model::parse_duration(&s).map_err(|_| ProfileError::BadDuration {
        key: key.to_string(),
        value: s,
    })
}

pub(super) fn read_u32(key: &str, v: &Value) -> Result<u32, ProfileError> {
    let s = scalar(key, "a whole number", v)?;
    s.trim().parse().map_err(|_| ProfileError::BadInteger {
        key: key.to_string(),
        value: s,
    })
}

/// A probability in [0, 1], written "1%" or 0.01.
pub(super) fn read_probability(key: &str, v: &Value) -> Result<f64, ProfileError> {
    let expected = "a percentage (\"1%\" or 0.01)";
    let (p, written) = match v {
        Value::Integer(i) => (*i as f64, i.to_string()),
        Value::Float(f) => (*f, f.to_string()),
        Value::String(t) => {
            let body = t.trim();
            let (num, scale) = match body.strip_suffix('%') {
                Some(n) => (n.trim(), 100.0),
                None => (body, 1.0),
            };
            let p = num
                .parse::<f64>()
                .map_err(|_| ProfileError::BadPercentage {
                    key: key.to_string(),
                    value: t.clone(),
                })?;
            (p / scale, t.clone())
        }
        _ => return Err(wrong_type(key, expected, v)),
    };
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(ProfileError::PercentageOutOfRange {
            key: key.to_string(),
            value: written,
        })
    }
}

pub(super) fn read_dscp(key: &str, v: &Value) -> Result<Dscp, ProfileError> {
    scalar(key, "a DSCP (\"EF\", 46)", v)?
        .parse()
        .map_err(|source| ProfileError::BadDscp {
            key: key.to_string(),
            source,
        })
}

pub(super) fn read_dscps(key: &str, v: &Value) -> Result<Vec<Dscp>, ProfileError> {
    let Value::Array(items) = v else {
        return Err(wrong_type(key, "a list of DSCPs ([\"EF\", 46])", v));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, d)| read_dscp(&format!("{key}[{}]", i + 1), d))
        .collect()
}

pub(super) fn read_prefixes(key: &str, v: &Value) -> Result<Vec<IpNet>, ProfileError> {
    let Value::Array(items) = v else {
        return Err(wrong_type(key, "a list of prefixes ([\"2001:2::/48\"])", v));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let key = format!("{key}[{}]", i + 1);
            let s = scalar(&key, "a prefix such as \"2001:2::/48\"", p)?;
            s.trim()
                .parse()
                .map_err(|_| ProfileError::BadPrefix { key, value: s })
        })
        .collect()
}

/// A string naming one of an enum's (serde) variants.
pub(super) fn read_choice<T: serde::de::DeserializeOwned>(
    key: &str,
    v: &Value,
    choices: &'static str,
) -> Result<T, ProfileError> {
    let Value::String(s) = v else {
        return Err(wrong_type(key, choices, v));
    };
    let d = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(s);
    T::deserialize(d).map_err(|_| ProfileError::UnknownChoice {
        key: key.to_string(),
        value: s.clone(),
        choices,
    })
}

pub(super) fn read_jitter_dist(key: &str, v: &Value) -> Result<JitterDist, ProfileError> {
    read_choice(key, v, "\"uniform\", \"normal\" or \"pareto-normal\"")
}

pub(super) fn read_marking(key: &str, v: &Value) -> Result<Marking, ProfileError> {
    read_choice(key, v, "\"trust\", \"reset\" or \"filter\"")
}

pub(super) fn read_protocol(key: &str, v: &Value) -> Result<PolicedProtocol, ProfileError> {
    read_choice(key, v, "\"udp\" or \"tcp\"")
}

pub(super) fn read_queue(key: &str, v: &Value) -> Result<QueueLimit, ProfileError> {
    let text = match v {
        // A bare number counts packets.
        Value::Integer(_) | Value::Float(_) => format!("{}p", scalar(key, "", v)?),
        Value::String(s) => s.clone(),
        _ => {
            return Err(wrong_type(
                key,
                "packets (\"100p\") or bytes (\"64K\", \"150000B\")",
                v,
            ))
        }
    };
    let t = text.trim();
    let bad = || ProfileError::BadQueue {
        key: key.to_string(),
        value: t.to_string(),
    };
    let limit = if let Some(n) = t.strip_suffix("packets").or_else(|| t.strip_suffix('p')) {
        n.trim()
            .parse::<u32>()
            .map(QueueLimit::Packets)
            .map_err(|_| bad())?
    } else {
        t.parse::<ByteSize>()
            .map(|b| QueueLimit::Bytes(b.bytes()))
            .map_err(|_| bad())?
    };
    match limit {
        QueueLimit::Packets(0) | QueueLimit::Bytes(0) => Err(bad()),
        l => Ok(l),
    }
}

pub(super) fn read_loss(key: &str, v: &Value) -> Result<LossSpec, ProfileError> {
    let m = match v {
        Value::Table(m) => m,
        Value::String(_) | Value::Integer(_) | Value::Float(_) => {
            return read_probability(key, v).map(LossSpec::Random)
        }
        _ => return Err(wrong_type(
            key,
            "a percentage (\"1%\", 0.01) or a Gilbert-Elliott table { p, r, loss_good, loss_bad }",
            v,
        )),
    };
    unknown_key(key, m, &GILBERT_KEYS, GILBERT_KNOWN)?;
    let get = |k: &str, default: Option<f64>| match (m.get(k), default) {
        (Some(v), _) => read_probability(&path(key, k), v),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(ProfileError::MissingKey {
            key: path(key, k),
            why: "Gilbert-Elliott loss needs p (good→bad) and r (bad→good), per packet",
        }),
    };
    Ok(LossSpec::Gilbert(Gilbert {
        p: get("p", None)?,
        r: get("r", None)?,
        loss_good: get("loss_good", Some(0.0))?,
        loss_bad: get("loss_bad", Some(1.0))?,
    }))
}

pub(super) fn read_probability_key(key: &str, v: &Value) -> Result<Probability, ProfileError> {
    read_probability(key, v).map(Probability)
}

pub(super) fn read_police_action(key: &str, v: &Value) -> Result<PoliceAction, ProfileError> {
    let s = scalar(key, "\"drop\" or \"remark:DSCP\"", v)?;
    match s.trim().split_once(':') {
        None if s.trim() == "drop" => Ok(PoliceAction::Drop),
        Some(("remark", dscp)) => {
            dscp.parse()
                .map(PoliceAction::Remark)
                .map_err(|source| ProfileError::BadDscp {
                    key: key.to_string(),
                    source,
                })
        }
        _ => Err(ProfileError::BadPoliceAction {
            key: key.to_string(),
            value: s,
        }),
    }
}

pub(super) fn read_policer(key: &str, v: &Value) -> Result<PolicerSpec, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(
            key,
            "a table { rate, burst, dscp, protocol, action, punish }",
            v,
        ));
    };
    unknown_key(key, t, &POLICER_KEYS, POLICER_KNOWN)?;
    Ok(PolicerSpec {
        rate: opt(t, key, "rate", read_rate)?.ok_or_else(|| ProfileError::MissingKey {
            key: path(key, "rate"),
            why: "a policer needs a rate",
        })?,
        burst: opt(t, key, "burst", read_size)?,
        dscp: opt(t, key, "dscp", read_dscp)?,
        protocol: opt(t, key, "protocol", read_protocol)?,
        action: opt(t, key, "action", read_police_action)?,
        punish: opt(t, key, "punish", read_probability_key)?,
    })
}

pub(super) fn read_policers(key: &str, v: &Value) -> Result<Vec<PolicerSpec>, ProfileError> {
    let Value::Array(items) = v else {
        return Err(wrong_type(
            key,
            "a list of policers ([{ rate = \"1M\" }])",
            v,
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, p)| read_policer(&format!("{key}[{}]", i + 1), p))
        .collect()
}

pub(super) fn read_diffserv(key: &str, v: &Value) -> Result<DiffservSpec, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(key, "a table { priority, lbe, lbe_min }", v));
    };
    unknown_key(key, t, &DIFFSERV_KEYS, DIFFSERV_KNOWN)?;
    Ok(DiffservSpec {
        priority: opt(t, key, "priority", read_dscps)?,
        lbe: opt(t, key, "lbe", read_dscps)?,
        lbe_min: opt(t, key, "lbe_min", read_probability_key)?,
    })
}

/// `mpls = { labels = [16005], address = ["2001:db8:ff::1", "10.255.0.1"] }`:
/// an MPLS hop (sonde's emulator), its labels outermost first and at most
/// one address per family to answer from.
pub(super) fn read_mpls(key: &str, v: &Value) -> Result<Lsr, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(key, "a table { labels, address }", v));
    };
    unknown_key(key, t, &MPLS_KEYS, MPLS_KNOWN)?;
    let labels_key = path(key, "labels");
    let Some(items) = t.get("labels") else {
        return Err(ProfileError::MissingKey {
            key: labels_key,
            why: "the labels a packet carries through the hop ([16005])",
        });
    };
    let Value::Array(items) = items else {
        return Err(wrong_type(&labels_key, "a list of labels ([16005])", items));
    };
    if !(1..=4).contains(&items.len()) {
        return Err(ProfileError::LabelCount {
            key: labels_key,
            count: items.len(),
        });
    }
    let labels = items
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let key = format!("{labels_key}[{}]", i + 1);
            let s = scalar(&key, "an MPLS label (16005)", l)?;
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|l| *l < 1 << 20)
                .ok_or(ProfileError::BadLabel { key, value: s })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (v4, v6) = read_addresses(key, t)?;
    Ok(Lsr { labels, v4, v6 })
}

/// `address`: at most one IPv6 and one IPv4 address, a list or one.
fn read_addresses(
    key: &str,
    t: &Table,
) -> Result<(Option<std::net::Ipv4Addr>, Option<std::net::Ipv6Addr>), ProfileError> {
    let address_key = path(key, "address");
    let addresses = match t.get("address") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(one @ Value::String(_)) => vec![one.clone()],
        Some(other) => {
            return Err(wrong_type(
                &address_key,
                "a list of addresses ([\"2001:db8:ff::1\", \"10.255.0.1\"])",
                other,
            ))
        }
    };
    let (mut v4, mut v6) = (None, None);
    for (i, a) in addresses.iter().enumerate() {
        let key = format!("{address_key}[{}]", i + 1);
        let s = scalar(&key, "an IP address", a)?;
        let twice = |family| ProfileError::TwoAddressesOfAFamily {
            key: address_key.clone(),
            family,
        };
        match s.trim().parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(a)) if v4.replace(a).is_some() => return Err(twice(4)),
            Ok(std::net::IpAddr::V6(a)) if v6.replace(a).is_some() => return Err(twice(6)),
            Ok(_) => {}
            Err(_) => return Err(ProfileError::BadAddress { key, value: s }),
        }
    }
    Ok((v4, v6))
}

/// `flow_label = 0` or `"0x12345"`: a 20-bit IPv6 flow label.
pub(super) fn read_flow_label(key: &str, v: &Value) -> Result<u32, ProfileError> {
    let s = scalar(key, "a flow label (0 to 1048575, or \"0x12345\")", v)?;
    let t = s.trim();
    let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    };
    n.filter(|n| *n <= 0xF_FFFF)
        .ok_or(ProfileError::BadFlowLabel {
            key: key.to_string(),
            value: s,
        })
}

/// `tunnel = { overhead = 60, mtu = 1400, address = ["2001:db8:ff::2"],
/// cipher = "aes128-sha1" }`: a tunnel over the direction (sonde's
/// emulator), its packets encrypted when it names a cipher.
pub(super) fn read_tunnel(key: &str, v: &Value) -> Result<Tunnel, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(key, "a table { overhead, mtu, address }", v));
    };
    unknown_key(key, t, &TUNNEL_KEYS, TUNNEL_KNOWN)?;
    let cipher = opt(t, key, "cipher", |k, v| {
        let s = scalar(k, "a cipher suite's name", v)?;
        Suite::from_name(s.trim()).ok_or(ProfileError::BadCipher {
            key: k.to_string(),
            value: s,
            known: Suite::names(),
        })
    })?;
    // With a cipher, ESP counts the outer header itself.
    let given = opt(t, key, "overhead", read_u32)?;
    let Some(overhead) = given.or(cipher.map(|_| 0)) else {
        return Err(ProfileError::MissingKey {
            key: path(key, "overhead"),
            why: "the bytes each packet costs beyond itself (40 for IPv6 in IPv6)",
        });
    };
    if overhead > 1000 {
        return Err(ProfileError::TunnelOverhead {
            key: path(key, "overhead"),
            overhead,
        });
    }
    let mtu = opt(t, key, "mtu", read_u32)?;
    if let Some(mtu) = mtu.filter(|m| *m < crate::emulator::MIN_MTU) {
        return Err(ProfileError::TunnelMtuTooSmall {
            key: path(key, "mtu"),
            mtu,
        });
    }
    let (v4, v6) = read_addresses(key, t)?;
    Ok(Tunnel {
        overhead,
        mtu,
        v4,
        v6,
        cipher,
    })
}
