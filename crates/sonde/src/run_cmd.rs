//! `sonde run FILE`: any test written as a spec, in TOML or JSON — the
//! same spelling a campaign line and an HTTP body use (see
//! docs/result-format.md and `TestSpec`). `-` reads standard input. A
//! file with a `method` key is a method's spec: `{"method": "repeat",
//! "test": {…}, "step": {…}}` runs the test as the repeat method,
//! `"method": "ndr"` an NDR search, `"method": "sweep"` a sweep.

use crate::cli::Failure;
use crate::output::Output;
use crate::run_args::JsonFormat;
use anyhow::anyhow;
use clap::Args;
use sonde_model::{MethodSpec, TestSpec};
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct RunSpecArgs {
    /// The spec: a TOML or JSON file (`test = "tcp"`, `host = "…"`, …);
    /// `-` for standard input.
    pub file: PathBuf,
    /// Print one JSON document: sonde's, or with `--json=iperf3` iperf3's layout.
    #[arg(short = 'J', long, num_args = 0..=1, require_equals = true, default_missing_value = "sonde", value_name = "FORMAT")]
    pub json: Option<JsonFormat>,
    #[command(flatten)]
    pub archive: crate::archive_args::ArchiveArgs,
}

/// The spec in `text`: JSON when it starts with `{`, TOML otherwise.
pub fn parse_spec(text: &str) -> Result<TestSpec, String> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|e| e.to_string());
    }
    toml::from_str(text).map_err(|e| toml_error(text, &e))
}

/// A TOML error that says where. A tagged spec is read through a buffer
/// that forgets positions, so the test's own spec is read again, with
/// its `test = …` line blanked (lines keep their numbers), to find the
/// line and column of the mistake.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let one_line = |e: &toml::de::Error| e.to_string().trim_end().replace('\n', " ");
    let is_test_line = |l: &str| {
        l.trim_start()
            .strip_prefix("test")
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let Some(kind) = text.lines().find(|l| is_test_line(l)) else {
        return one_line(e);
    };
    let blanked: String = text
        .lines()
        .map(|l| if is_test_line(l) { "" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    let kind = kind
        .split('=')
        .nth(1)
        .unwrap_or("")
        .split('#')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches(|c| c == '"' || c == '\'');
    let again = match kind {
        "tcp" => toml::from_str::<sonde_model::TcpSpec>(&blanked).err(),
        "udp" => toml::from_str::<sonde_model::UdpSpec>(&blanked).err(),
        "ping" => toml::from_str::<sonde_model::PingSpec>(&blanked).err(),
        _ => None,
    };
    one_line(again.as_ref().unwrap_or(e))
}

fn read(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut text)?;
    } else {
        text = std::fs::read_to_string(path)?;
    }
    Ok(text)
}

pub fn run(args: RunSpecArgs) -> Result<(), Failure> {
    let output = Output {
        json: args.json,
        archive: args.archive.location(),
        live: args.json.is_none(),
        flags: false,
        ..Output::default()
    };
    let name = args.file.display();
    // A spec that cannot be read is reported like one the runner
    // refuses: as JSON when JSON was asked for.
    let invalid = |e: String| output.fail(None, "invalid", Failure::Usage(anyhow!("{name}: {e}")));
    let text = read(&args.file).map_err(|e| invalid(e.to_string()))?;
    if is_method(&text) {
        let mo = crate::method_output::MethodOut {
            json: output.json.is_some(),
            archive: output.archive.clone(),
        };
        return match parse_method(&text).map_err(invalid)? {
            MethodSpec::Repeat(spec) => crate::repeat_cmd::run_repeat_spec(&spec, output),
            MethodSpec::Ndr(spec) => crate::ndr_cmd::run_ndr_spec(spec, output),
            MethodSpec::Sweep(spec) => crate::sweep_cmd::run_sweep_spec(&spec, mo, None, false),
            MethodSpec::QosCheck(spec) => crate::qos_cmd::run_check_spec(&spec, mo, None),
            MethodSpec::Tune(spec) => crate::tune_cmd::run_tune_spec(&spec, mo),
            MethodSpec::TuneLab(spec) => crate::tune_cmd::run_lab_spec(&spec, mo, None),
            MethodSpec::Overhead(spec) => crate::overhead_cmd::run_measure_spec(&spec, mo),
            MethodSpec::QosScenario(spec) => {
                crate::qos_cmd::run_scenario_spec(&spec, mo, None, None)
            }
        };
    }
    let spec = parse_spec(&text).map_err(invalid)?;
    output.clone().run(&spec)
}

