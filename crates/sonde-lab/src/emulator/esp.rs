//! ESP over a lab tunnel (RFC 4303, tunnel mode): each packet is really
//! encrypted at the tunnel's entrance and really decrypted and checked at
//! its exit, with one of seed 001's IPsec suites (DES, 3DES or AES in CBC
//! mode with HMAC-MD5-96 or HMAC-SHA1-96) or a modern AEAD (AES-GCM,
//! ChaCha20-Poly1305, RFC 4106 and 7634), so that a link costs what the
//! cipher costs: the CPU of both ends (the emulator's, which a link's
//! `cpu` share bounds as a router's would be) and ESP's bytes on the wire.
//! Those bytes are the outer IP header (20 or 40 bytes, of the packet's
//! own family, as between two sites' gateways), an 8-byte ESP header (SPI,
//! sequence number), the IV, the packet padded to the cipher's block with
//! its pad length and next header, and the integrity check value; the
//! tunnel's `overhead` adds anything beyond (8 for UDP encapsulation).
//!
//! The keys are fixed per link and the CBC IVs are a counter: this is a
//! lab's model of IPsec's cost, not a secure channel.

use aes::{Aes128, Aes192, Aes256};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{
    BlockCipher, BlockDecryptMut, BlockEncryptMut, BlockSizeUser, InnerIvInit, KeyInit,
};
use des::{Des, TdesEde3};
use hmac::{Hmac, Mac};
use md5::Md5;
use ring::aead;
use serde::{Deserialize, Serialize};
use sha1::Sha1;

/// A cipher suite, as a lab file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Suite {
    #[serde(rename = "des-md5")]
    DesMd5,
    #[serde(rename = "des-sha1")]
    DesSha1,
    #[serde(rename = "3des-md5")]
    TdesMd5,
    #[serde(rename = "3des-sha1")]
    TdesSha1,
    #[serde(rename = "aes128-sha1")]
    Aes128Sha1,
    #[serde(rename = "aes192-sha1")]
    Aes192Sha1,
    #[serde(rename = "aes256-sha1")]
    Aes256Sha1,
    #[serde(rename = "aes128-gcm")]
    Aes128Gcm,
    #[serde(rename = "aes256-gcm")]
    Aes256Gcm,
    #[serde(rename = "chacha20-poly1305")]
    Chacha20Poly1305,
}

impl Suite {
    pub const ALL: [Suite; 10] = [
        Suite::DesMd5,
        Suite::DesSha1,
        Suite::TdesMd5,
        Suite::TdesSha1,
        Suite::Aes128Sha1,
        Suite::Aes192Sha1,
        Suite::Aes256Sha1,
        Suite::Aes128Gcm,
        Suite::Aes256Gcm,
        Suite::Chacha20Poly1305,
    ];

    /// Its name in a lab file.
    pub fn name(self) -> &'static str {
        match self {
            Suite::DesMd5 => "des-md5",
            Suite::DesSha1 => "des-sha1",
            Suite::TdesMd5 => "3des-md5",
            Suite::TdesSha1 => "3des-sha1",
            Suite::Aes128Sha1 => "aes128-sha1",
            Suite::Aes192Sha1 => "aes192-sha1",
            Suite::Aes256Sha1 => "aes256-sha1",
            Suite::Aes128Gcm => "aes128-gcm",
            Suite::Aes256Gcm => "aes256-gcm",
            Suite::Chacha20Poly1305 => "chacha20-poly1305",
        }
    }

    pub fn from_name(s: &str) -> Option<Suite> {
        Suite::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Every name, for an error message.
    pub fn names() -> String {
        let v: Vec<&str> = Suite::ALL.iter().map(|c| c.name()).collect();
        v.join(", ")
    }
}

impl std::fmt::Display for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A block cipher in CBC mode, keyed.
#[derive(Clone)]
enum Block {
    Des(Des),
    Tdes(TdesEde3),
    Aes128(Aes128),
    Aes192(Aes192),
    Aes256(Aes256),
}

