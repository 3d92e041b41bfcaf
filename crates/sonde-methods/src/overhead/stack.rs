//! A protocol stack written as its layers, outermost first, joined by
//! `/`: `l1/eth/ipv6/udp`, `eth/ipv4/esp-tunnel:aes-cbc+sha1/ipv6/tcp-ts`,
//! `tunnel:56/ipv6/tcp-ts`. What follows the last layer is the payload.

use super::layer::{Auth, Cipher, EspMode, Layer};
use std::fmt;
use std::str::FromStr;

/// A stack that cannot be read: which part, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stack '{stack}': part {index} '{part}': {reason}")]
pub struct StackError {
    pub stack: String,
    /// 1-based, counted from the outermost layer.
    pub index: usize,
    pub part: String,
    pub reason: String,
}

/// The layers of a stack, outermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack(pub Vec<Layer>);

/// The bytes one layer adds around a given payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerBytes {
    pub layer: Layer,
    pub bytes: u32,
}

impl Stack {
    /// Bytes on the wire for `payload` bytes carried by the innermost layer.
    pub fn wire_bytes(&self, payload: u32) -> u32 {
        self.0.iter().rev().fold(payload, |inner, l| l.wrap(inner))
    }

    /// What each layer adds at `payload`, outermost first.
    pub fn breakdown(&self, payload: u32) -> Vec<LayerBytes> {
        let mut inner = payload;
        let mut out: Vec<LayerBytes> = self
            .0
            .iter()
            .rev()
            .map(|&layer| {
                let outer = layer.wrap(inner);
                let bytes = outer - inner;
                inner = outer;
                LayerBytes { layer, bytes }
            })
            .collect();
        out.reverse();
        out
    }

    /// The IP packet a link carries for `payload`: the wire bytes without
    /// the link's own layers (Ethernet, its FCS and preamble, VLAN tags),
    /// what a link's MTU limits.
    pub fn packet_bytes(&self, payload: u32) -> u32 {
        let link = |l: &Layer| {
            matches!(
                l,
                Layer::L1 | Layer::Ethernet | Layer::Fcs | Layer::Mac | Layer::Vlan
            )
        };
        let inner = self.0.iter().position(|l| !link(l)).unwrap_or(self.0.len());
        Stack(self.0[inner..].to_vec()).wire_bytes(payload)
    }

    /// Payload over wire bytes.
    pub fn efficiency(&self, payload: u32) -> f64 {
        f64::from(payload) / f64::from(self.wire_bytes(payload).max(1))
    }

    /// The stack without its tunnels and what they carry outside them:
    /// the innermost layers from the last tunnel inward (the packet as
    /// it would go with no tunnel), e.g. `ipv6/tcp-ts` of
    /// `tunnel:56/tunnel:56/ipv6/tcp-ts`. A stack with no tunnel is itself.
    pub fn untunnelled(&self) -> Stack {
        match self.0.iter().rposition(|l| l.is_tunnel()) {
            Some(i) => Stack(self.0[i + 1..].to_vec()),
            None => self.clone(),
        }
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join("/"))
    }
}

