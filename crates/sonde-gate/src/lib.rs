//! The gate: the one admission every request passes, however it arrives
//! (the command line, the HTTP API, a campaign step when it is due, a
//! mesh share when it is written and when it runs). In order:
//!
//! 1. **validate**: the spec's own rules;
//! 2. **the origin's permissions**: a request from elsewhere than this
//!    host's command line (or a plan its operator wrote) names no file on
//!    the agent ([`files`]) and runs no method that changes a lab;
//! 3. **limits**: the whole work of the request, computed from the spec
//!    once ([`sonde_model::Work`]; a method's every trial), against
//!    `[limits]`: `max_work` for the whole, `max_duration`, `max_streams`
//!    and `max_rate` for each test (and, when it runs, each trial:
//!    [`Gate::check_trial`]);
//! 4. **target consent** ([`consent`]);
//! 5. **a slot**: at most `max_concurrent_tests` run at once: the
//!    agent's ([`Gate::of_server`]) shares its slots with the control
//!    port, so a test a client runs here and one the API starts count
//!    against the same cap.
//!
//! The first rule that fails gives the [`Refused`], which names the rule,
//! the value at fault (by JSON pointer) and what was asked. The control
//! port's own admission (sonde-server's `admission.rs`) is the same order for the tests
//! a client runs against this server.

pub mod consent;
pub mod files;
mod refused;
mod runner;
pub mod targets_config;

pub use consent::UrlPrefix;
pub use refused::Refused;
pub use runner::GatedRunner;

use ipnet::IpNet;
use sonde_model::{MethodSpec, Spec, TestSpec, Work};
pub use sonde_server::Limits;
use sonde_server::{TestSlot, TestSlots};
use sonde_wire::{Limit, Refusal};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
pub use targets_config::TargetsConfig;

/// How long past its admitted bound a request may run before the agent
/// stops it: set-up, a slow server's handshake, the result's write.
pub const GRACE: Duration = Duration::from_secs(30);

/// Where a request came from: what it may ask follows from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// This host's command line: its user may do anything sonde does.
    CommandLine,
    /// A plan the operator put in the campaigns directory by hand.
    OperatorPlan,
    /// The HTTP API (`POST /api/v1/tests`), by the token's name.
    Api { who: String },
    /// A campaign written through the API (`POST /api/v1/campaigns`).
    ApiCampaign,
    /// A mesh share the central agent handed this member.
    Mesh,
}

impl Origin {
    /// Whether the request came from elsewhere than this host's operator.
    pub fn is_remote(&self) -> bool {
        !matches!(self, Origin::CommandLine | Origin::OperatorPlan)
    }

    /// Its name in the audit log and in labels.
    pub fn name(&self) -> &'static str {
        match self {
            Origin::CommandLine => "command_line",
            Origin::OperatorPlan => "operator_plan",
            Origin::Api { .. } => "api",
            Origin::ApiCampaign => "api_campaign",
            Origin::Mesh => "mesh",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::CommandLine => "the command line",
            Origin::OperatorPlan => "the operator's plan",
            Origin::Api { .. } => "the HTTP API",
            Origin::ApiCampaign => "a campaign written through the API",
            Origin::Mesh => "a mesh share",
        })
    }
}

/// The rules in force: one per agent, shared by every way in.
#[derive(Debug)]
pub struct Gate {
    targets: TargetsConfig,
    mesh_targets: Vec<IpNet>,
    /// `[keys]`: the keys a remote request may name.
    keys: BTreeMap<String, PathBuf>,
    slots: Slots,
}

/// Where the test slots are counted.
#[derive(Debug)]
enum Slots {
    /// By the gate alone, under its own limits (a gate without a server:
    /// the unit tests').
    Own(AtomicU32, Arc<Limits>),
    /// The server's, which the control port counts too, under the
    /// server's limits (which a reload changes).
    Server(TestSlots),
}