/// HMAC keyed once; each packet starts from a copy.
#[derive(Clone)]
enum Auth {
    Md5(Hmac<Md5>),
    Sha1(Hmac<Sha1>),
}

enum Transform {
    Cbc { block: Block, auth: Auth },
    Aead(aead::LessSafeKey),
}

/// ESP header: SPI and sequence number.
const HEADER: usize = 8;
/// HMAC-96's check value.
const ICV_96: usize = 12;
/// The explicit IV of the AEADs (RFC 4106 §3.1, RFC 7634 §2).
const AEAD_IV: usize = 8;
const SPI: [u8; 4] = [0, 0, 0x10, 0x01];

/// Both ends of one direction's ESP security association.
pub struct Esp {
    transform: Transform,
    /// The AEADs' salt (the nonce's first 4 bytes).
    salt: [u8; 4],
    seq: u32,
    iv: u64,
    wire: Vec<u8>,
}

impl std::fmt::Debug for Esp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Esp").field("seq", &self.seq).finish()
    }
}

fn key<const N: usize>(seed: u64, tag: u8) -> [u8; N] {
    let mut k = [0u8; N];
    let mut x = seed ^ (u64::from(tag) << 56) ^ 0x9e37_79b9_7f4a_7c15;
    for b in &mut k {
        // splitmix64's step: distinct bytes, nothing more is asked of them.
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        *b = (z ^ (z >> 31)) as u8;
    }
    k
}