fn layer(part: &str) -> Result<Layer, String> {
    let (name, opt) = match part.split_once(':') {
        Some((n, o)) => (n, Some(o)),
        None => (part, None),
    };
    let no_opt = |l: Layer| match opt {
        None => Ok(l),
        Some(o) => Err(format!("'{name}' takes no option (found ':{o}')")),
    };
    match name {
        "l1" => no_opt(Layer::L1),
        "eth" | "ethernet" => no_opt(Layer::Ethernet),
        "mac" => no_opt(Layer::Mac),
        "fcs" => no_opt(Layer::Fcs),
        "vlan" | "802.1q" | "dot1q" => no_opt(Layer::Vlan),
        "ipv4" | "ip4" | "6in4" => no_opt(Layer::Ipv4),
        "ipv6" | "ip6" => match opt {
            None => Ok(Layer::Ipv6 { ext: 0 }),
            Some(o) => {
                let n = o
                    .strip_prefix("ext=")
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| format!("'ipv6:{o}': the option is ext=BYTES"))?;
                if n % 8 != 0 || n > 2048 {
                    return Err(format!(
                        "ext={n}: extension headers come in multiples of 8 bytes (up to 2048)"
                    ));
                }
                Ok(Layer::Ipv6 { ext: n })
            }
        },
        "udp" => no_opt(Layer::Udp),
        "tcp" => no_opt(Layer::Tcp { timestamps: false }),
        "tcp-ts" => no_opt(Layer::Tcp { timestamps: true }),
        "gre" => {
            let (mut key, mut seq) = (false, false);
            for o in opt.into_iter().flat_map(|o| o.split(',')) {
                match o {
                    "key" => key = true,
                    "seq" => seq = true,
                    other => return Err(format!("'{other}': gre's options are key and seq")),
                }
            }
            Ok(Layer::Gre { key, seq })
        }
        "vxlan" => no_opt(Layer::Vxlan),
        "wireguard" | "wg" => no_opt(Layer::WireGuard),
        "openvpn" | "esp-tunnel" | "esp-transport" => {
            let o = opt.ok_or_else(|| {
                format!("'{name}' needs its cipher and HMAC: {name}:aes-cbc+sha1, {name}:aes-gcm")
            })?;
            let (c, a) = match o.split_once('+') {
                Some((c, a)) => (c, Some(a)),
                None => (o, None),
            };
            let cipher = Cipher::parse(c).ok_or_else(|| {
                format!("'{c}' is not a cipher: use null, des, 3des, bf-cbc, aes-cbc, aes-gcm, chacha20-poly1305")
            })?;
            let auth = match a {
                Some(a) => Auth::parse(a).ok_or_else(|| {
                    format!("'{a}' is not an HMAC: use md5, sha1, sha256 or none")
                })?,
                None => Auth::None,
            };
            if cipher.is_aead() && auth != Auth::None {
                return Err(format!("{c} authenticates itself: leave out '+{}'", a.unwrap_or("")));
            }
            Ok(match name {
                "openvpn" => Layer::OpenVpn { cipher, auth },
                "esp-tunnel" => Layer::Esp {
                    mode: EspMode::Tunnel,
                    cipher,
                    auth,
                },
                _ => Layer::Esp {
                    mode: EspMode::Transport,
                    cipher,
                    auth,
                },
            })
        }
        "tunnel" => {
            let n = opt
                .and_then(|o| o.parse::<u32>().ok())
                .filter(|&n| n <= 1000)
                .ok_or_else(|| "tunnel:BYTES takes the bytes a tunnel adds (0-1000)".to_string())?;
            Ok(Layer::Fixed(n))
        }
        "" => Err("empty (two '/' in a row?)".into()),
        other => Err(format!(
            "'{other}' is not a layer: use l1, eth, mac, fcs, vlan, ipv4, ipv6[:ext=N], udp, tcp, tcp-ts, \
             gre[:key,seq], vxlan, wireguard, openvpn:CIPHER[+HMAC], esp-tunnel:…, \
             esp-transport:…, tunnel:BYTES"
        )),
    }
}

impl FromStr for Stack {
    type Err = StackError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |index: usize, part: &str, reason: String| StackError {
            stack: s.to_string(),
            index,
            part: part.to_string(),
            reason,
        };
        let parts: Vec<&str> = s.trim().split('/').collect();
        let mut layers = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            layers.push(layer(part.trim()).map_err(|r| fail(i + 1, part, r))?);
        }
        // ESP's mode says what it carries.
        for (i, pair) in layers.windows(2).enumerate() {
            if let Layer::Esp { mode, .. } = pair[0] {
                let ok = match mode {
                    EspMode::Tunnel => pair[1].is_ip(),
                    EspMode::Transport => !pair[1].is_ip(),
                };
                if !ok {
                    let why = match mode {
                        EspMode::Tunnel => {
                            "tunnel mode carries an inner IP packet: ipv4 or ipv6 comes next"
                        }
                        EspMode::Transport => {
                            "transport mode carries what follows an IP header, not another one"
                        }
                    };
                    return Err(fail(i + 2, parts[i + 1], why.into()));
                }
            }
        }
        Ok(Stack(layers))
    }
}