/// A slot held.
#[derive(Debug)]
enum Held {
    Own(Arc<Gate>),
    /// Held until dropped.
    Server {
        _slot: TestSlot,
    },
}

/// An admitted request: its work, the time it may take (its bound plus
/// [`GRACE`]; `None` for the command line's, which has none), and its
/// slot, held until this is dropped.
#[derive(Debug)]
pub struct Admitted {
    pub work: Work,
    pub deadline: Option<Duration>,
    held: Option<Held>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if let Some(Held::Own(g)) = &self.held {
            if let Slots::Own(n, _) = &g.slots {
                n.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

impl Gate {
    /// A gate that counts its own slots (see [`Gate::of_server`] for the
    /// agent's, which shares the control port's).
    pub fn new(limits: Limits, targets: TargetsConfig, mesh_targets: Vec<IpNet>) -> Arc<Gate> {
        Arc::new(Gate {
            targets,
            mesh_targets,
            keys: BTreeMap::new(),
            slots: Slots::Own(AtomicU32::new(0), Arc::new(limits)),
        })
    }

    /// The gate of a server: its `[limits]`, and its test slots.
    pub fn of_server(
        slots: TestSlots,
        targets: TargetsConfig,
        mesh_targets: Vec<IpNet>,
        keys: BTreeMap<String, PathBuf>,
    ) -> Arc<Gate> {
        Arc::new(Gate {
            targets,
            mesh_targets,
            keys,
            slots: Slots::Server(slots),
        })
    }

    /// The file of key `name` in `[keys]`.
    pub fn key_file(&self, name: &str) -> Option<&PathBuf> {
        self.keys.get(name)
    }

    /// The limits in force now.
    pub fn limits(&self) -> Arc<Limits> {
        match &self.slots {
            Slots::Server(s) => s.limits(),
            Slots::Own(_, limits) => Arc::clone(limits),
        }
    }

    /// Tests and requests holding a slot now.
    pub fn running(&self) -> u32 {
        match &self.slots {
            Slots::Own(n, _) => n.load(Ordering::Acquire),
            Slots::Server(slots) => slots.running(),
        }
    }

    /// Every rule but the slot: the request's work if it may run.
    pub fn check(&self, origin: &Origin, spec: &Spec) -> Result<Work, Refused> {
        spec.validate().map_err(|e| Refused::Invalid {
            at: format!("/{}", e.field.replace('.', "/")),
            detail: e.reason,
        })?;
        let work = match spec {
            Spec::Test(t) => t.work(),
            Spec::Method(m) => sonde_methods::method_work(m),
        };
        if !origin.is_remote() {
            return Ok(work);
        }
        self.permitted(origin, spec)?;
        match spec {
            Spec::Test(t) => self.test_limits("", t)?,
            Spec::Method(_) => self.work_limits(&work)?,
        }
        for (at, test) in aimed_at(spec) {
            self.consent(origin, &at, &test)?;
        }
        Ok(work)
    }

    /// [`Gate::check`], then a slot.
    pub fn admit(self: &Arc<Self>, origin: &Origin, spec: &Spec) -> Result<Admitted, Refused> {
        let work = self.check(origin, spec)?;
        if !origin.is_remote() {
            return Ok(Admitted {
                work,
                deadline: None,
                held: None,
            });
        }
        let max = self.limits().max_concurrent_tests;
        let held = match &self.slots {
            Slots::Own(n, _) => n
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < max).then_some(n + 1)
                })
                .ok()
                .map(|_| Held::Own(Arc::clone(self))),
            Slots::Server(slots) => slots.claim().map(|s| Held::Server { _slot: s }),
        };
        let Some(held) = held else {
            return Err(Refused::Busy(Refusal::Busy {
                max_concurrent_tests: max,
            }));
        };
        Ok(Admitted {
            work,
            deadline: work.duration.map(|d| d + GRACE),
            held: Some(held),
        })
    }

