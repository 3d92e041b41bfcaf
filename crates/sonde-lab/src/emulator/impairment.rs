//! What one direction of an emulated link does to each frame, in order:
//! an MPLS hop (TTL, Time Exceeded), a tunnel's MTU (Packet Too Big),
//! policers and the line (both counting the tunnel's overhead), the
//! line's queue (tail drop or RIO),
//! Gilbert-Elliott loss,
//! duplication, then delay with jitter (or, for a reordered frame, no
//! delay at all).

use super::esp::Esp;
use super::frame;
use super::gilbert::{Gilbert, GilbertState};
use super::line_queue::{LineQueue, Rio};
use super::lsr::{Lsr, LsrFate};
use super::policer::{Bucket, Exceed, Policer, Verdict};
use super::random::{jitter_ns, JitterDist, Rng};
use super::tunnel::{Tunnel, TunnelFate};
use serde::{Deserialize, Serialize};

/// One direction's settings, as `sonde lab up` hands them to the emulator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Impairment {
    pub delay_ns: u64,
    /// Half-width (uniform) or standard deviation (normal, pareto-normal).
    /// Frames leave in release order, so jitter larger than the gap
    /// between frames reorders them, as on a path with parallel queues.
    pub jitter_ns: u64,
    pub dist: JitterDist,
    pub gilbert: Option<Gilbert>,
    /// Probability that a frame is sent twice.
    pub duplicate: f64,
    /// Probability that a frame skips the delay and so overtakes those
    /// held before it.
    pub reorder: f64,
    /// The first policer whose DSCP matches a packet polices it.
    pub policers: Vec<Policer>,
    /// Line rate (0: none): each frame takes its length / rate to cross,
    /// after the frames before it, so RTT grows with packet size.
    pub line_rate_bps: u64,
    /// Most packets queued for the line, the one crossing it included
    /// (0: no limit).
    pub line_queue: u32,
    /// RED with In and Out on the line's queue.
    pub rio: Option<Rio>,
    /// An MPLS hop at the start of the direction.
    pub mpls: Option<Lsr>,
    /// A tunnel over the direction: bytes on the wire, an MTU.
    pub tunnel: Option<Tunnel>,
}

impl std::fmt::Display for Impairment {
    /// One line, as `sonde lab show` prints it: "delay 10 ms, jitter 1 ms
    /// (normal), loss Gilbert-Elliott p 1 % r 25 % (mean 3.85 %), …".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |p: f64| format!("{} %", p * 100.0);
        let ms = |ns: u64| format!("{} ms", ns as f64 / 1e6);
        let mut parts = Vec::new();
        if let Some(lsr) = &self.mpls {
            let labels: Vec<String> = lsr.labels.iter().map(u32::to_string).collect();
            let from: Vec<String> = lsr.addresses().iter().map(ToString::to_string).collect();
            parts.push(format!(
                "MPLS hop, labels {}, answering from {}",
                labels.join(" "),
                if from.is_empty() {
                    "nowhere".to_string()
                } else {
                    from.join(" and ")
                }
            ));
        }
        if let Some(t) = &self.tunnel {
            let from: Vec<String> = t.addresses().iter().map(ToString::to_string).collect();
            let mut what = match t.cipher {
                Some(c) if t.overhead == 0 => format!("ESP tunnel {c}"),
                Some(c) => format!("ESP tunnel {c} and {} bytes a packet", t.overhead),
                None => format!("tunnel, {} bytes a packet", t.overhead),
            };
            if let Some(mtu) = t.mtu {
                what += &format!(
                    ", MTU {mtu}, too big answered from {}",
                    if from.is_empty() {
                        "nowhere".to_string()
                    } else {
                        from.join(" and ")
                    }
                );
            }
            parts.push(what);
        }
        if self.delay_ns > 0 {
            parts.push(format!("delay {}", ms(self.delay_ns)));
        }
        if self.jitter_ns > 0 {
            let dist = serde_json::to_string(&self.dist).unwrap_or_default();
            parts.push(format!(
                "jitter {} ({})",
                ms(self.jitter_ns),
                dist.trim_matches('"')
            ));
        }
        if let Some(g) = self.gilbert.filter(|g| g.p == 0.0) {
            parts.push(format!("loss {}", pct(g.loss_good)));
        } else if let Some(g) = &self.gilbert {
            parts.push(format!(
                "loss Gilbert-Elliott p {} r {} good {} bad {} (mean {:.3} %)",
                pct(g.p),
                pct(g.r),
                pct(g.loss_good),
                pct(g.loss_bad),
                g.mean_loss() * 100.0
            ));
        }
        if self.duplicate > 0.0 {
            parts.push(format!("duplicate {}", pct(self.duplicate)));
        }
        if self.reorder > 0.0 {
            parts.push(format!("reorder {}", pct(self.reorder)));
        }
        if self.line_rate_bps > 0 {
            parts.push(format!("line rate {} bit/s", self.line_rate_bps));
        }
        if self.line_queue > 0 {
            parts.push(format!("line queue {} packets", self.line_queue));
        }
        if let Some(r) = &self.rio {
            let t =
                |c: &super::line_queue::RedThresholds| format!("{}-{} p {}", c.min, c.max, c.max_p);
            parts.push(format!(
                "RIO green {} yellow {} red {} weight {}",
                t(&r.green),
                t(&r.yellow),
                t(&r.red),
                r.weight
            ));
        }
        for p in &self.policers {
            let mut what = String::from("policer");
            if let Some(d) = p.dscp {
                what.push_str(&format!(" DSCP {d}"));
            }
            if let Some(proto) = p.protocol {
                what.push_str(&format!(" protocol {proto}"));
            }
            what.push_str(&format!(
                " {} bit/s burst {} B, excess {}",
                p.rate_bps,
                p.burst,
                match p.exceed {
                    Exceed::Drop => "dropped".to_string(),
                    Exceed::Remark(d) => format!("remarked to DSCP {d}"),
                }
            ));
            if let Some(keep) = p.punish {
                what.push_str(&format!(", punishing: {} passes above the rate", pct(keep)));
            }
            parts.push(what);
        }
        if parts.is_empty() {
            parts.push("passes every frame at once".into());
        }
        f.write_str(&parts.join(", "))
    }
}

