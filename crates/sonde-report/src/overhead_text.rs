//! `sonde overhead` as text: a stack's bytes per layer at each payload
//! size with its efficiency; several stacks side by side with their size
//! over the first's; a measured overhead with the stacks that fit.

use sonde_model::MethodResult;

/// One payload size through one stack.
#[derive(Debug, Clone, PartialEq)]
pub struct StackRow {
    pub payload: u32,
    /// Each layer's name and bytes, outermost first.
    pub layers: Vec<(String, u32)>,
    pub wire: u32,
}

/// A stack's table: payload, each layer's bytes, wire bytes, efficiency.
pub fn stack_table(stack: &str, rows: &[StackRow]) -> String {
    let mut out = format!("stack {stack} (outermost first)\n");
    let Some(first) = rows.first() else {
        return out;
    };
    let widths: Vec<usize> = first.layers.iter().map(|(n, _)| n.len().max(5)).collect();
    out += &format!("{:>8}", "payload");
    for ((name, _), w) in first.layers.iter().zip(&widths) {
        out += &format!(" {name:>w$}");
    }
    out += &format!(" {:>8} {:>11}\n", "wire", "efficiency");
    for r in rows {
        out += &format!("{:>8}", r.payload);
        for ((_, b), w) in r.layers.iter().zip(&widths) {
            out += &format!(" {b:>w$}");
        }
        let eff = f64::from(r.payload) * 100.0 / f64::from(r.wire.max(1));
        out += &format!(" {:>8} {:>9.2} %\n", r.wire, eff);
    }
    out
}

/// Several stacks: wire bytes at each payload, and each stack's size
/// over the first's (`+8.6 %`).
pub fn stacks_compared(stacks: &[String], payloads: &[u32], wire: &[Vec<u32>]) -> String {
    let mut out = String::new();
    for (i, s) in stacks.iter().enumerate() {
        out += &format!("[{}] {s}\n", i + 1);
    }
    out += &format!("{:>8}", "payload");
    for i in 0..stacks.len() {
        out += &format!(" {:>8}", format!("[{}] B", i + 1));
        if i > 0 {
            out += &format!(" {:>9}", format!("vs [1]"));
        }
    }
    out.push('\n');
    for (row, p) in payloads.iter().enumerate() {
        out += &format!("{p:>8}");
        for (i, w) in wire.iter().enumerate() {
            out += &format!(" {:>8}", w[row]);
            if i > 0 {
                let ratio = f64::from(w[row]) / f64::from(wire[0][row].max(1));
                out += &format!(" {:>+8.1}%", (ratio - 1.0) * 100.0);
            }
        }
        out.push('\n');
    }
    out
}

/// A goodput corrected for a stack (seed 000 Table 2's "corrected"
/// column): what `direction` carried on the wire of `stack`, over the same
/// packets without its tunnels (`untunnelled`).
pub fn corrected_line(
    stack: &str,
    untunnelled: &str,
    payload: u32,
    factor: f64,
    direction: &str,
    goodput_bps: u64,
) -> String {
    format!(
        "corrected for {stack} ({direction}): {:.3} Mbit/s, ×{factor:.4} over {untunnelled} at {payload} B of payload per packet\n",
        goodput_bps as f64 * factor / 1e6
    )
}

/// A measured overhead: each size's goodput, the fit and the stacks that
/// fit it.
pub fn overhead_summary(r: &MethodResult) -> String {
    let Some(f) = &r.overhead else {
        return "no fit: fewer than two sizes measured, or goodput that does not fall with size\n"
            .into();
    };
    let mut out = String::from("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    out += &format!(
        "bottleneck {:.2} Mbit/s counting {:.1} bytes per packet beyond the UDP payload \
         ({:+.1} beyond UDP and IP); the fit is within {:.2} % of every size\n",
        f.capacity_bps / 1e6,
        f.per_packet_bytes,
        f.beyond_ip_bytes,
        f.residual_pct
    );
    if f.fits.is_empty() {
        out += "no known stack within 4 bytes\n";
    } else {
        out += "stacks that fit (bytes per packet beyond the payload, and the difference):\n";
        for s in &f.fits {
            out += &format!(
                "  {:<44} {:>7.1} ({:+.1})\n",
                s.stack, s.bytes, s.delta_bytes
            );
        }
    }
    if r.interrupted {
        out += "(interrupted: the sizes that ran)\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_table_and_a_comparison() {
        let rows = [StackRow {
            payload: 1230,
            layers: vec![("ipv6".into(), 40), ("tcp-ts".into(), 32)],
            wire: 1302,
        }];
        let t = stack_table("ipv6/tcp-ts", &rows);
        let last: Vec<&str> = t.lines().last().unwrap().split_whitespace().collect();
        assert_eq!(last, ["1230", "40", "32", "1302", "94.47", "%"]);
        let c = stacks_compared(
            &["a".into(), "b".into()],
            &[1230],
            &[vec![1302], vec![1414]],
        );
        assert!(c.lines().last().unwrap().ends_with("+8.6%"), "{c}");
    }
}