    /// One test a method (or a campaign step) is about to run, as it will
    /// run: every rule but the slot, which its request holds.
    pub fn check_trial(&self, origin: &Origin, test: &TestSpec) -> Result<(), Refused> {
        self.check(origin, &Spec::Test(test.clone())).map(|_| ())
    }

    fn permitted(&self, origin: &Origin, spec: &Spec) -> Result<(), Refused> {
        let value = serde_json::to_value(spec).unwrap_or_default();
        if let Some((at, path)) = files::named_files(&value).into_iter().next() {
            return Err(Refused::File {
                origin: origin.clone(),
                at,
                path,
            });
        }
        for (at, test) in aimed_at(spec) {
            if let TestSpec::Ping(sonde_model::PingSpec { key: Some(k), .. }) = &test {
                if !self.keys.contains_key(k) {
                    return Err(Refused::NotPermitted {
                        origin: origin.clone(),
                        at: at.replace("/host", "/key"),
                        what: format!("key '{k}' (the agent's [keys] has none of that name)"),
                    });
                }
            }
        }
        if let Spec::Method(MethodSpec::TuneLab(_)) = spec {
            return Err(Refused::NotPermitted {
                origin: origin.clone(),
                at: "/method".into(),
                what: "tune_lab (it changes a lab's links)".into(),
            });
        }
        Ok(())
    }

    /// A test's own limits: duration, streams, rate (TCP and UDP as the
    /// control port checks them).
    fn test_limits(&self, at: &str, t: &TestSpec) -> Result<(), Refused> {
        let l = &*self.limits();
        let wrap = |refusal: Refusal| Refused::Limit {
            at: if at.is_empty() { "/".into() } else { at.into() },
            refusal,
        };
        match t {
            TestSpec::Tcp(s) => sonde_server::check_tcp_limits(l, s).map_err(wrap),
            TestSpec::Udp(s) => sonde_server::check_udp_limits(l, s).map_err(wrap),
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {
                let w = t.work();
                let field = match t {
                    TestSpec::Ping(_) => "/count",
                    TestSpec::Trace(_) => "/max_hops",
                    _ => "/time_s",
                };
                let at_end = format!("{at}{field}");
                let Some(d) = w.duration else {
                    return Err(Refused::limit(
                        &at_end,
                        Limit::MaxDuration,
                        fmt_secs(l.max_duration),
                        "no end (give a count or a deadline)".into(),
                    ));
                };
                if d > l.max_duration {
                    return Err(Refused::limit(
                        &at_end,
                        Limit::MaxDuration,
                        fmt_secs(l.max_duration),
                        format!("{} in all, every series and its timeout", fmt_secs(d)),
                    ));
                }
                self.work_peaks(at, &w)
            }
        }
    }

    /// A method's whole work.
    fn work_limits(&self, w: &Work) -> Result<(), Refused> {
        let l = &*self.limits();
        match w.duration {
            None => {
                return Err(Refused::limit(
                    "/",
                    Limit::Other("max_work".into()),
                    fmt_secs(l.max_work),
                    "no end".into(),
                ))
            }
            Some(d) if d > l.max_work => {
                return Err(Refused::limit(
                    "/",
                    Limit::Other("max_work".into()),
                    fmt_secs(l.max_work),
                    format!("{} in all, over {} trials", fmt_secs(d), w.trials),
                ))
            }
            Some(_) => {}
        }
        self.work_peaks("/", w)
    }