/// What becomes of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Dropped,
    /// Expired at the MPLS hop: [`Direction::answer`] goes back.
    Answered,
    /// Leaves `delay_ns` after it arrived, `copies` times (1 or 2).
    Forward {
        delay_ns: u64,
        copies: u8,
    },
}

/// One direction of the emulator at work.
#[derive(Debug)]
pub struct Direction {
    imp: Impairment,
    rng: Rng,
    gilbert: Option<GilbertState>,
    buckets: Vec<Bucket>,
    /// When the line is free again (ns, the `now_ns` scale).
    line_free_ns: u64,
    /// The line's queue, when it is bounded or runs RIO.
    queue: Option<LineQueue>,
    /// The tunnel's ESP, when it names a cipher.
    esp: Option<Esp>,
    /// The MPLS hop's last answer.
    answer: Vec<u8>,
}

impl Direction {
    pub fn new(imp: Impairment, seed: u64) -> Self {
        Self {
            rng: Rng::new(seed),
            gilbert: imp.gilbert.map(GilbertState::new),
            buckets: imp.policers.iter().copied().map(Bucket::new).collect(),
            line_free_ns: 0,
            queue: (imp.line_rate_bps > 0 && (imp.line_queue > 0 || imp.rio.is_some()))
                .then(|| LineQueue::new(imp.line_queue, imp.rio, imp.line_rate_bps)),
            answer: Vec::new(),
            esp: imp
                .tunnel
                .as_ref()
                .and_then(|t| t.cipher)
                .map(|c| Esp::new(c, seed)),
            imp,
        }
    }

