//! One layer of a protocol stack and the bytes it adds around what it
//! carries. Written out by hand from the RFCs and the tunnels' own
//! documentation: no crate models per-packet encapsulation overhead.

use std::fmt;

/// A block cipher or AEAD as a tunnel uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cipher {
    /// No encryption.
    Null,
    /// DES-CBC (RFC 2405): 8-byte IV and block.
    Des,
    /// 3DES-CBC (RFC 2451): 8-byte IV and block.
    TripleDes,
    /// Blowfish-CBC (OpenVPN's old default): 8-byte IV and block.
    Blowfish,
    /// AES-CBC (RFC 3602): 16-byte IV and block.
    AesCbc,
    /// AES-GCM (RFC 4106 for ESP): 8-byte IV in ESP, 16-byte tag, no block.
    AesGcm,
    /// ChaCha20-Poly1305: as AES-GCM for the bytes it adds.
    ChaCha20Poly1305,
}

impl Cipher {
    fn name(self) -> &'static str {
        match self {
            Cipher::Null => "null",
            Cipher::Des => "des",
            Cipher::TripleDes => "3des",
            Cipher::Blowfish => "bf-cbc",
            Cipher::AesCbc => "aes-cbc",
            Cipher::AesGcm => "aes-gcm",
            Cipher::ChaCha20Poly1305 => "chacha20-poly1305",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "null" | "none" => Cipher::Null,
            "des" | "des-cbc" => Cipher::Des,
            "3des" | "3des-cbc" | "des-ede3-cbc" => Cipher::TripleDes,
            "bf" | "bf-cbc" | "blowfish" => Cipher::Blowfish,
            "aes" | "aes-cbc" | "aes-128-cbc" | "aes-192-cbc" | "aes-256-cbc" => Cipher::AesCbc,
            "aes-gcm" | "aes-128-gcm" | "aes-256-gcm" => Cipher::AesGcm,
            "chacha20-poly1305" => Cipher::ChaCha20Poly1305,
            _ => return None,
        })
    }

    /// Whether it carries its own integrity tag (AEAD).
    pub fn is_aead(self) -> bool {
        matches!(self, Cipher::AesGcm | Cipher::ChaCha20Poly1305)
    }

    /// The block the ciphertext is padded to (1: a stream or AEAD mode).
    fn block(self) -> u32 {
        match self {
            Cipher::Des | Cipher::TripleDes | Cipher::Blowfish => 8,
            Cipher::AesCbc => 16,
            Cipher::Null | Cipher::AesGcm | Cipher::ChaCha20Poly1305 => 1,
        }
    }

    /// The IV carried in each ESP packet.
    fn esp_iv(self) -> u32 {
        match self {
            Cipher::Null => 0,
            Cipher::Des | Cipher::TripleDes | Cipher::Blowfish => 8,
            Cipher::AesCbc => 16,
            // RFC 4106 §3.1 and RFC 7634 §2: an 8-byte explicit IV.
            Cipher::AesGcm | Cipher::ChaCha20Poly1305 => 8,
        }
    }

    /// The AEAD's tag (0 for the others).
    fn tag(self) -> u32 {
        if self.is_aead() {
            16
        } else {
            0
        }
    }
}

/// An integrity check added after the ciphertext.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    None,
    Md5,
    Sha1,
    Sha256,
}

impl Auth {
    fn name(self) -> &'static str {
        match self {
            Auth::None => "none",
            Auth::Md5 => "md5",
            Auth::Sha1 => "sha1",
            Auth::Sha256 => "sha256",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "none" => Auth::None,
            "md5" | "hmac-md5" | "hmac-md5-96" => Auth::Md5,
            "sha1" | "hmac-sha1" | "hmac-sha1-96" => Auth::Sha1,
            "sha256" | "hmac-sha256" | "hmac-sha256-128" => Auth::Sha256,
            _ => return None,
        })
    }

    /// ESP's truncated ICV: HMAC-MD5-96 and -SHA1-96 (RFC 2403, 2404),
    /// HMAC-SHA-256-128 (RFC 4868).
    fn esp_icv(self) -> u32 {
        match self {
            Auth::None => 0,
            Auth::Md5 | Auth::Sha1 => 12,
            Auth::Sha256 => 16,
        }
    }

    /// OpenVPN's full HMAC.
    fn hmac(self) -> u32 {
        match self {
            Auth::None => 0,
            Auth::Md5 => 16,
            Auth::Sha1 => 20,
            Auth::Sha256 => 32,
        }
    }
}

/// ESP's two modes (RFC 4303): tunnel carries a whole inner IP packet,
/// transport only what follows the IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EspMode {
    Tunnel,
    Transport,
}

/// One layer, outermost first in a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// Ethernet on the wire: preamble and start delimiter (8) and the
    /// inter-frame gap (12).
    L1,
    /// Ethernet II: header (14) and FCS (4); frames under 64 bytes are
    /// padded to 64.
    Ethernet,
    /// Ethernet's frame check sequence alone (4): with `l1`, what a frame
    /// counted without its FCS (002 Table 1) takes on the wire.
    Fcs,
    /// The Ethernet header alone (14), as Linux queues (HTB, TBF, a
    /// veth's qdisc) count a frame: no FCS, no preamble.
    Mac,
    /// An 802.1Q tag (4).
    Vlan,
    Ipv4,
    /// IPv6 (40) with `ext` bytes of extension headers.
    Ipv6 {
        ext: u32,
    },
    Udp,
    /// TCP (20), with the timestamp option (12 more, RFC 7323).
    Tcp {
        timestamps: bool,
    },
    /// GRE (RFC 2784, 2890): 4, and 4 each for the key and sequence.
    Gre {
        key: bool,
        seq: bool,
    },
    /// VXLAN (RFC 7348): its header (8) and the inner Ethernet header (14).
    Vxlan,
    /// WireGuard's transport data message: 16-byte header, plaintext
    /// padded to 16, 16-byte Poly1305 tag.
    WireGuard,
    /// OpenVPN's data channel over UDP in tun mode.
    OpenVpn {
        cipher: Cipher,
        auth: Auth,
    },
    /// IPsec ESP (RFC 4303).
    Esp {
        mode: EspMode,
        cipher: Cipher,
        auth: Auth,
    },
    /// A fixed number of bytes per packet (an assumed tunnel).
    Fixed(u32),
}

