//! `sonde qos check`: the IP Premium checks of seed 004 §4.1, each a few
//! UDP probes through the runner and a verdict read from their results.

use super::concurrent::run_beside;
use super::verdicts::{self, Finding};
use super::{background_udp, Trials};
use crate::MethodError;
use sonde_model::method::{QosCheck, QosCheckKind, QosCheckSpec};
use sonde_model::{
    Dscp, Event, MethodEvent, MethodResult, MethodSpec, Profile, TestResult, Timestamp, UdpSpec,
};
use sonde_run::{Events, Runner, Stop};
use std::time::{Duration, Instant};

/// Where probes come from: this host, and the agent that sends the
/// background (`--via`), if any.
pub struct Senders<'a> {
    pub local: &'a dyn Runner,
    pub agent: Option<(&'a str, &'a dyn Runner)>,
}

impl Senders<'_> {
    /// Who sends background: the agent, else this host.
    fn background(&self) -> &dyn Runner {
        self.agent.map_or(self.local, |(_, r)| r)
    }
}

/// The spec's probe marked `class`, at `rate`, for `time`.
fn probe(spec: &QosCheckSpec, class: Dscp, rate: u64, time: Duration) -> UdpSpec {
    UdpSpec {
        dscp: Some(class),
        bitrate: sonde_model::Rate::from_bps(rate),
        time,
        parallel: 1,
        ..spec.probe.clone()
    }
}

/// Runs the checks `spec` names, in its order. Each verdict goes on
/// `events` as it is found ([`MethodEvent::QosCheck`]). A stop ends the
/// method with what ran.
pub fn run_qos_checks(
    senders: &Senders<'_>,
    spec: &QosCheckSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    spec.validate()?;
    let began = Instant::now();
    let mut trials = Trials::new(
        MethodResult::new(MethodSpec::QosCheck(spec.clone()), Timestamp::now()),
        stop,
        events,
    );
    for &check in &spec.checks {
        if stop.is_stopped() {
            break;
        }
        match check {
            QosCheckKind::Marking => {
                let mut from = vec![("this host", senders.local)];
                from.extend(senders.agent);
                for (who, runner) in from {
                    for &class in &spec.classes {
                        let p = probe(spec, class, spec.marking_rate.bps(), spec.probe_time);
                        let Some(r) = trials.run(runner, p.into())? else {
                            break;
                        };
                        let f = verdicts::marking(&r, class);
                        trials.check(check, who, class, f, &[&r]);
                    }
                }
            }
            QosCheckKind::Policing => {
                let rate = spec.policing_probe_rate().bps();
                let p = probe(spec, spec.premium, rate, spec.probe_time);
                if let Some(r) = trials.run(senders.local, p.into())? {
                    let f = verdicts::policing(&r, spec.policer_rate.map(|r| r.bps()));
                    trials.check(check, "this host", spec.premium, f, &[&r]);
                }
            }
            QosCheckKind::Shaping => {
                let mut p = probe(
                    spec,
                    spec.premium,
                    spec.shaping_rate.bps(),
                    spec.shaping_time,
                );
                p.profile = Profile::OnOff {
                    on: spec.shaping_on,
                    off: spec.shaping_off,
                };
                if let Some(r) = trials.run(senders.local, p.into())? {
                    let f = verdicts::shaping(&r, spec.shaping_rate.bps());
                    trials.check(check, "this host", spec.premium, f, &[&r]);
                }
            }
            QosCheckKind::Priority => priority(senders, spec, &mut trials)?,
            QosCheckKind::Lbe => lbe(senders, spec, &mut trials)?,
        }
    }
    let mut result = trials.finish();
    result.duration_s = began.elapsed().as_secs_f64();
    Ok(result)
}