    /// Decides the fate of `frame`, arriving `now_ns` after the start;
    /// a remarking policer rewrites its DSCP in place.
    pub fn process(&mut self, frame: &mut [u8], now_ns: u64) -> Fate {
        if let Some(lsr) = &self.imp.mpls {
            match lsr.hop(frame, &mut self.answer) {
                LsrFate::Forward => {}
                LsrFate::Answered => return Fate::Answered,
                LsrFate::Dropped => return Fate::Dropped,
            }
        }
        let mut overhead = 0;
        if let Some(t) = &self.imp.tunnel {
            match t.enter(frame, &mut self.answer) {
                TunnelFate::Carried => overhead = t.overhead as usize,
                TunnelFate::Answered => return Fate::Answered,
                TunnelFate::Dropped => return Fate::Dropped,
            }
        }
        // Neighbour discovery and ARP cross too: what is not IP is not
        // encrypted.
        if let (Some(esp), Some((ip, next))) = (&mut self.esp, frame::ip_packet(frame)) {
            match esp.carry(ip, next) {
                Some(added) => overhead += added,
                None => return Fate::Dropped,
            }
        }
        if !self.buckets.is_empty() {
            let (dscp, proto) = (frame::dscp(frame), frame::protocol(frame));
            if let Some(b) = self.buckets.iter_mut().find(|b| b.matches(dscp, proto)) {
                match b.police(frame::ip_len(frame) + overhead, now_ns, &mut self.rng) {
                    Verdict::Pass => {}
                    Verdict::Exceed(Exceed::Drop) => return Fate::Dropped,
                    Verdict::Exceed(Exceed::Remark(to)) => {
                        frame::set_dscp(frame, to);
                    }
                }
            }
        }
        if let Some(g) = &mut self.gilbert {
            if g.lose(&mut self.rng) {
                return Fate::Dropped;
            }
        }
        let dscp = frame::dscp(frame);
        if let Some(q) = &mut self.queue {
            if q.admit(dscp, now_ns, &mut self.rng).is_err() {
                return Fate::Dropped;
            }
        }
        let copies = 1 + u8::from(self.rng.chance(self.imp.duplicate));
        let serialized = self.serialize((frame.len() + overhead) * usize::from(copies), now_ns);
        if let Some(q) = &mut self.queue {
            q.push(dscp, now_ns + serialized);
        }
        if self.rng.chance(self.imp.reorder) {
            return Fate::Forward {
                delay_ns: serialized,
                copies,
            };
        }
        let offset = jitter_ns(self.imp.dist, self.imp.jitter_ns as f64, &mut self.rng);
        let delay_ns = (self.imp.delay_ns as f64 + offset).max(0.0) as u64;
        Fate::Forward {
            delay_ns: serialized + delay_ns,
            copies,
        }
    }

    /// The frame an [`Fate::Answered`] sends back the way it came.
    pub fn answer(&self) -> &[u8] {
        &self.answer
    }

