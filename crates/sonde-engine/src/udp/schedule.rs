//! When each UDP packet leaves, how large it is and how it is marked,
//! for every traffic profile. Pure: times are offsets from the stream's
//! start, so the arithmetic is tested without a clock. The rate's
//! arithmetic is [`crate::pacer::due_ns`], TCP's too; the native sender
//! and iperf3's datagrams both leave on a `Schedule`.

use crate::pacer::due_ns;
use sonde_model::profile::{FrameKind, Profile, VideoProfile, VOIP_INTERVAL, VOIP_PAYLOAD};
use sonde_model::video::VideoLayout;
use sonde_model::{Dscp, Rate};
use std::time::Duration;

/// One packet to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Departure {
    /// Nanoseconds after the stream's start.
    pub at_ns: u64,
    /// Payload bytes.
    pub len: u32,
    /// A DSCP for this packet alone (video frames); `None`: the socket's.
    pub dscp: Option<Dscp>,
}

/// The DSCP of a video frame: [`FrameKind::dscp`].
pub fn frame_dscp(kind: FrameKind) -> Dscp {
    kind.dscp()
}

/// The departures of one stream, in order.
#[derive(Debug, Clone)]
pub struct Schedule {
    profile: Profile,
    /// Payload bits per second; 0: no pacing (every packet is due now).
    rate_bps: u64,
    len: u32,
    /// Packets scheduled so far.
    n: u64,
    /// Poisson: the next departure.
    poisson_ns: f64,
    rng: u64,
    /// Video: packets left in the current frame and where it is.
    video: VideoState,
    /// Video: the packets of each frame.
    layout: Option<VideoLayout>,
}

#[derive(Debug, Clone, Default)]
struct VideoState {
    frame: u64,
    packet: u32,
    packets: u32,
    last_len: u32,
}

impl Schedule {
    pub fn new(profile: Profile, rate: Rate, len: u32, seed: u64) -> Self {
        let (rate_bps, len) = match profile {
            Profile::Voip => (
                u64::from(VOIP_PAYLOAD) * 8 * 1_000_000_000 / VOIP_INTERVAL.as_nanos() as u64,
                VOIP_PAYLOAD,
            ),
            _ => (rate.bps(), len.max(1)),
        };
        Self {
            profile,
            rate_bps,
            len,
            n: 0,
            poisson_ns: 0.0,
            rng: seed | 1,
            video: VideoState::default(),
            layout: None,
        }
    }

    /// Unpaced: the caller sends as fast as it can.
    pub fn unpaced(&self) -> bool {
        self.rate_bps == 0
    }

    /// The gap between the next two departures; `None` when unpaced.
    pub fn next_gap(&self) -> Option<Duration> {
        if self.unpaced() {
            return None;
        }
        let mut probe = self.clone();
        let (a, b) = (probe.next_departure(), probe.next_departure());
        Some(Duration::from_nanos(b.at_ns.saturating_sub(a.at_ns)))
    }

    /// Nanoseconds between packets at the rate (CBR).
    fn gap_ns(&self) -> f64 {
        due_ns(u64::from(self.len), self.rate_bps) as f64
    }

    fn uniform(&mut self) -> f64 {
        // xorshift64*: a fixed seed makes a run repeatable.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn next_departure(&mut self) -> Departure {
        let k = self.n;
        self.n += 1;
        // Packet k leaves when the k packets before it are due.
        let cbr_at = due_ns(k.saturating_mul(u64::from(self.len)), self.rate_bps);
        let (at_ns, len, dscp) = match self.profile {
            Profile::Cbr | Profile::Voip => (cbr_at, self.len, None),
            Profile::OnOff { on, off } => {
                let on_ns = on.as_nanos() as u64;
                let period = on_ns + off.as_nanos() as u64;
                let at = (cbr_at / on_ns.max(1)) * period + cbr_at % on_ns.max(1);
                (at, self.len, None)
            }
            Profile::Poisson => {
                let at = self.poisson_ns as u64;
                let u = self.uniform();
                self.poisson_ns += -u.ln() * self.gap_ns();
                (at, self.len, None)
            }
            Profile::Video(v) => return self.next_video(v),
        };
        Departure { at_ns, len, dscp }
    }

