//! Seed 000 Table 2 end to end: a short battery on the GEANT-like and the
//! sTESTA-like labs into one archive, each labelled with its path, then
//! `sonde compare path=stesta path=geant`: GEANT's TCP is more than ten
//! times sTESTA's, with the confidence interval printed, as the study
//! found (93 against 7 Mbit/s). Needs root; `SONDE_LAB=skip` skips.

use crate::common;
use common::lab_cli::{example_up, serve_in, KillOnDrop};
use common::{lab_allowed, sonde, stderr};

const A: &str = "2001:2:0:1::1";
const B: &str = "2001:2:0:2::2";

/// Three 5 s TCP tests A to B (1 s of warm-up left out, sTESTA's slow
/// start on 94 ms), 8 s apart: the quick form of the study's battery. A
/// run on sTESTA takes about 10 s (the warm-up, the handshakes at 94 ms),
/// so its runs start up to 4 s late, within the slip of 7.
fn plan(path: &str) -> String {
    format!(
        "name = \"{path}-tcp\"\n[labels]\npath = \"{path}\"\n[schedule]\nrepeat = \"PT8S\"\n\
         max_runs = 3\nslip = \"PT7S\"\n[[endpoint]]\nname = \"A\"\naddress = \"{A}\"\n\
         [[endpoint]]\nname = \"B\"\naddress = \"{B}\"\n[[step]]\nname = \"TCP A to B\"\n\
         test = \"tcp\"\ntime_s = 5\nomit_s = 1\n"
    )
}

#[test]
fn geant_is_more_than_ten_times_faster_than_stesta_with_its_interval() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let dir = common::TempDir::new("lab-compare");
    let (text, v) = common::lab_cli::measured_twice_if_missed(
        "GEANT against sTESTA",
        |attempt| battery_and_compare(&dir, attempt),
        |(_, v)| {
            let row = &v["rows"][0];
            let ratio = row["ratio"].as_f64().unwrap_or(0.0);
            let lo = row["ci95"][0].as_f64().unwrap_or(0.0);
            let p = row["p"].as_f64().unwrap_or(1.0);
            (ratio > 10.0 && lo > 0.0 && p < 0.05)
                .then_some(())
                .ok_or(format!("GEANT / sTESTA = {ratio}, CI from {lo}, p {p}"))
        },
    );
    assert!(text.contains("95 % CI of B − A"), "{text}");
    let row = &v["rows"][0];
    assert_eq!(
        (row["a"]["n"].as_u64(), row["b"]["n"].as_u64()),
        (Some(3), Some(3))
    );
    let ratio = row["ratio"].as_f64().unwrap();
    assert!(ratio > 10.0, "GEANT / sTESTA = {ratio}");
    let (lo, hi) = (
        row["ci95"][0].as_f64().unwrap(),
        row["ci95"][1].as_f64().unwrap(),
    );
    assert!(lo > 0.0 && lo < hi, "{lo} … {hi}");
    assert!(row["p"].as_f64().unwrap() < 0.05);
}

/// The battery on each lab into one archive of `dir`'s, then `sonde
/// compare` of the two: its table and its JSON.
fn battery_and_compare(dir: &common::TempDir, attempt: u32) -> (String, serde_json::Value) {
    let archive = format!(
        "--archive={}",
        dir.join(format!("table2-{attempt}.db")).display()
    );
    for (file, lab) in [
        ("000-geant-stesta/geant-lab.toml", "geant"),
        ("000-geant-stesta/stesta-lab.toml", "stesta"),
    ] {
        let _lab = example_up(file, lab);
        let _server = KillOnDrop(serve_in(lab, "b", B));
        let plan_file = dir.join(format!("{lab}.toml"));
        std::fs::write(&plan_file, plan(lab)).unwrap();
        let out = sonde()
            .args(["lab", "exec", "--lab", lab, "a", "--"])
            .arg(env!("CARGO_BIN_EXE_sonde"))
            .args(["campaign", "run", plan_file.to_str().unwrap(), &archive])
            .output()
            .unwrap();
        assert!(out.status.success(), "{lab}: {}", stderr(&out));
        eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    }
    let compare = |json: bool| {
        let mut cmd = sonde();
        cmd.args([
            "compare",
            &archive,
            "path=stesta",
            "path=geant",
            "--metric",
            "throughput",
        ]);
        if json {
            cmd.args(["--format", "json"]);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    let text = String::from_utf8_lossy(&compare(false)).into_owned();
    eprintln!("{text}");
    let v: serde_json::Value = serde_json::from_slice(&compare(true)).unwrap();
    (text, v)
}