    /// Puts `len` bytes on the line at `now_ns`: how long until their
    /// last bit is across (0 without a line rate).
    fn serialize(&mut self, len: usize, now_ns: u64) -> u64 {
        if self.imp.line_rate_bps == 0 {
            return 0;
        }
        let start = self.line_free_ns.max(now_ns);
        let bits = len as u128 * 8 * 1_000_000_000;
        self.line_free_ns = start + (bits / u128::from(self.imp.line_rate_bps)) as u64;
        self.line_free_ns - now_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(imp: Impairment, n: u64) -> Vec<Fate> {
        let mut d = Direction::new(imp, 9);
        let mut f = vec![0u8; 100];
        (0..n).map(|i| d.process(&mut f, i * 1_000_000)).collect()
    }

    #[test]
    fn settings_read_back_in_words() {
        let imp = Impairment {
            delay_ns: 10_000_000,
            jitter_ns: 1_500_000,
            dist: JitterDist::ParetoNormal,
            reorder: 0.05,
            policers: vec![Policer {
                rate_bps: 7_750_000,
                burst: 9687,
                dscp: Some(46),
                protocol: None,
                exceed: Exceed::Drop,
                punish: None,
            }],
            ..Default::default()
        };
        assert_eq!(
            imp.to_string(),
            "delay 10 ms, jitter 1.5 ms (pareto-normal), reorder 5 %, \
             policer DSCP 46 7750000 bit/s burst 9687 B, excess dropped"
        );
        assert_eq!(
            Impairment::default().to_string(),
            "passes every frame at once"
        );
    }

    #[test]
    fn a_plain_delay_holds_every_frame_as_long() {
        let imp = Impairment {
            delay_ns: 20_000_000,
            ..Default::default()
        };
        assert!(run(imp, 1000).iter().all(|f| *f
            == Fate::Forward {
                delay_ns: 20_000_000,
                copies: 1
            }));
    }

    #[test]
    fn a_tunnel_s_overhead_takes_line_time_and_policer_tokens() {
        // 1 Mbit/s: a 1000-byte frame and 250 bytes of tunnel take 10 ms.
        let tunnel = Some(Tunnel {
            overhead: 250,
            mtu: None,
            v4: None,
            v6: None,
            cipher: None,
        });
        let mut d = Direction::new(
            Impairment {
                line_rate_bps: 1_000_000,
                tunnel: tunnel.clone(),
                ..Default::default()
            },
            3,
        );
        let mut f = vec![0u8; 1000];
        let fwd = Fate::Forward {
            delay_ns: 10_000_000,
            copies: 1,
        };
        assert_eq!(d.process(&mut f, 0), fwd);
        // A policer with a 2500-byte bucket passes two such IPv6 packets
        // (986 + 250 bytes each, 2472), not a third.
        let mut d = Direction::new(
            Impairment {
                policers: vec![Policer {
                    rate_bps: 8_000,
                    burst: 2500,
                    dscp: None,
                    protocol: None,
                    exceed: Exceed::Drop,
                    punish: None,
                }],
                tunnel,
                ..Default::default()
            },
            3,
        );
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        let fates: Vec<bool> = (0..3)
            .map(|_| d.process(&mut f, 0) != Fate::Dropped)
            .collect();
        assert_eq!(fates, [true, true, false]);
    }

    #[test]
    fn a_line_rate_serialises_frames_one_after_another() {
        // 1 Mbit/s: a 1000-byte frame takes 8 ms; two back to back, 16.
        let mut d = Direction::new(
            Impairment {
                line_rate_bps: 1_000_000,
                delay_ns: 1_000_000,
                ..Default::default()
            },
            3,
        );
        let mut f = vec![0u8; 1000];
        let fwd = |delay_ns| Fate::Forward {
            delay_ns,
            copies: 1,
        };
        assert_eq!(d.process(&mut f, 0), fwd(9_000_000));
        assert_eq!(d.process(&mut f, 0), fwd(17_000_000));
        // After the line has gone idle, a small frame waits only for itself.
        let mut small = vec![0u8; 100];
        assert_eq!(d.process(&mut small, 100_000_000), fwd(1_800_000));
    }

    #[test]
    fn duplicates_and_reorders_come_at_their_rates() {
        let imp = Impairment {
            delay_ns: 10_000_000,
            duplicate: 0.02,
            reorder: 0.05,
            ..Default::default()
        };
        let fates = run(imp, 200_000);
        let dup = fates
            .iter()
            .filter(|f| matches!(f, Fate::Forward { copies: 2, .. }))
            .count() as f64
            / 2e5;
        let early = fates
            .iter()
            .filter(|f| matches!(f, Fate::Forward { delay_ns: 0, .. }))
            .count() as f64
            / 2e5;
        assert!((dup - 0.02).abs() < 0.002, "{dup}");
        assert!((early - 0.05).abs() < 0.003, "{early}");
    }

    #[test]
    fn gilbert_loss_drops_at_its_mean_rate() {
        let g = Gilbert {
            p: 0.02,
            r: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let imp = Impairment {
            gilbert: Some(g),
            ..Default::default()
        };
        let lost = run(imp, 300_000)
            .iter()
            .filter(|f| **f == Fate::Dropped)
            .count() as f64
            / 3e5;
        assert!(
            (lost - g.mean_loss()).abs() / g.mean_loss() < 0.05,
            "{lost}"
        );
    }

    #[test]
    fn a_remarking_policer_rewrites_the_excess() {
        // IPv6 EF frames of 1000 bytes, one per ms = 8 Mbit/s, against a
        // 4 Mbit/s policer that remarks the excess to CS1.
        let mut d = Direction::new(
            Impairment {
                policers: vec![Policer {
                    rate_bps: 4_000_000,
                    burst: 2000,
                    dscp: Some(46),
                    protocol: None,
                    exceed: Exceed::Remark(8),
                    punish: None,
                }],
                ..Default::default()
            },
            1,
        );
        let mut remarked = 0;
        for i in 0..10_000u64 {
            let mut f = vec![0u8; 1014];
            f[12] = 0x86;
            f[13] = 0xdd;
            f[14] = 0x6b;
            f[15] = 0x80;
            assert!(matches!(
                d.process(&mut f, i * 1_000_000),
                Fate::Forward { .. }
            ));
            remarked += usize::from(frame::dscp(&f) == Some(8));
        }
        assert!((4_900..=5_100).contains(&remarked), "{remarked}");
    }
}