/// Whether `text` is a method's spec: it has a `method` key at the top.
fn is_method(text: &str) -> bool {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|v| v.get("method").is_some());
    }
    text.lines()
        .take_while(|l| !l.trim_start().starts_with('['))
        .any(|l| {
            l.trim_start()
                .strip_prefix("method")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
}

/// A method's spec, JSON or TOML.
pub fn parse_method(text: &str) -> Result<MethodSpec, String> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|e| e.to_string());
    }
    toml::from_str(text).map_err(|e| e.to_string().trim_end().replace('\n', " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_files_spell_the_same_spec() {
        let toml = parse_spec("test = \"udp\"\nhost = \"::1\"\ntime_s = \"5m\"\n").unwrap();
        let json = parse_spec(r#"{"test": "udp", "host": "::1", "time_s": 300}"#).unwrap();
        assert_eq!(toml, json);
    }

    #[test]
    fn a_repeat_method_reads_from_toml_and_json_alike() {
        let toml = "method = \"repeat\"\n[test]\ntest = \"tcp\"\nhost = \"::1\"\n\
                    [step]\nfamilies = [\"v6\", \"v4\"]\n[step.repeat]\nrule = \"times\"\nruns = 3\n";
        assert!(is_method(toml));
        let json = r#"{"method": "repeat", "test": {"test": "tcp", "host": "::1"},
            "step": {"repeat": {"rule": "times", "runs": 3}, "families": ["v6", "v4"]}}"#;
        assert!(is_method(json));
        let (a, b) = (parse_method(toml).unwrap(), parse_method(json).unwrap());
        assert_eq!(a, b);
        assert!(matches!(a, MethodSpec::Repeat(ref r) if r.step.families.len() == 2));
        assert!(!is_method(
            "test = \"tcp\"\nhost = \"::1\"\n[x]\nmethod = 1\n"
        ));
    }

    #[test]
    fn the_ndr_example_is_an_ndr_spec_that_validates() {
        let text = include_str!("../../../examples/specs/ndr.toml");
        assert!(is_method(text));
        let MethodSpec::Ndr(spec) = parse_method(text).unwrap() else {
            panic!("not an ndr spec");
        };
        spec.validate().unwrap();
        assert_eq!(spec.sizes, [128, 512, 1408]);
    }

    #[test]
    fn a_bad_spec_says_where() {
        let e = parse_spec("test = \"tcp\"\nhost = \"::1\"\nparalel = 4\n").unwrap_err();
        assert!(e.contains("paralel") && e.contains("line 3"), "{e}");
        let e =
            parse_spec("test = \"udp\"\nhost = \"::1\"\n\nbitrate_bps = \"fast\"\n").unwrap_err();
        assert!(e.contains("fast") && e.contains("line 4"), "{e}");
        let e = parse_spec("test = 'udp' # a comment\nhost = \"::1\"\nrate = 1\n").unwrap_err();
        assert!(e.contains("rate") && e.contains("line 3"), "{e}");
        let e = parse_spec("test = \"dns\"\nhost = \"::1\"\n").unwrap_err();
        assert!(e.contains("dns"), "{e}");
        let e = parse_spec(r#"{"test": "tcp", "host": 7}"#).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
    }
}