    /// The most streams and the highest rate of `w`.
    fn work_peaks(&self, at: &str, w: &Work) -> Result<(), Refused> {
        let l = &*self.limits();
        let at = if at.is_empty() { "/" } else { at };
        if w.streams > u32::from(l.max_streams) {
            return Err(Refused::limit(
                at,
                Limit::MaxStreams,
                l.max_streams.to_string(),
                format!("{} streams or connections", w.streams),
            ));
        }
        if let Some(max) = l.max_rate {
            match w.rate {
                None if w.trials > 0 => {
                    return Err(Refused::limit(
                        at,
                        Limit::MaxRate,
                        max.to_string(),
                        "unpaced".into(),
                    ))
                }
                Some(r) if r > max => {
                    return Err(Refused::limit(
                        at,
                        Limit::MaxRate,
                        max.to_string(),
                        r.to_string(),
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether `test`'s target agreed: see [`consent`].
    fn consent(&self, origin: &Origin, at: &str, test: &TestSpec) -> Result<(), Refused> {
        let refuse = |kind, target: String, allowed_by| Refused::Consent {
            origin: origin.clone(),
            at: at.to_string(),
            kind,
            target,
            allowed_by,
        };
        if *origin == Origin::Mesh {
            let host = match test {
                TestSpec::Http(s) => {
                    sonde_model::HttpSpec::host_of(&s.url).unwrap_or_else(|_| s.url.clone())
                }
                other => other.host().to_string(),
            };
            return match consent::outside(&host, &self.mesh_targets) {
                None => Ok(()),
                Some(t) => Err(refuse("a mesh share's tests", t, "mesh.targets")),
            };
        }
        match test {
            // Their server admits or refuses them itself.
            TestSpec::Tcp(_) | TestSpec::Udp(_) => Ok(()),
            TestSpec::Ping(s) => match consent::outside(&s.host, &self.targets.ping) {
                None => Ok(()),
                Some(t) => Err(refuse("pings", t, "targets.ping")),
            },
            TestSpec::Http(s) => match consent::url_outside(s, &self.targets.http) {
                None => Ok(()),
                Some(t) => Err(refuse("HTTP tests", t, "targets.http")),
            },
            TestSpec::Trace(s) => match consent::outside(&s.host, &self.targets.trace) {
                None => Ok(()),
                Some(t) => Err(refuse("traces", t, "targets.trace")),
            },
        }
    }
}

fn fmt_secs(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The tests a request aims traffic with, by pointer: the test itself, or
/// each test a method is built on (its trials are that test with another
/// rate, size or direction, toward the same host).
pub fn aimed_at(spec: &Spec) -> Vec<(String, TestSpec)> {
    let m = match spec {
        Spec::Test(t) => return vec![("/host".into(), t.clone())],
        Spec::Method(m) => m,
    };
    let t = |at: &str, spec: TestSpec| (at.to_string(), spec);
    match m {
        MethodSpec::Ndr(s) => vec![t("/trial/host", TestSpec::Udp(s.trial.clone()))],
        MethodSpec::Sweep(s) => vec![t("/test/host", s.test.clone())],
        MethodSpec::Repeat(s) => vec![t("/test/host", s.test.clone())],
        MethodSpec::QosCheck(s) => vec![t("/probe/host", TestSpec::Udp(s.probe.clone()))],
        MethodSpec::QosScenario(s) => vec![
            t(
                "/udp_foreground/host",
                TestSpec::Udp(s.udp_foreground.clone()),
            ),
            t(
                "/tcp_foreground/host",
                TestSpec::Tcp(s.tcp_foreground.clone()),
            ),
        ],
        MethodSpec::Overhead(s) => vec![t("/probe/host", TestSpec::Udp(s.probe.clone()))],
        MethodSpec::Tune(s) => vec![
            t("/test/host", TestSpec::Tcp(s.test.clone())),
            t(
                "/test/host",
                TestSpec::Ping(sonde_model::PingSpec {
                    host: s.test.host.clone(),
                    family: s.test.family,
                    ..sonde_model::PingSpec::default()
                }),
            ),
        ],
        MethodSpec::TuneLab(s) => vec![t("/test/host", TestSpec::Tcp(s.test.clone()))],
    }
}

#[cfg(test)]
mod tests;