fn pad_to(len: u32, block: u32) -> u32 {
    len.div_ceil(block.max(1)) * block.max(1)
}

impl Layer {
    /// The bytes of this layer around `inner` bytes it carries.
    pub fn wrap(self, inner: u32) -> u32 {
        match self {
            Layer::L1 => inner + 20,
            Layer::Ethernet => (inner + 18).max(64),
            Layer::Mac => inner + 14,
            Layer::Fcs => inner + 4,
            Layer::Vlan => inner + 4,
            Layer::Ipv4 => inner + 20,
            Layer::Ipv6 { ext } => inner + 40 + ext,
            Layer::Udp => inner + 8,
            Layer::Tcp { timestamps } => inner + 20 + if timestamps { 12 } else { 0 },
            Layer::Gre { key, seq } => inner + 4 + 4 * u32::from(key) + 4 * u32::from(seq),
            Layer::Vxlan => inner + 8 + 14,
            Layer::WireGuard => 16 + pad_to(inner, 16) + 16,
            Layer::OpenVpn { cipher, auth } => openvpn(inner, cipher, auth),
            Layer::Esp { cipher, auth, .. } => esp(inner, cipher, auth),
            Layer::Fixed(n) => inner + n,
        }
    }

    /// Whether it is an IP header (what ESP's tunnel mode must carry).
    pub fn is_ip(self) -> bool {
        matches!(self, Layer::Ipv4 | Layer::Ipv6 { .. })
    }

    /// Whether it encapsulates a packet in another (a tunnel or a fixed
    /// tunnel allowance), as opposed to the path's own headers.
    pub fn is_tunnel(self) -> bool {
        matches!(
            self,
            Layer::Gre { .. }
                | Layer::Vxlan
                | Layer::WireGuard
                | Layer::OpenVpn { .. }
                | Layer::Esp { .. }
                | Layer::Fixed(_)
        )
    }
}

/// ESP (RFC 4303 §2): SPI (4) and sequence (4), the IV, the payload
/// padded so that it and the 2-byte trailer (pad length, next header)
/// fill whole cipher blocks, aligned to 4 bytes at least (§2.4), then
/// the ICV (the AEAD's tag, or the HMAC's truncated value).
fn esp(inner: u32, cipher: Cipher, auth: Auth) -> u32 {
    let align = cipher.block().max(4);
    8 + cipher.esp_iv() + pad_to(inner + 2, align) + cipher.tag() + auth.esp_icv()
}

/// OpenVPN's data channel (its "data channel crypto" documentation):
/// - AEAD (2.4+): P_DATA_V2 opcode and peer id (4), packet id (4), tag (16);
/// - CBC: P_DATA_V1 opcode (1), HMAC, IV, then the packet id (4) and the
///   packet encrypted with PKCS#7 padding (always 1 to a block);
/// - no cipher: opcode and peer id (4), packet id (4), HMAC if any.
fn openvpn(inner: u32, cipher: Cipher, auth: Auth) -> u32 {
    match cipher {
        Cipher::AesGcm | Cipher::ChaCha20Poly1305 => 4 + 4 + 16 + inner,
        Cipher::Null => 4 + 4 + auth.hmac() + inner,
        _ => {
            let block = cipher.block();
            1 + auth.hmac() + block + (4 + inner) / block * block + block
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Layer::L1 => f.write_str("l1"),
            Layer::Ethernet => f.write_str("eth"),
            Layer::Mac => f.write_str("mac"),
            Layer::Fcs => f.write_str("fcs"),
            Layer::Vlan => f.write_str("vlan"),
            Layer::Ipv4 => f.write_str("ipv4"),
            Layer::Ipv6 { ext: 0 } => f.write_str("ipv6"),
            Layer::Ipv6 { ext } => write!(f, "ipv6:ext={ext}"),
            Layer::Udp => f.write_str("udp"),
            Layer::Tcp { timestamps: false } => f.write_str("tcp"),
            Layer::Tcp { timestamps: true } => f.write_str("tcp-ts"),
            Layer::Gre { key, seq } => {
                let opts: Vec<&str> = [(key, "key"), (seq, "seq")]
                    .into_iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, n)| n)
                    .collect();
                if opts.is_empty() {
                    f.write_str("gre")
                } else {
                    write!(f, "gre:{}", opts.join(","))
                }
            }
            Layer::Vxlan => f.write_str("vxlan"),
            Layer::WireGuard => f.write_str("wireguard"),
            Layer::OpenVpn { cipher, auth } => suite(f, "openvpn", cipher, auth),
            Layer::Esp { mode, cipher, auth } => {
                let name = match mode {
                    EspMode::Tunnel => "esp-tunnel",
                    EspMode::Transport => "esp-transport",
                };
                suite(f, name, cipher, auth)
            }
            Layer::Fixed(n) => write!(f, "tunnel:{n}"),
        }
    }
}

fn suite(f: &mut fmt::Formatter<'_>, name: &str, cipher: Cipher, auth: Auth) -> fmt::Result {
    if auth == Auth::None {
        write!(f, "{name}:{}", cipher.name())
    } else {
        write!(f, "{name}:{}+{}", cipher.name(), auth.name())
    }
}