/// Premium alone, then beside a best-effort background that congests
/// the path.
fn priority(
    senders: &Senders<'_>,
    spec: &QosCheckSpec,
    trials: &mut Trials<'_>,
) -> Result<(), MethodError> {
    let premium = probe(
        spec,
        spec.premium,
        spec.priority_rate.bps(),
        spec.probe_time,
    );
    let Some(alone) = trials.run(senders.local, premium.clone().into())? else {
        return Ok(());
    };
    let lead = Duration::from_secs(1);
    let bg_rate = spec.background_rate.map_or(0, |r| r.bps());
    let background = background_udp(
        &spec.probe,
        bg_rate,
        spec.probe.payload_len(),
        spec.probe_time + 2 * lead,
    );
    let Some((loaded, bg)) = trials.beside(
        senders.local,
        premium.into(),
        senders.background(),
        vec![background.into()],
        lead,
    )?
    else {
        return Ok(());
    };
    let Some(bg) = bg.first() else {
        return Ok(());
    };
    let f = verdicts::priority(&alone, &loaded, bg);
    let from = "this host";
    trials.check(
        QosCheckKind::Priority,
        from,
        spec.premium,
        f,
        &[&alone, &loaded, bg],
    );
    Ok(())
}

/// The LBE check's probe (`probe_time` and a `lead` either side) and the
/// background that starts `lead` after it (`probe_time`).
pub fn lbe_trials(spec: &QosCheckSpec, lead: Duration) -> (UdpSpec, UdpSpec) {
    let lbe = probe(
        spec,
        spec.lbe,
        spec.lbe_probe_rate().bps(),
        spec.probe_time + 2 * lead,
    );
    let background = background_udp(
        &spec.probe,
        spec.background_rate.map_or(0, |r| r.bps()),
        spec.probe.payload_len(),
        spec.probe_time,
    );
    (lbe, background)
}

/// The LBE class beside a best-effort background that congests the path:
/// squeezed to its minimum share, and no lower.
fn lbe(
    senders: &Senders<'_>,
    spec: &QosCheckSpec,
    trials: &mut Trials<'_>,
) -> Result<(), MethodError> {
    let lead = Duration::from_secs(1);
    let (lbe, background) = lbe_trials(spec, lead);
    // LBE first and the background `lead` later: the probe's control
    // connection is made before the path is congested (as best effort it
    // would lose its SYNs to the background, as any control traffic
    // does); the background's, while LBE alone leaves room.
    let Some((bg, probes)) = trials.beside(
        senders.background(),
        background.into(),
        senders.local,
        vec![lbe.into()],
        lead,
    )?
    else {
        return Ok(());
    };
    let Some(loaded) = probes.first() else {
        return Ok(());
    };
    let f = verdicts::lbe(loaded, &bg, spec.lbe_share_bps().unwrap_or(0));
    trials.check(QosCheckKind::Lbe, "this host", spec.lbe, f, &[loaded, &bg]);
    Ok(())
}

impl Trials<'_> {
    /// Records a check's finding over the trials it read, and tells the
    /// listeners.
    pub(super) fn check(
        &mut self,
        check: QosCheckKind,
        from: &str,
        class: Dscp,
        f: Finding,
        read: &[&TestResult],
    ) {
        let c = QosCheck {
            check,
            from: from.to_string(),
            class,
            verdict: f.verdict,
            evidence: f.evidence,
            figures: f.figures,
            trials: read.iter().map(|r| r.id).collect(),
        };
        self.events
            .emit(Event::Method(MethodEvent::QosCheck(c.clone())));
        self.result.checks.push(c);
    }

    /// Runs `fg` beside `bg`; `None` once stopped.
    pub(super) fn beside(
        &mut self,
        fg_runner: &dyn Runner,
        fg: sonde_model::TestSpec,
        bg_runner: &dyn Runner,
        bg: Vec<sonde_model::TestSpec>,
        lead: Duration,
    ) -> Result<Option<(TestResult, Vec<TestResult>)>, MethodError> {
        if self.stop.is_stopped() {
            self.result.interrupted = true;
            return Ok(None);
        }
        let ran = run_beside(fg_runner, &fg, bg_runner, &bg, lead, self.stop, self.events);
        let fg = self.keep(ran.foreground)?;
        let mut kept = Vec::new();
        for b in ran.background {
            kept.push(self.keep(b)?);
        }
        if fg.interrupted {
            self.result.interrupted = true;
            return Ok(None);
        }
        Ok(Some((fg, kept)))
    }
}
