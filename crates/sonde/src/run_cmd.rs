//! `sonde run FILE`: any test written as a spec, in TOML or JSON — the
//! same spelling a campaign line and an HTTP body use (see
//! docs/result-format.md and `TestSpec`). `-` reads standard input. A
//! file with a `method` key is a method's spec: `{"method": "repeat",
//! "test": {…}, "step": {…}}` runs the test as the repeat method,
//! `"method": "ndr"` an NDR search, `"method": "sweep"` a sweep.

use crate::failure::Failure;
use crate::output::Output;
use crate::run_args::JsonFormat;
use anyhow::anyhow;
use clap::Args;
use sonde_model::{MethodSpec, Spec};
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
    pub archive: crate::archive_args::KeepArgs,
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
        archive: args.archive.kept(),
        live: args.json.is_none(),
        flags: false,
        ..Output::default()
    };
    let name = args.file.display();
    // A spec that cannot be read is reported like one the runner
    // refuses: as JSON when JSON was asked for.
    let invalid = |e: String| output.fail(None, "invalid", Failure::Usage(anyhow!("{name}: {e}")));
    let text = read(&args.file).map_err(|e| invalid(e.to_string()))?;
    let spec = Spec::parse(&text).map_err(|e| invalid(e.to_string()))?;
    if let Spec::Method(method) = spec {
        let mo = crate::method_output::MethodOut {
            json: output.json.is_some(),
            archive: output.archive.clone(),
        };
        return match method {
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
    let Spec::Test(spec) = spec else {
        unreachable!("a method returned above")
    };
    output.clone().run(&spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_method_reads_from_toml_and_json_alike() {
        let toml = "method = \"repeat\"\n[test]\ntest = \"tcp\"\nhost = \"::1\"\n\
                    [step]\nfamilies = [\"v6\", \"v4\"]\n[step.repeat]\nrule = \"times\"\nruns = 3\n";
        let json = r#"{"method": "repeat", "test": {"test": "tcp", "host": "::1"},
            "step": {"repeat": {"rule": "times", "runs": 3}, "families": ["v6", "v4"]}}"#;
        let (a, b) = (Spec::parse(toml).unwrap(), Spec::parse(json).unwrap());
        assert_eq!(a, b);
        assert!(matches!(a, Spec::Method(MethodSpec::Repeat(ref r)) if r.step.families.len() == 2));
        let e = Spec::parse("test = \"tcp\"\nhost = \"::1\"\n[x]\nmethod = 1\n").unwrap_err();
        assert!(e.to_string().contains('x'), "{e}");
    }

    #[test]
    fn the_ndr_example_is_an_ndr_spec_that_validates() {
        let text = include_str!("../../../examples/specs/ndr.toml");
        let Spec::Method(MethodSpec::Ndr(spec)) = Spec::parse(text).unwrap() else {
            panic!("not an ndr spec");
        };
        spec.validate().unwrap();
        assert_eq!(spec.sizes, [128, 512, 1408]);
    }

    #[test]
    fn a_bad_spec_says_where() {
        let e = |text: &str| Spec::parse(text).unwrap_err().to_string();
        let m = e("test = \"tcp\"\nhost = \"::1\"\nparalel = 4\n");
        assert!(m.contains("paralel") && m.contains("line 3"), "{m}");
        let m = e("test = \"udp\"\nhost = \"::1\"\n\nbitrate_bps = \"fast\"\n");
        assert!(m.contains("fast") && m.contains("line 4"), "{m}");
        let m = e("test = 'udp' # a comment\nhost = \"::1\"\nrate = 1\n");
        assert!(m.contains("rate") && m.contains("line 3"), "{m}");
        let m = e("test = \"dns\"\nhost = \"::1\"\n");
        assert!(m.contains("dns"), "{m}");
        let m = e(r#"{"test": "tcp", "host": 7}"#);
        assert!(m.contains("invalid type") && m.contains("/host"), "{m}");
    }
}
