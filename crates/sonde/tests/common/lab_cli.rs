//! Labs built with the `sonde lab` command line, and sonde run inside them.

use super::{sonde, stderr};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

/// Writes a topology named `name` to a temporary file (removed when the
/// returned file drops).
pub fn write_topology(name: &str, body: &str) -> super::TempFile {
    super::TempFile::new(
        &format!("{name}.toml"),
        format!("name = \"{name}\"\n{body}"),
    )
}

pub fn lab(args: &[&str]) -> std::process::Output {
    sonde().arg("lab").args(args).output().unwrap()
}

pub struct Down(pub &'static str);

/// Brings up `examples/studies/FILE` (`004-6net-qos/lab.toml`), whose lab is `name`; removed when the
/// returned guard drops.
#[allow(dead_code)]
pub fn example_up(file: &str, name: &'static str) -> Down {
    let path = format!(
        "{}/../../examples/studies/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let down = Down(name);
    let up = lab(&["up", &path]);
    assert!(up.status.success(), "{}", stderr(&up));
    down
}
/// Brings up `examples/studies/FILE` as a lab named `name` (its own name in
/// the file replaced): a test that runs beside others gives its lab a
/// name no other test uses. Removed when the returned guard drops.
pub fn example_up_as(file: &str, name: &'static str) -> Down {
    let path = format!(
        "{}/../../examples/studies/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // The lab's own name is the `name` before the first table; the
    // nodes' names are inside theirs.
    let first_table = text.find("\n[").unwrap_or(text.len());
    let (head, tables) = text.split_at(first_table);
    let head: String = head
        .lines()
        .filter(|l| !l.starts_with("name = "))
        .map(|l| format!("{l}\n"))
        .collect();
    lab_up(name, &format!("{head}{tables}"))
}

impl Drop for Down {
    fn drop(&mut self) {
        let _ = lab(&["down", self.0]);
    }
}

/// `sonde serve` on `addr` port 5201 in `node`, returned once it listens
/// (its STAMP reflector is bound by then too: `sonde serve` binds it
/// first).
pub fn serve_in(labname: &str, node: &str, addr: &str) -> Child {
    let child = sonde()
        .args(["lab", "exec", "--lab", labname, node, "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["serve", "--bind", addr, "-p", "5201"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    listening_in(labname, node, 5201);
    child
}

/// An agent in `node` of `labname`, bound to `addr` port 5202 (no
/// reflector): it runs the campaigns of `dir/campaigns` into `db`, with
/// the configuration `dir/agent.toml`; killed when dropped.
pub fn agent_in(labname: &str, node: &str, addr: &str, dir: &Path, db: &Path) -> KillOnDrop {
    KillOnDrop(
        sonde()
            .args(["lab", "exec", "--lab", labname, node, "--"])
            .arg(env!("CARGO_BIN_EXE_sonde"))
            .args(["serve", "--no-reflector", "--bind", addr, "-p", "5202"])
            .arg("--campaigns")
            .arg(dir.join("campaigns"))
            .arg("--archive")
            .arg(db)
            .arg("--config")
            .arg(dir.join("agent.toml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Waits until something listens on TCP `port` in `node` of `labname`
/// (a server the test started there); panics after 10 s.
pub fn listening_in(labname: &str, node: &str, port: u16) {
    super::ready::wait_listening_in(&format!("sonde-lab-{labname}-{node}"), port);
}

/// Waits until a STAMP reflector at `target` (port 862) answers `node`
/// of `labname`: a reflector's socket is bound before `sonde serve`
/// listens, but it answers once its thread runs.
pub fn stamp_answers_in(labname: &str, node: &str, target: &str) {
    super::ready::wait_until(
        &format!("the STAMP reflector at {target} answering {node}"),
        Duration::from_secs(10),
        || {
            let o = lab(&[
                "exec",
                "--lab",
                labname,
                node,
                "--",
                env!("CARGO_BIN_EXE_sonde"),
                "ping",
                "--proto",
                "udp",
                "-c",
                "1",
                "-W",
                "200ms",
                "-J",
                target,
            ]);
            serde_json::from_slice::<serde_json::Value>(&o.stdout)
                .is_ok_and(|r| r["summary"]["round_trip"]["received_packets"] == 1)
        },
    );
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

/// The packets the `counter`s of an nft listing (`nft list chain …`)
/// counted, summed: the truth a lab test's drop or pass rule keeps.
pub fn nft_counted(listing: &str) -> u64 {
    let counts: Vec<u64> = listing
        .split("counter packets ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(!counts.is_empty(), "no counter in {listing}");
    counts.iter().sum()
}

/// A field of a JSON result as f64.
pub fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The quickest and the median RTT of the system's `ping` (iputils) from
/// `node` to `target`: 20 echoes, 50 ms apart, each reply's `time=`
/// read. Not the mean: on a shared 2-core machine one late wake-up of
/// either end (or of the emulator) moves a mean of 20 by tenths of a
/// millisecond. The emulator never delivers early and a busy machine
/// only adds, so the quickest echo is the path's RTT to within a tenth
/// of a millisecond, loaded or not; the median drifts up under load.
/// One echo of the 20 may go missing (CI once lost the first, right
/// after `lab set` restarted the emulator): this measures the path's
/// RTT, and the tests of loss are elsewhere.
pub fn system_ping_ms(labname: &str, node: &str, target: &str) -> (f64, f64) {
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
    let median = if times.len().is_multiple_of(2) {
        (times[mid - 1] + times[mid]) / 2.0
    } else {
        times[mid]
    };
    (times[0], median)
}

/// The RTT of a path of `expected_ms` measured as `(quickest, median)`:
/// never early (the emulator holds every frame its time), the quickest
/// within 0.3 ms of it, the median within 2 ms (a loaded machine's late
/// wake-ups only add).
pub fn assert_rtt_of(what: &str, (min, median): (f64, f64), expected_ms: f64) {
    assert!(
        min >= expected_ms - 0.1 && min <= expected_ms + 0.3,
        "{what}: quickest RTT {min:.3} ms, the path's is {expected_ms}"
    );
    assert!(
        median >= min && median <= expected_ms + 2.0,
        "{what}: median RTT {median:.3} ms, the path's is {expected_ms}"
    );
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

/// Runs `sonde ARGS` in `node` of `labname`, which must succeed: what it
/// printed.
#[allow(dead_code)]
pub fn sonde_in(labname: &str, node: &str, args: &[&str]) -> String {
    let out = sonde()
        .args(["lab", "exec", "--lab", labname, node, "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a study's plan (`PLAN` under examples/studies/) in its desk form
/// in `node` of `labname`, with `args` (`--archive=…`, `--endpoint …`):
/// what it printed, which is echoed for the record.
#[allow(dead_code)]
pub fn study_plan_in(labname: &str, node: &str, plan: &str, args: &[&str]) -> String {
    let path = format!(
        "{}/../../examples/studies/{plan}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut all = vec!["campaign", "run", path.as_str(), "--quick"];
    all.extend_from_slice(args);
    let text = sonde_in(labname, node, &all);
    eprintln!("{text}");
    text
}

/// Runs `sonde ARGS -J` in `node` of `labname`, a method: its document,
/// checked against docs/schema/method-v1.schema.json.
#[allow(dead_code)]
pub fn method_in(labname: &str, node: &str, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("-J");
    let doc: serde_json::Value = serde_json::from_str(&sonde_in(labname, node, &all)).unwrap();
    super::schema::assert_method_v1(&doc);
    doc
}

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held by a test that measures a lab path: such tests of one binary run
/// one at a time, since two busy labs on two cores blur the
/// sub-millisecond and zero-loss checks they hold the paths to. A lab
/// test whose traffic is light (pings, a few Mbit/s, the control plane:
/// lab_alerts, lab_campaign, lab_mesh) does not take it and runs beside
/// the measuring one; its lab has a name of its own, and its checks allow
/// for the company.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A measurement held against its lab's truth, taken a second time when
/// the first misses it. The lab's links run through a user-space emulator
/// on a shared two-core host: a quiet host measures within a fraction of
/// a percent of the truth, but a host slowed from outside (CI's once:
/// GEANT's TCP at 72 Mbit/s of its 94, then 82, then 91 over 24 s) can
/// take one battery off its line. A fault of sonde's misses twice; what
/// missed the first time is printed. `check` says why a measurement
/// misses; the test then asserts on what is returned, the second
/// measurement when there was one.
pub fn measured_twice_if_missed<T>(
    what: &str,
    mut measure: impl FnMut(u32) -> T,
    check: impl Fn(&T) -> Result<(), String>,
) -> T {
    let first = measure(1);
    match check(&first) {
        Ok(()) => first,
        Err(why) => {
            eprintln!("{what}: the first measurement missed its truth ({why}); measuring again");
            measure(2)
        }
    }
}
