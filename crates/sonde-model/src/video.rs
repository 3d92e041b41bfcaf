//! The `video` profile's frames: how many packets make each frame at a
//! rate and payload size (the sender's schedule and the receiver's count
//! both read it here), and which frames a receiver could decode.
//!
//! A frame is decodable when all its packets arrived and so did the
//! frames it is predicted from (an MPEG-2 open group of pictures): an I
//! frame stands alone, a P frame needs the anchor (I or P) before it in
//! its group, a B frame the anchors on both sides, the one after being
//! the next group's I for the B frames that end a group (a B frame at
//! the very end of the stream, with no anchor sent after it, needs only
//! the one before). The share of frames decodable is the decodable frame
//! rate, an objective stand-in for the viewers' scores of seed 004
//! Table 10 (the "Q" of Ke, Lin and Shieh's EvalVid studies).

use crate::profile::{FrameKind, VideoProfile};
use crate::udp_spec::UDP_HEADER_LEN;
use serde::{Deserialize, Serialize};

/// Where each packet of a video stream belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoLayout {
    profile: VideoProfile,
    /// Packets of a frame of each kind (I, P, B).
    packets: [u32; 3],
    /// Payload bytes of the last packet of a frame of each kind.
    last_len: [u32; 3],
    /// Packets before each frame of the group, and the group's total.
    starts: Vec<u64>,
}

fn index(k: FrameKind) -> usize {
    match k {
        FrameKind::I => 0,
        FrameKind::P => 1,
        FrameKind::B => 2,
    }
}

impl VideoLayout {
    /// The frames of `profile` at `rate_bps` of payload in packets of
    /// `len` bytes: each frame's bytes are the rate's share for one frame
    /// time, weighted by kind over the group of pictures (I:P:B = 8:3:1).
    pub fn new(profile: VideoProfile, rate_bps: u64, len: u32) -> Self {
        let gop = u64::from(profile.gop.max(1));
        let total_weight: u64 = (0..gop)
            .map(|n| VideoProfile::weight(profile.frame_kind(n)))
            .sum();
        let full = u64::from(len.max(1));
        let (mut packets, mut last_len) = ([1u32; 3], [UDP_HEADER_LEN; 3]);
        for kind in FrameKind::ALL {
            // A group's bytes (rate / 8 × gop / fps), the kind's share.
            let bytes =
                u128::from(rate_bps) * u128::from(gop) * u128::from(VideoProfile::weight(kind))
                    / (8 * u128::from(profile.fps.max(1)) * u128::from(total_weight));
            let bytes = u64::try_from(bytes)
                .unwrap_or(u64::MAX)
                .max(u64::from(UDP_HEADER_LEN));
            let n = u32::try_from(bytes.div_ceil(full)).unwrap_or(u32::MAX);
            let rest = bytes - (u64::from(n) - 1) * full;
            packets[index(kind)] = n;
            last_len[index(kind)] = u32::try_from(rest).unwrap_or(len).max(UDP_HEADER_LEN);
        }
        let mut starts = Vec::with_capacity(gop as usize + 1);
        let mut at = 0u64;
        for n in 0..gop {
            starts.push(at);
            at += u64::from(packets[index(profile.frame_kind(n))]);
        }
        starts.push(at);
        Self {
            profile,
            packets,
            last_len,
            starts,
        }
    }

    pub fn profile(&self) -> VideoProfile {
        self.profile
    }

    /// Packets of a frame of `kind`.
    pub fn packets(&self, kind: FrameKind) -> u32 {
        self.packets[index(kind)]
    }

    /// Payload bytes of the last packet of a frame of `kind`.
    pub fn last_len(&self, kind: FrameKind) -> u32 {
        self.last_len[index(kind)]
    }

    fn gop(&self) -> u64 {
        u64::from(self.profile.gop.max(1))
    }

    fn gop_packets(&self) -> u64 {
        self.starts.last().copied().unwrap_or(1).max(1)
    }

    /// The frame packet `seq` (from 0) belongs to.
    pub fn frame_of(&self, seq: u64) -> u64 {
        let (g, r) = (seq / self.gop_packets(), seq % self.gop_packets());
        // The last frame whose first packet is at or before r.
        let within = self.starts.partition_point(|&s| s <= r).saturating_sub(1);
        g * self.gop() + within as u64
    }

    /// Frames with at least one packet among the first `sent` packets.
    pub fn frames_begun(&self, sent: u64) -> u64 {
        if sent == 0 {
            0
        } else {
            self.frame_of(sent - 1) + 1
        }
    }

    pub fn kind(&self, frame: u64) -> FrameKind {
        self.profile.frame_kind(frame)
    }

