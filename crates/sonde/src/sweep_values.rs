//! The values a sweep steps through, as the flags spell them: a comma
//! list (`64,128,256`) or a range `START:STOP[:STEP]` (`1M:120M:2M`,
//! `1:45`, step 1 when not given), in the unit of the flag (rates "10M",
//! sizes "256K", plain counts).

use sonde_model::{ByteSize, Direction, Rate};
use std::str::FromStr;

/// At most this many values in one flag.
pub const MAX_VALUES: usize = 1000;

/// Values of a flag, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Values<T>(pub Vec<T>);

/// A list or range of `T`, read through `num` (the value as a number)
/// and `make` (back from a number).
fn values<T: FromStr + Copy>(
    s: &str,
    num: fn(T) -> f64,
    make: fn(f64) -> Option<T>,
) -> Result<Values<T>, String>
where
    T::Err: std::fmt::Display,
{
    let one = |p: &str| {
        p.trim()
            .parse::<T>()
            .map_err(|e| format!("'{}': {e}", p.trim()))
    };
    if s.contains(':') {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() > 3 {
            return Err(format!("'{s}': a range is START:STOP or START:STOP:STEP"));
        }
        let start = num(one(parts[0])?);
        let stop = num(one(parts[1])?);
        let step = match parts.get(2) {
            Some(p) => num(one(p)?),
            None => 1.0,
        };
        if step <= 0.0 || stop < start {
            return Err(format!(
                "'{s}': a range needs STOP ≥ START and a STEP above zero"
            ));
        }
        let n = ((stop - start) / step + 1e-9).floor() as usize + 1;
        if n > MAX_VALUES {
            return Err(format!("'{s}': {n} steps, more than {MAX_VALUES}"));
        }
        let v = (0..n)
            .map(|i| make(start + step * i as f64).ok_or_else(|| format!("'{s}': out of range")))
            .collect::<Result<Vec<T>, String>>()?;
        return Ok(Values(v));
    }
    let v = s.split(',').map(one).collect::<Result<Vec<T>, String>>()?;
    if v.len() > MAX_VALUES {
        return Err(format!("more than {MAX_VALUES} values"));
    }
    Ok(Values(v))
}

/// `--rates`: `1M:120M:2M` or `10M,20M,50M` (payload bit/s per stream).
pub fn rates(s: &str) -> Result<Values<Rate>, String> {
    values(
        s,
        |r: Rate| r.bps() as f64,
        |v| Some(Rate::from_bps(v.round() as u64)),
    )
}

/// `--payloads`: `64,128,1400` or `128:1408:128` (bytes).
pub fn payloads(s: &str) -> Result<Values<u32>, String> {
    values(s, f64::from, |v| u32::try_from(v.round() as u64).ok())
}

/// `--streams`: `1:45` or `1,2,4,8`.
pub fn streams(s: &str) -> Result<Values<u16>, String> {
    values(s, f64::from, |v| u16::try_from(v.round() as u64).ok())
}

/// `--windows`: `64K,256K,1M` or `64K:1M:64K` (bytes, binary prefixes).
pub fn windows(s: &str) -> Result<Values<ByteSize>, String> {
    values(
        s,
        |b: ByteSize| b.bytes() as f64,
        |v| Some(ByteSize::from_bytes(v.round() as u64)),
    )
}

/// `tune --windows`: as [`windows`], and `auto` (0) for the hosts' own
/// buffers.
pub fn lab_windows(s: &str) -> Result<Values<ByteSize>, String> {
    let (auto, rest): (Vec<&str>, Vec<&str>) = s
        .split(',')
        .map(str::trim)
        .partition(|v| v.eq_ignore_ascii_case("auto"));
    let mut v = match rest.is_empty() {
        true => Vec::new(),
        false => windows(&rest.join(","))?.0,
    };
    if !auto.is_empty() {
        v.push(ByteSize::from_bytes(0));
    }
    Ok(Values(v))
}

/// `--directions`: forward, reverse, bidir (also `f`, `r`, `b`).
pub fn direction(s: &str) -> Result<Direction, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "forward" | "f" => Ok(Direction::Forward),
        "reverse" | "r" => Ok(Direction::Reverse),
        "bidir" | "b" | "both" => Ok(Direction::Bidir),
        _ => Err(format!(
            "'{s}' is not a direction: use forward, reverse or bidir"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_lists_read_in_their_units() {
        let r = rates("1M:7M:2M").unwrap().0;
        assert_eq!(
            r.iter().map(|r| r.bps()).collect::<Vec<_>>(),
            [1_000_000, 3_000_000, 5_000_000, 7_000_000]
        );
        let r = rates("8.5M:9.5M:0.1M").unwrap().0;
        assert_eq!(r.len(), 11, "the stop is kept despite rounding");
        assert_eq!(streams("1:45").unwrap().0.len(), 45);
        assert_eq!(payloads("64,128, 1400").unwrap().0, [64, 128, 1400]);
        assert_eq!(windows("64K,1M").unwrap().0[1].bytes(), 1 << 20);
        assert!(rates("5M:1M").unwrap_err().contains("STOP"));
        assert!(rates("1M:2M:0").is_err());
        assert!(rates("1M:2M:3M:4M").is_err());
        assert!(rates("x").unwrap_err().contains("'x'"));
        assert!(streams("1:70000").is_err());
        assert!(rates("1:100M:1").unwrap_err().contains("more than"));
        assert_eq!(direction("Reverse"), Ok(Direction::Reverse));
        assert!(direction("up").is_err());
    }

    #[test]
    fn a_lab_matrix_takes_auto_for_the_hosts_own_buffers() {
        let w = |s: &str| -> Vec<u64> {
            lab_windows(s)
                .unwrap()
                .0
                .iter()
                .map(|b| b.bytes())
                .collect()
        };
        assert_eq!(w("64K,auto"), [65536, 0]);
        assert_eq!(w("AUTO"), [0]);
        assert_eq!(w("1M"), [1 << 20]);
        assert!(lab_windows("auto,x").unwrap_err().contains("'x'"));
    }
}
