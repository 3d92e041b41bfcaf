//! The receiver's count of a `video` stream's frames: the packets of
//! each frame that arrived, and at the end which frames decode
//! ([`VideoLayout::decodable`]). Over the whole stream, warm-up included:
//! a frame's references do not care where the measurement starts.

use sonde_model::video::{FrameCount, VideoLayout};

/// Most frames one stream counts (an hour at 240 fps is 864,000).
const MAX_FRAMES: u64 = 1 << 20;

#[derive(Debug)]
pub struct VideoRx {
    layout: VideoLayout,
    /// Packets received of each frame so far.
    got: Vec<u32>,
    /// Frames counted at most: what the test's time holds, so a sender's
    /// sequence numbers cannot make the count grow without bound.
    cap: u64,
    /// Packets the sender says it sent (its end marker).
    sent: Option<u64>,
    /// One past the highest sequence number received.
    next: u64,
}

impl VideoRx {
    /// Counts the frames of `layout` over a stream of `secs` seconds.
    pub fn new(layout: VideoLayout, secs: f64) -> Self {
        let fps = f64::from(layout.profile().fps.max(1));
        let cap = ((secs.max(0.0) + 10.0) * fps).min(MAX_FRAMES as f64) as u64;
        Self {
            layout,
            got: Vec::new(),
            cap,
            sent: None,
            next: 0,
        }
    }

    /// One distinct packet arrived.
    pub fn record(&mut self, seq: u64) {
        let frame = self.layout.frame_of(seq);
        if frame >= self.cap {
            return;
        }
        self.next = self.next.max(seq + 1);
        let i = frame as usize;
        if self.got.len() <= i {
            self.got.resize(i + 1, 0);
        }
        self.got[i] = self.got[i].saturating_add(1);
    }

    /// The sender's end marker: `sent` packets in all.
    pub fn end(&mut self, sent: u64) {
        self.sent = Some(sent);
    }

    /// Frames sent and decodable, by kind.
    pub fn counts(&self) -> Vec<FrameCount> {
        // Without the end marker, what was sent is known up to the last
        // packet received.
        let sent = self.sent.unwrap_or(self.next).max(self.next);
        let frames = self.layout.frames_begun(sent).min(self.cap);
        self.layout.decodable(&self.got, frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::profile::VideoProfile;

    #[test]
    fn a_stream_with_a_hole_counts_the_frames_it_took() {
        let layout = VideoLayout::new(VideoProfile::default(), 2_400_000, 1400);
        let mut rx = VideoRx::new(layout.clone(), 0.96);
        // 24 frames (two groups): 2 × (33 + 3 × 13 + 8 × 5) packets;
        // packet 40 (frame 2, a B) lost, and the end marker says so.
        for seq in (0..224).filter(|&s| s != 40) {
            rx.record(seq);
        }
        rx.end(224);
        let c = rx.counts();
        assert_eq!(c.iter().map(|c| c.sent).sum::<u64>(), 24);
        assert_eq!(c.iter().map(|c| c.decodable).sum::<u64>(), 23);
        // Without the end marker, the same from the packets seen.
        let mut quiet = VideoRx::new(layout, 0.96);
        for seq in 0..224 {
            quiet.record(seq);
        }
        assert_eq!(quiet.counts().iter().map(|c| c.decodable).sum::<u64>(), 24);
    }

    #[test]
    fn a_far_sequence_number_does_not_grow_the_count() {
        let layout = VideoLayout::new(VideoProfile::default(), 2_400_000, 1400);
        let mut rx = VideoRx::new(layout, 1.0);
        rx.record(u64::MAX - 1);
        rx.record(1 << 40);
        assert!(rx.got.is_empty());
        rx.end(u64::MAX);
        // (1 + 10) s at 25 fps: 275 frames at most, none received.
        let c = rx.counts();
        assert_eq!(c.iter().map(|c| c.sent).sum::<u64>(), 275);
        assert_eq!(c.iter().map(|c| c.decodable).sum::<u64>(), 0);
    }
}