impl Esp {
    /// A security association for `suite`, its keys made from `seed`.
    pub fn new(suite: Suite, seed: u64) -> Esp {
        let md5 =
            || Auth::Md5(<Hmac<Md5> as Mac>::new_from_slice(&key::<16>(seed, 1)).expect("any key"));
        let sha1 = || {
            Auth::Sha1(<Hmac<Sha1> as Mac>::new_from_slice(&key::<20>(seed, 1)).expect("any key"))
        };
        let cbc = |block, auth| Transform::Cbc { block, auth };
        let aead = |alg: &'static aead::Algorithm| {
            let k = key::<32>(seed, 2);
            let unbound = aead::UnboundKey::new(alg, &k[..alg.key_len()]).expect("key length");
            Transform::Aead(aead::LessSafeKey::new(unbound))
        };
        let transform = match suite {
            Suite::DesMd5 => cbc(Block::Des(Des::new(&key::<8>(seed, 0).into())), md5()),
            Suite::DesSha1 => cbc(Block::Des(Des::new(&key::<8>(seed, 0).into())), sha1()),
            Suite::TdesMd5 => cbc(
                Block::Tdes(TdesEde3::new(&key::<24>(seed, 0).into())),
                md5(),
            ),
            Suite::TdesSha1 => cbc(
                Block::Tdes(TdesEde3::new(&key::<24>(seed, 0).into())),
                sha1(),
            ),
            Suite::Aes128Sha1 => cbc(
                Block::Aes128(Aes128::new(&key::<16>(seed, 0).into())),
                sha1(),
            ),
            Suite::Aes192Sha1 => cbc(
                Block::Aes192(Aes192::new(&key::<24>(seed, 0).into())),
                sha1(),
            ),
            Suite::Aes256Sha1 => cbc(
                Block::Aes256(Aes256::new(&key::<32>(seed, 0).into())),
                sha1(),
            ),
            Suite::Aes128Gcm => aead(&aead::AES_128_GCM),
            Suite::Aes256Gcm => aead(&aead::AES_256_GCM),
            Suite::Chacha20Poly1305 => aead(&aead::CHACHA20_POLY1305),
        };
        Esp {
            transform,
            salt: key::<4>(seed, 3),
            seq: 0,
            iv: 0,
            wire: Vec::with_capacity(2048),
        }
    }

    /// Carries `packet` (an IP packet, `next_header` 4 or 41) through the
    /// tunnel: encrypts it as the entrance does, then decrypts and checks
    /// it as the exit does. The bytes the tunnel added on the wire (the
    /// outer header and ESP's), or `None` when what came out is not what
    /// went in.
    pub fn carry(&mut self, packet: &[u8], next_header: u8) -> Option<usize> {
        self.seq = self.seq.wrapping_add(1);
        self.iv = self.iv.wrapping_add(1);
        let sealed = self.seal(packet, next_header)?;
        let outer = if next_header == 4 { 20 } else { 40 };
        let clear = self.open()?;
        (clear == packet).then(|| outer + sealed - packet.len())
    }

    /// Writes the ESP packet into `wire`; its length.
    fn seal(&mut self, packet: &[u8], next_header: u8) -> Option<usize> {
        let (block, iv_len) = match &self.transform {
            Transform::Cbc { block, .. } => (block.size(), block.size()),
            Transform::Aead(_) => (4, AEAD_IV),
        };
        // The payload, its padding and the two trailer bytes fill whole
        // blocks (RFC 4303 §2.4); padding bytes count 1, 2, 3…
        let pad = (block - (packet.len() + 2) % block) % block;
        let nonce = self.nonce();
        let w = &mut self.wire;
        w.clear();
        w.extend_from_slice(&SPI);
        w.extend_from_slice(&self.seq.to_be_bytes());
        let iv = self.iv.to_be_bytes();
        w.extend((0..iv_len).map(|i| iv[i % 8]));
        let body = w.len();
        w.extend_from_slice(packet);
        w.extend((1..=pad).map(|i| i as u8));
        w.extend([pad as u8, next_header]);
        match &self.transform {
            Transform::Cbc { block, auth } => {
                let (head, rest) = w.split_at_mut(body);
                block.encrypt(&head[HEADER..], rest)?;
                auth.append_icv(w);
            }
            Transform::Aead(k) => {
                let (head, rest) = w.split_at_mut(body);
                let aad = aead::Aad::from(&head[..HEADER]);
                let tag = k.seal_in_place_separate_tag(nonce, aad, rest).ok()?;
                w.extend_from_slice(tag.as_ref());
            }
        }
        Some(w.len())
    }

    /// Checks and decrypts `wire` in place; the packet it carried.
    fn open(&mut self) -> Option<&[u8]> {
        let nonce = self.nonce();
        let w = &mut self.wire;
        let clear = match &self.transform {
            Transform::Cbc { block, auth } => {
                let n = w.len().checked_sub(ICV_96)?;
                let (signed, icv) = w.split_at_mut(n);
                if !auth.verify(signed, icv) {
                    return None;
                }
                let (head, rest) = signed.split_at_mut(HEADER + block.size());
                block.decrypt(&head[HEADER..], rest)?;
                rest
            }
            Transform::Aead(k) => {
                let (head, rest) = w.split_at_mut(HEADER + AEAD_IV);
                let aad = aead::Aad::from(&head[..HEADER]);
                k.open_in_place(nonce, aad, rest).ok()?
            }
        };
        let [.., pad, _next] = *clear else {
            return None;
        };
        let len = clear.len().checked_sub(usize::from(pad) + 2)?;
        Some(&clear[..len])
    }

    fn nonce(&self) -> aead::Nonce {
        let mut n = [0u8; 12];
        n[..4].copy_from_slice(&self.salt);
        n[4..].copy_from_slice(&self.iv.to_be_bytes());
        aead::Nonce::assume_unique_for_key(n)
    }
}

impl Block {
    fn size(&self) -> usize {
        match self {
            Block::Des(_) | Block::Tdes(_) => 8,
            _ => 16,
        }
    }

    fn encrypt(&self, iv: &[u8], buf: &mut [u8]) -> Option<()> {
        match self {
            Block::Des(c) => cbc_encrypt(c, iv, buf),
            Block::Tdes(c) => cbc_encrypt(c, iv, buf),
            Block::Aes128(c) => cbc_encrypt(c, iv, buf),
            Block::Aes192(c) => cbc_encrypt(c, iv, buf),
            Block::Aes256(c) => cbc_encrypt(c, iv, buf),
        }
    }

