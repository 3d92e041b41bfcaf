//! One test repeated: `--repeat N` or `--until-stddev` on any test.

use super::{Metric, StepPlan, StepStats};
use crate::spec::{bad, SpecError};
use crate::{IpFamily, TestResult, TestSpec};
use serde::{Deserialize, Serialize};

/// A repeated test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepeatSpec {
    pub test: TestSpec,
    #[serde(default)]
    pub step: StepPlan,
}

impl RepeatSpec {
    /// The plan's rules ([`StepPlan::validate`]), and `families` only for
    /// a test that names no family of its own (`-4`/`-6` and
    /// `--families` say two different things). The test's own rules are
    /// the runner's, checked at the first run.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.step.validate_as_step()?;
        if !self.step.families.is_empty() && self.test.family() != IpFamily::Any {
            return Err(bad(
                "step.families",
                "the test already names its family (-4/-6): give one or the other",
            ));
        }
        Ok(())
    }
}

/// The runs of a repeated test read together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RepeatOutcome {
    /// The figure `until_stable` judged and the text leads with.
    pub metric: Metric,
    /// Per family, in the order the families ran: the statistics of the
    /// test's headline figures (`direction` absent), and for a test of
    /// both directions at once (`--bidir`) one more entry per direction,
    /// each direction's figures read on their own.
    pub stats: Vec<StepStats>,
}

impl RepeatOutcome {
    /// The entries of `family` (headline first, then per direction).
    pub fn of_family(&self, family: IpFamily) -> impl Iterator<Item = &StepStats> {
        self.stats.iter().filter(move |s| s.family == family)
    }
}

/// The family a run used: the one its spec named, or for a spec of
/// either (`Any`) the family of the address it reached (the ping
/// target, or the first stream's server address); `Any` if unknown.
pub fn family_used(r: &TestResult) -> IpFamily {
    let of = |ip: std::net::IpAddr| {
        if ip.is_ipv6() {
            IpFamily::V6
        } else {
            IpFamily::V4
        }
    };
    match r.spec.family() {
        IpFamily::Any => r
            .env
            .target
            .or_else(|| r.streams.first().map(|s| s.client_socket.remote.ip()))
            .map_or(IpFamily::Any, of),
        f => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::RepeatRule;
    use crate::UdpSpec;

    fn spec(repeat: RepeatRule, families: Vec<IpFamily>, family: IpFamily) -> RepeatSpec {
        RepeatSpec {
            test: TestSpec::Udp(UdpSpec {
                host: "::1".into(),
                family,
                ..UdpSpec::default()
            }),
            step: StepPlan {
                repeat,
                families,
                ..StepPlan::default()
            },
        }
    }

    #[test]
    fn each_broken_rule_names_its_field() {
        use IpFamily::{Any, V4, V6};
        let until = |stddev_pct, min_runs, max_runs| RepeatRule::UntilStable {
            stddev_pct,
            min_runs,
            max_runs,
        };
        let field = |s: RepeatSpec| s.validate().unwrap_err().field;
        assert!(spec(until(0.5, 30, 200), vec![V6, V4], Any)
            .validate()
            .is_ok());
        assert!(spec(until(0.5, 2, 2), vec![], V4).validate().is_ok());
        assert_eq!(
            field(spec(until(0.5, 31, 30), vec![], Any)),
            "step.repeat.min_runs"
        );
        assert_eq!(
            field(spec(until(0.5, 1, 30), vec![], Any)),
            "step.repeat.min_runs"
        );
        assert_eq!(
            field(spec(until(0.0, 2, 30), vec![], Any)),
            "step.repeat.stddev_pct"
        );
        assert_eq!(
            field(spec(until(f64::NAN, 2, 30), vec![], Any)),
            "step.repeat.stddev_pct"
        );
        assert_eq!(
            field(spec(RepeatRule::Times { runs: 0 }, vec![], Any)),
            "step.repeat.runs"
        );
        assert_eq!(
            field(spec(RepeatRule::Once, vec![V4, V4], Any)),
            "step.families"
        );
        assert_eq!(
            field(spec(RepeatRule::Once, vec![Any], Any)),
            "step.families"
        );
        assert_eq!(
            field(spec(RepeatRule::Once, vec![V6, V4], V6)),
            "step.families"
        );
    }

    #[test]
    fn a_repeat_spec_reads_back_as_written() {
        let s = spec(
            RepeatRule::UntilStable {
                stddev_pct: 0.5,
                min_runs: 30,
                max_runs: 200,
            },
            vec![IpFamily::V6, IpFamily::V4],
            IpFamily::Any,
        );
        let m = crate::MethodSpec::Repeat(s);
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["method"], "repeat");
        assert_eq!(json["step"]["repeat"]["rule"], "until_stable");
        assert_eq!(json["step"]["families"], serde_json::json!(["v6", "v4"]));
        let back: crate::MethodSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, m);
    }
}