    fn next_video(&mut self, v: VideoProfile) -> Departure {
        let frame_ns = 1e9 / f64::from(v.fps.max(1));
        let (rate_bps, len) = (self.rate_bps, self.len);
        let layout = self
            .layout
            .get_or_insert_with(|| VideoLayout::new(v, rate_bps, len));
        if self.video.packet >= self.video.packets {
            // Start the next frame (its packets: the layout's).
            if self.video.packets > 0 {
                self.video.frame += 1;
            }
            let kind = layout.kind(self.video.frame);
            self.video.packets = layout.packets(kind);
            self.video.last_len = layout.last_len(kind);
            self.video.packet = 0;
        }
        let kind = layout.kind(self.video.frame);
        let i = self.video.packet;
        self.video.packet += 1;
        // Packets of a frame spread evenly over the frame time.
        let at = self.video.frame as f64 * frame_ns
            + f64::from(i) * frame_ns / f64::from(self.video.packets.max(1));
        let len = if self.video.packet == self.video.packets {
            self.video.last_len
        } else {
            self.len
        };
        Departure {
            at_ns: at as u64,
            len,
            dscp: Some(frame_dscp(kind)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_until(s: &mut Schedule, until_ns: u64) -> (u64, Vec<Departure>) {
        let mut total = 0;
        let mut all = Vec::new();
        loop {
            let d = s.next_departure();
            if d.at_ns >= until_ns {
                return (total, all);
            }
            total += u64::from(d.len);
            all.push(d);
        }
    }

    #[test]
    fn cbr_is_evenly_spaced_at_the_rate() {
        let mut s = Schedule::new(Profile::Cbr, Rate::from_bps(1_000_000), 1250, 1);
        let (bytes, d) = bytes_until(&mut s, 1_000_000_000);
        assert_eq!(bytes * 8, 1_000_000);
        assert_eq!(d[1].at_ns - d[0].at_ns, 10_000_000);
        assert_eq!(d[99].at_ns, 990_000_000);
    }

    #[test]
    fn cbr_packet_k_leaves_at_k_gaps() {
        // 1 Mbit/s of 1250-byte packets: packet k at k · 10 ms.
        let mut s = Schedule::new(Profile::Cbr, Rate::from_bps(1_000_000), 1250, 1);
        assert_eq!(s.next_gap(), Some(Duration::from_millis(10)));
        for k in 0..1000 {
            assert_eq!(s.next_departure().at_ns, k * 10_000_000);
        }
        let unpaced = Schedule::new(Profile::Cbr, Rate::from_bps(0), 1250, 1);
        assert_eq!(unpaced.next_gap(), None);
    }

    #[test]
    fn onoff_is_silent_in_the_off_phase() {
        let p = Profile::OnOff {
            on: Duration::from_secs(1),
            off: Duration::from_secs(1),
        };
        let mut s = Schedule::new(p, Rate::from_bps(1_000_000), 1250, 1);
        let (_, d) = bytes_until(&mut s, 4_000_000_000);
        assert!(d.iter().all(|d| (d.at_ns / 1_000_000_000) % 2 == 0));
        assert_eq!(d.len(), 200, "two on-seconds at 100 packets/s");
    }

    #[test]
    fn poisson_keeps_the_mean_rate() {
        let mut s = Schedule::new(Profile::Poisson, Rate::from_bps(8_000_000), 1000, 42);
        let (bytes, d) = bytes_until(&mut s, 10_000_000_000);
        let rate = bytes as f64 * 8.0 / 10.0;
        assert!((rate - 8e6).abs() / 8e6 < 0.02, "{rate}");
        let gaps: Vec<u64> = d.windows(2).map(|w| w[1].at_ns - w[0].at_ns).collect();
        let short = gaps.iter().filter(|&&g| g < 500_000).count() as f64 / gaps.len() as f64;
        // P(gap < mean/2) = 1 - e^-0.5 = 0.39 for exponential gaps.
        assert!((short - 0.393).abs() < 0.03, "{short}");
    }

    #[test]
    fn voip_is_fifty_packets_of_160_bytes() {
        let mut s = Schedule::new(Profile::Voip, Rate::from_bps(1), 1400, 1);
        let (bytes, d) = bytes_until(&mut s, 1_000_000_000);
        assert_eq!(d.len(), 50);
        assert_eq!(bytes, 8000);
    }

    #[test]
    fn video_marks_frames_and_keeps_the_rate() {
        let mut s = Schedule::new(
            Profile::Video(VideoProfile::default()),
            Rate::from_bps(2_000_000),
            1200,
            1,
        );
        let (bytes, d) = bytes_until(&mut s, 4_800_000_000); // 10 GOPs of 12 frames at 25 fps
        let rate = bytes as f64 * 8.0 / 4.8;
        assert!((rate - 2e6).abs() / 2e6 < 0.01, "{rate}");
        let count = |v: u8| {
            d.iter()
                .filter(|d| d.dscp.map(Dscp::value) == Some(v))
                .count()
        };
        assert!(count(10) > 0 && count(12) > 0 && count(14) > 0);
        // I frames carry 8 of the 36 weight units of a GOP: 1 I, 3 P, 8 B.
        let i_bytes: u64 = d
            .iter()
            .filter(|d| d.dscp.map(Dscp::value) == Some(10))
            .map(|d| u64::from(d.len))
            .sum();
        let share = i_bytes as f64 / bytes as f64;
        assert!((share - 8.0 / 25.0).abs() < 0.02, "{share}");
    }

    #[test]
    fn each_video_packet_is_in_the_frame_the_layout_says() {
        let (rate, len) = (650_000, 1316);
        let v = VideoProfile::default();
        let mut s = Schedule::new(Profile::Video(v), Rate::from_bps(rate), len, 1);
        let layout = VideoLayout::new(v, rate, len);
        let frame_ns = 40_000_000;
        for k in 0..2000 {
            let d = s.next_departure();
            let frame = layout.frame_of(k);
            assert_eq!(d.dscp, Some(layout.kind(frame).dscp()), "packet {k}");
            assert!(
                d.at_ns >= frame * frame_ns && d.at_ns < (frame + 1) * frame_ns,
                "packet {k} at {} ns is not in frame {frame}",
                d.at_ns
            );
        }
    }
}
