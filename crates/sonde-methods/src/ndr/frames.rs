//! Frame and payload sizes: what an Ethernet frame of RFC 2544's sizes
//! carries as a UDP payload over IPv6 or IPv4, the bytes it costs on
//! the line, and the medium's theoretical maximum at that size.

use sonde_model::method::{frame_overhead_bytes, SizeKind, ETHERNET_L1_EXTRA_BYTES};
use sonde_model::udp_spec::UDP_HEADER_LEN;
use sonde_model::IpFamily;

/// One size to search: the frame and the UDP payload it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSize {
    /// Ethernet frame bytes, header and FCS included.
    pub frame_bytes: u32,
    pub payload_bytes: u32,
    /// The size asked, when it was too small to carry sonde's test
    /// header and was raised to the smallest frame that does.
    pub raised_from: Option<u32>,
}

/// The frame of `size` (a frame or a payload size, per `kind`) over
/// `family`. A frame too small for IP, UDP and sonde's 24-byte test
/// header (RFC 2544's 64 bytes: IPv4 needs 70, IPv6 90) is raised to the
/// smallest that carries them, and says so.
pub fn frame_size(size: u32, kind: SizeKind, family: IpFamily) -> FrameSize {
    let overhead = frame_overhead_bytes(family);
    match kind {
        SizeKind::Payload => FrameSize {
            frame_bytes: size + overhead,
            payload_bytes: size,
            raised_from: None,
        },
        SizeKind::Frame => {
            let smallest = overhead + UDP_HEADER_LEN;
            if size < smallest {
                FrameSize {
                    frame_bytes: smallest,
                    payload_bytes: UDP_HEADER_LEN,
                    raised_from: Some(size),
                }
            } else {
                FrameSize {
                    frame_bytes: size,
                    payload_bytes: size - overhead,
                    raised_from: None,
                }
            }
        }
    }
}

/// The share of the line a frame's own bytes take: frame over frame +
/// preamble + inter-frame gap, in percent (seed 002 Table 1).
pub fn efficiency_pct(frame_bytes: u32) -> f64 {
    100.0 * f64::from(frame_bytes) / f64::from(frame_bytes + ETHERNET_L1_EXTRA_BYTES)
}

/// Frames per second a line of `link_bps` carries at most at this size.
pub fn max_pps(link_bps: u64, frame_bytes: u32) -> f64 {
    link_bps as f64 / (8.0 * f64::from(frame_bytes + ETHERNET_L1_EXTRA_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_2544_sizes_over_each_family() {
        let f = frame_size(1518, SizeKind::Frame, IpFamily::V6);
        assert_eq!((f.frame_bytes, f.payload_bytes), (1518, 1452));
        let f = frame_size(1518, SizeKind::Frame, IpFamily::V4);
        assert_eq!((f.frame_bytes, f.payload_bytes), (1518, 1472));
        let f = frame_size(64, SizeKind::Frame, IpFamily::V4);
        assert_eq!(
            (f.frame_bytes, f.payload_bytes, f.raised_from),
            (70, 24, Some(64))
        );
        let f = frame_size(64, SizeKind::Frame, IpFamily::V6);
        assert_eq!((f.frame_bytes, f.raised_from), (90, Some(64)));
        let f = frame_size(1408, SizeKind::Payload, IpFamily::V6);
        assert_eq!(f.frame_bytes, 1474);
    }

    #[test]
    fn gigabit_ethernet_at_64_bytes_is_1_488_095_frames() {
        // The textbook figure: 10^9 / ((64 + 20) × 8).
        assert!((max_pps(1_000_000_000, 64) - 1_488_095.24).abs() < 0.01);
        assert!((efficiency_pct(64) - 76.19).abs() < 0.01);
        assert!((efficiency_pct(1518) - 98.70).abs() < 0.01);
    }
}
