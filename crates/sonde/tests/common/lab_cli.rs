//! Labs built with the `sonde lab` command line, and sonde run inside them.

use super::{sonde, stderr};
use std::process::{Child, Stdio};
use std::time::Duration;

/// Writes a topology named `name` to a temporary file.
pub fn write_topology(name: &str, body: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sonde-labcmd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("name = \"{name}\"\n{body}")).unwrap();
    path
}

pub fn lab(args: &[&str]) -> std::process::Output {
    sonde().arg("lab").args(args).output().unwrap()
}

pub struct Down(pub &'static str);

/// Brings up `examples/lab/FILE`, whose lab is `name`; removed when the
/// returned guard drops.
#[allow(dead_code)]
pub fn example_up(file: &str, name: &'static str) -> Down {
    let path = format!("{}/../../examples/lab/{file}", env!("CARGO_MANIFEST_DIR"));
    let down = Down(name);
    let up = lab(&["up", &path]);
    assert!(up.status.success(), "{}", stderr(&up));
    down
}
impl Drop for Down {
    fn drop(&mut self) {
        let _ = lab(&["down", self.0]);
    }
}

/// `sonde serve` on `addr` port 5201 in `node`, returned once it listens
/// (or after 10 s, when the test's client will say what is wrong).
pub fn serve_in(labname: &str, node: &str, addr: &str) -> Child {
    let child = sonde()
        .args(["lab", "exec", "--lab", labname, node, "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["serve", "--bind", addr, "-p", "5201"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ns = format!("sonde-lab-{labname}-{node}");
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < end {
        let listening = std::process::Command::new("ip")
            .args(["netns", "exec", &ns, "ss", "-Hltn", "sport = :5201"])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty());
        if listening {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

pub fn udp_in(labname: &str, node: &str, host: &str, args: &[&str]) -> serde_json::Value {
    let out = sonde()
        .args(["lab", "exec", "--lab", labname, node, "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["udp", host, "-J"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A process killed when the test lets go of it, also when it panics.
pub struct KillOnDrop(pub Child);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `sonde udp HOST -J ARGS` in a node without waiting for it.
pub fn udp_spawn(labname: &str, node: &str, host: &str, args: &[&str]) -> Child {
    sonde()
        .args(["lab", "exec", "--lab", labname, node, "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["udp", host, "-J"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The JSON result of a run started with [`udp_spawn`].
pub fn json_of(child: Child) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Brings up a lab from `body` (named `name`); it is removed on drop.
pub fn lab_up(name: &'static str, body: &str) -> Down {
    let file = write_topology(name, body);
    let down = Down(name);
    let up = lab(&["up", file.to_str().unwrap()]);
    assert!(up.status.success(), "{}", stderr(&up));
    down
}

/// A field of a JSON result as f64.
pub fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The median RTT of the system's `ping` (iputils) from `node` to
/// `target`: 20 echoes, 50 ms apart, each reply's `time=` read. The
/// median, not the mean: on a shared 2-core machine one late wake-up of
/// either end (or of the emulator) moves a mean of 20 by tenths of a
/// millisecond, which is the tolerance these checks hold the path to.
/// One echo of the 20 may go missing (CI once lost the first, right
/// after `lab set` restarted the emulator): this measures the path's
/// RTT, and the tests of loss are elsewhere.
pub fn system_ping_median_ms(labname: &str, node: &str, target: &str) -> f64 {
    let o = lab(&[
        "exec", "--lab", labname, node, "--", "ping", "-c", "20", "-i", "0.05", target,
    ]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "ping {target}: {text}");
    let mut times: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(times.len() >= 19, "ping {target}: {text}");
    times.sort_by(f64::total_cmp);
    let mid = times.len() / 2;
    if times.len().is_multiple_of(2) {
        (times[mid - 1] + times[mid]) / 2.0
    } else {
        times[mid]
    }
}

/// The `remarks` of a direction or stream: absent when every packet kept
/// its DSCP, which is known only when arrival DSCPs were counted.
pub fn remarks(d: &serde_json::Value) -> &[serde_json::Value] {
    match d.get("remarks") {
        Some(r) => r
            .as_array()
            .unwrap_or_else(|| panic!("remarks not a list: {d}")),
        None => {
            assert!(
                d["dscp_received"].is_object(),
                "no remarks and no dscp_received: {d}"
            );
            &[]
        }
    }
}

/// Packets of a direction sent with DSCP `from` that arrived with `to`.
pub fn remarked(d: &serde_json::Value, from: u64, to: u64) -> f64 {
    remarks(d)
        .iter()
        .filter(|m| m["sent"] == from && m["received"] == to)
        .map(|m| num(&m["packets"]))
        .sum()
}

/// Runs `sonde ARGS -J` in `node` of `labname`, a method: its document,
/// checked against docs/schema/method-v1.schema.json.
#[allow(dead_code)]
pub fn method_in(labname: &str, node: &str, args: &[&str]) -> serde_json::Value {
    let out = sonde()
        .args(["lab", "exec", "--lab", labname, node, "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(args)
        .arg("-J")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    super::schema::assert_method_v1(&doc);
    doc
}

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held by a test that measures a lab path: such tests of one binary run
/// one at a time, since two busy labs on two cores blur the
/// sub-millisecond and zero-loss checks they hold the paths to.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}
