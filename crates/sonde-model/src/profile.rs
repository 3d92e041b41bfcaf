//! Traffic profiles of a UDP stream: when packets leave, how large they
//! are and how they are marked.
//!
//! Written as strings on the command line and in JSON: `cbr`,
//! `onoff:5s/5s`, `poisson`, `voip`, `video` or `video:gop=12,fps=25`.

use crate::schema::leaf_schema;
use crate::Dscp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A DiffServ-aware video stream (seed 004 §5.1): a group of pictures of
/// I, P and B frames at a frame rate, frame sizes in proportion
/// I:P:B = 8:3:1, each frame type marked with its own DSCP (by default
/// AF11 green for I, AF12 yellow for P, AF13 red for B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VideoProfile {
    /// Frames per group of pictures (pattern `IBBPBBPBB…`).
    pub gop: u16,
    pub fps: u16,
}

impl Default for VideoProfile {
    fn default() -> Self {
        Self { gop: 12, fps: 25 }
    }
}

/// The kind of a video frame (`"I"`, `"P"`, `"B"` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum FrameKind {
    I,
    P,
    B,
}

impl FrameKind {
    pub const ALL: [FrameKind; 3] = [FrameKind::I, FrameKind::P, FrameKind::B];

    /// The DSCP frames of this kind are sent with: AF11 (I, green), AF12
    /// (P, yellow), AF13 (B, red), as the DiffServ-aware video of seed
    /// 004 §5.1.
    pub fn dscp(self) -> Dscp {
        let v = match self {
            FrameKind::I => 10,
            FrameKind::P => 12,
            FrameKind::B => 14,
        };
        Dscp::new(v).unwrap_or_default()
    }

    /// The kind whose frames are sent with `dscp`, if any.
    pub fn of_dscp(dscp: Dscp) -> Option<FrameKind> {
        Self::ALL.into_iter().find(|k| k.dscp() == dscp)
    }
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrameKind::I => "I",
            FrameKind::P => "P",
            FrameKind::B => "B",
        })
    }
}

impl VideoProfile {
    /// Frame `n`'s kind: I first, a P every third frame, B between.
    pub fn frame_kind(&self, n: u64) -> FrameKind {
        let k = n % u64::from(self.gop.max(1));
        if k == 0 {
            FrameKind::I
        } else if k.is_multiple_of(3) {
            FrameKind::P
        } else {
            FrameKind::B
        }
    }

    /// Relative size of a frame kind (I:P:B = 8:3:1).
    pub fn weight(kind: FrameKind) -> u64 {
        match kind {
            FrameKind::I => 8,
            FrameKind::P => 3,
            FrameKind::B => 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Constant bit rate: evenly spaced packets of `-l` bytes.
    #[default]
    Cbr,
    /// `on` at the rate, then `off` silent, repeated (mgen's burst test).
    OnOff {
        on: Duration,
        off: Duration,
    },
    /// Exponentially distributed gaps with the rate as mean.
    Poisson,
    /// G.711-like voice: 50 packets/s of 160-byte payload (64 kbit/s).
    Voip,
    Video(VideoProfile),
}

/// VoIP: 160 bytes every 20 ms.
pub const VOIP_PAYLOAD: u32 = 160;
pub const VOIP_INTERVAL: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a profile: use cbr, onoff:ON/OFF (e.g. onoff:5s/5s), poisson, voip, video or video:gop=12,fps=25")]
pub struct ProfileError(pub String);

impl FromStr for Profile {
    type Err = ProfileError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ProfileError(s.to_string());
        let t = s.trim();
        match t {
            "cbr" => return Ok(Profile::Cbr),
            "poisson" => return Ok(Profile::Poisson),
            "voip" => return Ok(Profile::Voip),
            "video" => return Ok(Profile::Video(VideoProfile::default())),
            _ => {}
        }
        if let Some(rest) = t.strip_prefix("onoff:") {
            let (on, off) = rest.split_once('/').ok_or_else(bad)?;
            let on = crate::parse_duration(on).map_err(|_| bad())?;
            let off = crate::parse_duration(off).map_err(|_| bad())?;
            if on.is_zero() {
                return Err(bad());
            }
            return Ok(Profile::OnOff { on, off });
        }
        if let Some(rest) = t.strip_prefix("video:") {
            let mut v = VideoProfile::default();
            for part in rest.split(',') {
                let (k, val) = part.split_once('=').ok_or_else(bad)?;
                let n: u16 = val.trim().parse().map_err(|_| bad())?;
                match k.trim() {
                    "gop" if (1..=300).contains(&n) => v.gop = n,
                    "fps" if (1..=240).contains(&n) => v.fps = n,
                    _ => return Err(bad()),
                }
            }
            return Ok(Profile::Video(v));
        }
        Err(bad())
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Profile::Cbr => write!(f, "cbr"),
            Profile::OnOff { on, off } => write!(
                f,
                "onoff:{}/{}",
                humantime::format_duration(*on),
                humantime::format_duration(*off)
            ),
            Profile::Poisson => write!(f, "poisson"),
            Profile::Voip => write!(f, "voip"),
            Profile::Video(v) => write!(f, "video:gop={},fps={}", v.gop, v.fps),
        }
    }
}

leaf_schema!(Profile, "Profile", {
    "type": "string",
    "pattern": "^(cbr|poisson|voip|onoff:[0-9a-z ]+/[0-9a-z ]+|video:gop=[1-9][0-9]*,fps=[1-9][0-9]*)$",
    "description": "Traffic profile: `cbr`, `onoff:ON/OFF` (e.g. `onoff:5s/5s`), `poisson`, `voip` (160 bytes every 20 ms) or `video:gop=12,fps=25` (I/P/B frames marked AF11/AF12/AF13)."
});

impl Serialize for Profile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Profile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_print_back() {
        for s in [
            "cbr",
            "poisson",
            "voip",
            "onoff:5s/5s",
            "onoff:1s 500ms/2s",
            "video:gop=12,fps=25",
        ] {
            let p: Profile = s.parse().unwrap();
            assert_eq!(p.to_string().parse::<Profile>().unwrap(), p, "{s}");
        }
        assert_eq!(
            "onoff:1s/1s".parse::<Profile>().unwrap(),
            Profile::OnOff {
                on: Duration::from_secs(1),
                off: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn bad_profiles_are_named() {
        for s in [
            "cbrr",
            "onoff:5s",
            "onoff:0s/1s",
            "video:gop=0",
            "video:x=1",
        ] {
            let e = s.parse::<Profile>().unwrap_err().to_string();
            assert!(e.contains(s), "{e}");
        }
    }

    #[test]
    fn a_gop_of_twelve_is_ibbpbbpbbpbb() {
        let v = VideoProfile::default();
        let pattern: String = (0..12)
            .map(|n| match v.frame_kind(n) {
                FrameKind::I => 'I',
                FrameKind::P => 'P',
                FrameKind::B => 'B',
            })
            .collect();
        assert_eq!(pattern, "IBBPBBPBBPBB");
    }
}