    /// Frames sent and decodable of each kind (I, P, B), given how many
    /// packets of each frame arrived (`received[n]` for frame n; frames
    /// past its end arrived with none) of the first `frames` sent.
    pub fn decodable(&self, received: &[u32], frames: u64) -> Vec<FrameCount> {
        let complete = |n: u64| {
            received
                .get(usize::try_from(n).unwrap_or(usize::MAX))
                .is_some_and(|&got| got >= self.packets(self.kind(n)))
        };
        let mut counts: Vec<FrameCount> = FrameKind::ALL
            .into_iter()
            .map(|frame| FrameCount {
                frame,
                sent: 0,
                decodable: 0,
            })
            .collect();
        // The last anchor before the frame at hand: its number and
        // whether it decodes (none yet: a stream starts with an I).
        let mut anchor: Option<(u64, bool)> = None;
        // B frames wait for the anchor after them.
        let mut waiting: Vec<bool> = Vec::new();
        let settle = |waiting: &mut Vec<bool>, next_ok: bool, counts: &mut Vec<FrameCount>| {
            for ok in waiting.drain(..) {
                counts[2].decodable += u64::from(ok && next_ok);
            }
        };
        for n in 0..frames {
            let kind = self.kind(n);
            counts[index(kind)].sent += 1;
            let before_ok = anchor.is_some_and(|(_, ok)| ok);
            match kind {
                FrameKind::B => waiting.push(complete(n) && before_ok),
                FrameKind::I | FrameKind::P => {
                    let ok = complete(n) && (kind == FrameKind::I || before_ok);
                    counts[index(kind)].decodable += u64::from(ok);
                    settle(&mut waiting, ok, &mut counts);
                    anchor = Some((n, ok));
                }
            }
        }
        // B frames at the end, with no anchor sent after them.
        settle(&mut waiting, true, &mut counts);
        counts
    }
}

/// Frames of one kind: how many were sent and how many could be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FrameCount {
    pub frame: FrameKind,
    pub sent: u64,
    pub decodable: u64,
}

/// The decodable share of `counts` in percent (`None` when none sent).
pub fn decodable_pct(counts: &[FrameCount]) -> Option<f64> {
    let sent: u64 = counts.iter().map(|c| c.sent).sum();
    let ok: u64 = counts.iter().map(|c| c.decodable).sum();
    (sent > 0).then(|| ok as f64 * 100.0 / sent as f64)
}

/// Adds `more` to `into`, kind by kind.
pub fn add_counts(into: &mut Vec<FrameCount>, more: &[FrameCount]) {
    for m in more {
        match into.iter_mut().find(|c| c.frame == m.frame) {
            Some(c) => {
                c.sent += m.sent;
                c.decodable += m.decodable;
            }
            None => into.push(*m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> VideoLayout {
        // 25 fps, gop 12: 2.4 Mbit/s is 144,000 bytes a group, 5760 per
        // weight: I 46,080 B (33 packets of 1400), P 17,280 (13), B 5760 (5).
        VideoLayout::new(VideoProfile::default(), 2_400_000, 1400)
    }

    #[test]
    fn frames_split_the_rate_by_kind() {
        let l = layout();
        assert_eq!(
            (
                l.packets(FrameKind::I),
                l.packets(FrameKind::P),
                l.packets(FrameKind::B)
            ),
            (33, 13, 5)
        );
        assert_eq!(l.last_len(FrameKind::I), 46_080 - 32 * 1400);
        assert_eq!(l.gop_packets(), 33 + 3 * 13 + 8 * 5);
        // Frame 0 is packets 0..33, frame 1 (B) 33..38, frame 3 (P) 43..56.
        assert_eq!((l.frame_of(0), l.frame_of(32), l.frame_of(33)), (0, 0, 1));
        assert_eq!((l.frame_of(42), l.frame_of(43), l.frame_of(55)), (2, 3, 3));
        assert_eq!(l.frame_of(l.gop_packets()), 12);
        assert_eq!(l.frames_begun(0), 0);
        assert_eq!(l.frames_begun(34), 2);
        assert_eq!(l.frames_begun(2 * l.gop_packets()), 24);
    }

    fn full(l: &VideoLayout, frames: u64) -> Vec<u32> {
        (0..frames).map(|n| l.packets(l.kind(n))).collect()
    }

    fn decodable_of(c: &[FrameCount]) -> [u64; 3] {
        [c[0].decodable, c[1].decodable, c[2].decodable]
    }

    #[test]
    fn every_frame_whole_decodes() {
        let l = layout();
        let c = l.decodable(&full(&l, 24), 24);
        assert_eq!(decodable_of(&c), [2, 6, 16]);
        assert_eq!(decodable_pct(&c), Some(100.0));
    }

    #[test]
    fn a_lost_packet_takes_its_frame_and_the_frames_predicted_from_it() {
        let l = layout();
        // Frame 3 (the group's first P) short of a packet: P3, P6, P9 and
        // every B between I0 and the next I lose their reference, except
        // B1 and B2 (I0 before, P3 after: P3 is lost, so they go too).
        let mut got = full(&l, 24);
        got[3] -= 1;
        let c = l.decodable(&got, 24);
        // Group 1: only I0 decodes. Group 2 whole: I12, P15, P18, P21 and
        // its 8 B (B22, B23 at the end need only P21).
        assert_eq!(decodable_of(&c), [2, 3, 8]);
        // An I frame lost: its group's P and B frames go, and the B frames
        // before it (B10, B11 of the group before).
        let mut got = full(&l, 24);
        got[12] = 0;
        let c = l.decodable(&got, 24);
        assert_eq!(decodable_of(&c), [1, 3, 6]);
        // A B frame lost alone costs only itself.
        let mut got = full(&l, 24);
        got[4] = 1;
        assert_eq!(decodable_of(&l.decodable(&got, 24)), [2, 6, 15]);
    }

    #[test]
    fn frames_past_what_arrived_are_sent_but_not_decodable() {
        let l = layout();
        let c = l.decodable(&full(&l, 12), 24);
        assert_eq!(c.iter().map(|c| c.sent).sum::<u64>(), 24);
        // The second group never came, so B10 and B11 lack their next I.
        assert_eq!(decodable_of(&c), [1, 3, 6]);
        let mut into = c.clone();
        add_counts(&mut into, &c);
        assert_eq!(into[2].sent, 32);
        assert_eq!(decodable_pct(&[]), None);
    }
}
