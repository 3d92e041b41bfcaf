//! Requests per minute, by who makes them (a token's name, or a source
//! prefix): a token bucket per key that holds a minute's worth and fills
//! again at that rate. The map is bounded: over `MAX_KEYS`, the buckets
//! that are full again (their keys quiet for a minute) are forgotten
//! first, and a new key finds no room only while every known one is
//! still busy.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys remembered at most.
const MAX_KEYS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Admits at most `per_minute` requests a minute per key.
#[derive(Debug)]
pub struct PerMinute {
    per_minute: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl PerMinute {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: f64::from(per_minute.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn fill(&self, b: &mut Bucket, now: Instant) {
        let gained = now.duration_since(b.at).as_secs_f64() * self.per_minute / 60.0;
        b.tokens = (b.tokens + gained).min(self.per_minute);
        b.at = now;
    }

    /// Takes one request of `key`'s; `Err` with how long until the next
    /// would be admitted.
    pub fn take(&self, key: &str) -> Result<(), Duration> {
        self.take_at(key, Instant::now())
    }

    fn take_at(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut map = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if !map.contains_key(key) && map.len() >= MAX_KEYS {
            let full = self.per_minute;
            map.retain(|_, b| {
                let gained = now.duration_since(b.at).as_secs_f64() * full / 60.0;
                b.tokens + gained < full
            });
            if map.len() >= MAX_KEYS {
                return Err(Duration::from_secs(1));
            }
        }
        let b = map.entry(key.to_string()).or_insert(Bucket {
            tokens: self.per_minute,
            at: now,
        });
        self.fill(b, now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - b.tokens) * 60.0 / self.per_minute;
            Err(Duration::from_secs_f64(wait.max(0.001)))
        }
    }

    /// Whether `key` has anything left now, without taking it.
    pub fn exhausted(&self, key: &str) -> bool {
        let now = Instant::now();
        let mut map = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        match map.get_mut(key) {
            Some(b) => {
                self.fill(b, now);
                b.tokens < 1.0
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_minute_then_waits_and_others_are_not_held() {
        let r = PerMinute::new(3);
        let t0 = Instant::now();
        for _ in 0..3 {
            r.take_at("a", t0).unwrap();
        }
        let wait = r.take_at("a", t0).unwrap_err();
        assert!(wait > Duration::from_secs(19) && wait <= Duration::from_secs(20));
        r.take_at("b", t0).expect("another key has its own minute");
        r.take_at("a", t0 + Duration::from_secs(20))
            .expect("a third of a minute gives one back");
        assert!(r.take_at("a", t0 + Duration::from_secs(20)).is_err());
    }

    #[test]
    fn the_map_forgets_quiet_keys_and_stays_bounded() {
        let r = PerMinute::new(2);
        let t0 = Instant::now();
        for i in 0..MAX_KEYS {
            r.take_at(&format!("k{i}"), t0).unwrap();
        }
        assert!(
            r.take_at("new", t0).is_err(),
            "no room while every key is busy"
        );
        let later = t0 + Duration::from_secs(61);
        r.take_at("new", later)
            .expect("the quiet keys were forgotten");
        assert_eq!(r.buckets.lock().unwrap().len(), 1);
    }
}
