//! sonde and iperf3 measure the same shaped path alike: on a lab link of
//! 50 Mbit/s, against the same iperf3 server, sonde's TCP throughput is
//! iperf3's within 3 %, and UDP loss at twice the rate within 2 pp.
//! Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_allowed;
use common::lab_cli::{lab, lab_up, num, KillOnDrop};
use common::{sonde, stderr};
use std::process::Stdio;

const B: &str = "2001:2:0:2::2";

fn in_a(args: &[&str]) -> serde_json::Value {
    let mut cmd = vec!["exec", "--lab", "li3p", "a", "--"];
    cmd.extend(args);
    let o = lab(&cmd);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn sonde_and_iperf3_agree_on_a_shaped_link() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let _lab = lab_up(
        "li3p",
        // The bottleneck is on the router, not on the sender's own
        // interface, where a full queue would block the sender instead
        // of dropping (iperf3's small socket buffer then hides the loss).
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"r\"\nkind = \"router\"\n[[node]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"r\"\n[[link]]\na = \"r\"\nb = \"b\"\nrate = \"50M\"\n",
    );
    let _server = KillOnDrop(
        sonde()
            .args([
                "lab", "exec", "--lab", "li3p", "b", "--", "iperf3", "-s", "-p", "5201",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    common::lab_cli::listening_in("li3p", "b", 5201);
    let sonde_bin = env!("CARGO_BIN_EXE_sonde");
    let ours = in_a(&[sonde_bin, "tcp", B, "--iperf3", "-t", "5", "-O", "1", "-J"]);
    let theirs = in_a(&["iperf3", "-c", B, "-t", "5", "-O", "1", "-J"]);
    let ours_mbps = num(&ours["summary"]["total"]["throughput_bps"]) / 1e6;
    let theirs_mbps = num(&theirs["end"]["sum_received"]["bits_per_second"]) / 1e6;
    eprintln!("50 Mbit/s link, TCP: sonde {ours_mbps:.2} Mbit/s, iperf3 {theirs_mbps:.2} Mbit/s");
    assert!(
        (ours_mbps - theirs_mbps).abs() <= 0.03 * theirs_mbps,
        "sonde {ours_mbps} vs iperf3 {theirs_mbps}"
    );

    let ours = in_a(&[
        sonde_bin, "udp", B, "--iperf3", "-t", "5", "-b", "100M", "-l", "1400", "-J",
    ]);
    let theirs = in_a(&[
        "iperf3", "-c", B, "-u", "-t", "5", "-b", "100M", "-l", "1400", "-J",
    ]);
    let ours_loss = num(&ours["summary"]["forward"]["loss_pct"]);
    let theirs_loss = num(&theirs["end"]["sum_received"]["lost_percent"]);
    eprintln!(
        "50 Mbit/s link, UDP at 100 Mbit/s: sonde {ours_loss:.2} % lost, iperf3 {theirs_loss:.2} %"
    );
    assert!(
        (ours_loss - theirs_loss).abs() <= 2.0,
        "sonde {ours_loss} % vs iperf3 {theirs_loss} %"
    );
    assert!(
        ours_loss > 40.0,
        "twice the rate loses about half: {ours_loss} %"
    );
}