    fn decrypt(&self, iv: &[u8], buf: &mut [u8]) -> Option<()> {
        match self {
            Block::Des(c) => cbc_decrypt(c, iv, buf),
            Block::Tdes(c) => cbc_decrypt(c, iv, buf),
            Block::Aes128(c) => cbc_decrypt(c, iv, buf),
            Block::Aes192(c) => cbc_decrypt(c, iv, buf),
            Block::Aes256(c) => cbc_decrypt(c, iv, buf),
        }
    }
}

fn cbc_encrypt<C>(c: &C, iv: &[u8], buf: &mut [u8]) -> Option<()>
where
    C: BlockCipher + BlockEncryptMut + BlockSizeUser + Clone,
{
    let e = cbc::Encryptor::<C>::inner_iv_slice_init(c.clone(), iv).ok()?;
    let len = buf.len();
    e.encrypt_padded_mut::<NoPadding>(buf, len).ok().map(drop)
}

fn cbc_decrypt<C>(c: &C, iv: &[u8], buf: &mut [u8]) -> Option<()>
where
    C: BlockCipher + BlockDecryptMut + BlockSizeUser + Clone,
{
    let d = cbc::Decryptor::<C>::inner_iv_slice_init(c.clone(), iv).ok()?;
    d.decrypt_padded_mut::<NoPadding>(buf).ok().map(drop)
}

impl Auth {
    /// Appends HMAC-96 of what `w` holds (no allocation per packet).
    fn append_icv(&self, w: &mut Vec<u8>) {
        match self {
            Auth::Md5(m) => {
                let mut m = m.clone();
                m.update(w);
                w.extend_from_slice(&m.finalize().into_bytes()[..ICV_96]);
            }
            Auth::Sha1(m) => {
                let mut m = m.clone();
                m.update(w);
                w.extend_from_slice(&m.finalize().into_bytes()[..ICV_96]);
            }
        }
    }

    /// HMAC-96: the first 12 bytes, compared in constant time.
    fn verify(&self, data: &[u8], icv: &[u8]) -> bool {
        match self {
            Auth::Md5(m) => {
                let mut m = m.clone();
                m.update(data);
                m.verify_truncated_left(icv).is_ok()
            }
            Auth::Sha1(m) => {
                let mut m = m.clone();
                m.update(data);
                m.verify_truncated_left(icv).is_ok()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn every_suite_carries_every_size_and_adds_esp_s_bytes() {
        for suite in Suite::ALL {
            let mut esp = Esp::new(suite, 7);
            for (len, next, outer) in [
                (20, 4, 20),
                (40, 41, 40),
                (128, 41, 40),
                (1000, 4, 20),
                (1400, 41, 40),
                (1500, 41, 40),
            ] {
                let added = esp.carry(&packet(len), next).expect("carried");
                // Header, IV, padding to the block with its 2 trailer
                // bytes, check value.
                let (block, iv, icv) = match suite {
                    Suite::DesMd5 | Suite::DesSha1 | Suite::TdesMd5 | Suite::TdesSha1 => (8, 8, 12),
                    Suite::Aes128Sha1 | Suite::Aes192Sha1 | Suite::Aes256Sha1 => (16, 16, 12),
                    _ => (4, 8, 16),
                };
                let padded = (len + 2).div_ceil(block) * block;
                assert_eq!(
                    added,
                    outer + 8 + iv + padded - len + icv,
                    "{suite} at {len} bytes"
                );
            }
        }
    }

    #[test]
    fn the_wire_holds_ciphertext_and_a_tampered_packet_fails_its_check() {
        for suite in Suite::ALL {
            let mut esp = Esp::new(suite, 3);
            let p = packet(300);
            let n = esp.seal(&p, 4).unwrap();
            let body = &esp.wire[16..n - 12];
            assert!(
                !body.windows(32).any(|w| w == &p[100..132]),
                "{suite}: the packet's bytes are not on the wire"
            );
            esp.wire[40] ^= 1;
            assert!(esp.open().is_none(), "{suite}: a flipped bit is caught");
        }
    }

    #[test]
    fn suites_read_by_name() {
        for s in Suite::ALL {
            assert_eq!(Suite::from_name(s.name()), Some(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.name()));
        }
        assert_eq!(Suite::from_name("aes"), None);
    }
}
