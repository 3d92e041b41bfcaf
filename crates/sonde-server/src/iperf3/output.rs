//! The server's text output that an iperf3 client asks for with
//! `--get-server-output` (sent as `server_output_text`): the summary
//! lines iperf3's server prints, in its layout and units, from the
//! results the server sends, so the client's and the server's figures
//! agree to the byte.

use sonde_wire::iperf3::Results;
use std::fmt::Write;
use std::net::SocketAddr;

/// iperf3's adaptive units (its `unit_snprintf`): bytes in 1024s
/// (`KBytes`…), bits in 1000s (`Kbits`…), always four places wide.
fn unit(value: f64, bits: bool) -> String {
    let (mut v, base, labels) = if bits {
        (value * 8.0, 1000.0, ["bit", "Kbit", "Mbit", "Gbit", "Tbit"])
    } else {
        (value, 1024.0, ["Byte", "KByte", "MByte", "GByte", "TByte"])
    };
    let mut conv = 0;
    while v >= base && conv < labels.len() - 1 {
        v /= base;
        conv += 1;
    }
    let label = labels[conv];
    if v < 9.995 {
        format!("{v:4.2} {label}")
    } else if v < 99.95 {
        format!("{v:4.1} {label}")
    } else {
        format!("{v:4.0} {label}")
    }
}

/// One summary line's figures.
struct Line {
    id: String,
    secs: f64,
    bytes: u64,
    /// UDP: jitter in seconds, lost and total datagrams.
    udp: Option<(f64, i64, i64)>,
    role: &'static str,
}

fn write_line(out: &mut String, l: &Line) {
    let rate = if l.secs > 0.0 {
        l.bytes as f64 / l.secs
    } else {
        0.0
    };
    let head = format!(
        "[{}] {:6.2}-{:<6.2} sec  {}s  {}s/sec",
        l.id,
        0.0,
        l.secs,
        unit(l.bytes as f64, false),
        unit(rate, true)
    );
    let _ = match l.udp {
        Some((jitter, lost, total)) => {
            let pct = if total > 0 {
                100.0 * lost as f64 / total as f64
            } else {
                0.0
            };
            writeln!(
                out,
                "{head}  {:5.3} ms  {lost}/{total} ({})  {}",
                jitter * 1000.0,
                percent(pct),
                l.role
            )
        }
        None => writeln!(out, "{head}                  {}", l.role),
    };
}

/// A percentage as C's `%.2g%%` writes it for the values loss takes.
fn percent(p: f64) -> String {
    if p == 0.0 {
        "0%".into()
    } else if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        let digits = (-p.log10().floor()) as usize + 1;
        format!("{p:.digits$}%")
    }
}

/// The server's summary of a test with `peer`, from the results it sends
/// (`sending[i]`: the server sent stream `i`); `udp` for a UDP test.
pub(super) fn text(peer: SocketAddr, results: &Results, sending: &[bool], udp: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Accepted connection from {}, port {}",
        peer.ip().to_canonical(),
        peer.port()
    );
    out.push_str("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    out.push_str(if udp {
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
    } else {
        "[ ID] Interval           Transfer     Bitrate\n"
    });
    for (i, s) in results.streams.iter().enumerate() {
        let sender = sending.get(i).copied().unwrap_or(false);
        let udp_figures = udp.then(|| {
            let omitted = s.omitted_packets.unwrap_or(0);
            let lost = s.errors - s.omitted_errors.unwrap_or(0);
            (s.jitter, if sender { 0 } else { lost }, s.packets - omitted)
        });
        write_line(
            &mut out,
            &Line {
                id: format!("{:3}", s.id),
                secs: s.duration().unwrap_or(0.0),
                bytes: s.bytes,
                udp: udp_figures,
                role: if sender { "sender" } else { "receiver" },
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_iperf3s() {
        assert_eq!(unit(3_446_000_000.0, false), "3.21 GByte");
        assert_eq!(unit(1_280_000.0, false), "1.22 MByte");
        assert_eq!(unit(12.4 * 1_048_576.0, false), "12.4 MByte");
        assert_eq!(unit(500.0, false), " 500 Byte");
        assert_eq!(unit(3_446_000_000.0 / 1.0 / 8.0, true), "3.45 Gbit");
        assert_eq!(unit(1_250_000.0, true), "10.0 Mbit");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.26), "0.26%");
        assert_eq!(percent(3.3), "3.3%");
        assert_eq!(percent(25.0), "25%");
    }
}
