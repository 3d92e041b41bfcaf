//! Alerts evaluated as results arrive. Every result the archive keeps
//! (a campaign's, a test's with `--archive`, one forwarded by a mesh
//! agent) is queued in the archive's local queue `local:alerts` in the
//! transaction that keeps it; the evaluator takes the queue in order,
//! gives each result's metric to every rule whose selector takes its
//! path, and writes the new states, the notices and what it took off the
//! queue in one transaction. Notices then go to the deliveries
//! ([`crate::deliver`]).

use crate::config::{AlertMetric, PathKey, Rule};
use crate::deliver::Deliverer;
use crate::notice::Notice;
use crate::rule::{AlertState, Edge};
use sonde_archive::{AlertEvent, AlertStateRow, ArchiveError, ResultRow, Store};
use sonde_model::clock::now_ns;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The archive's queue the alerts take results from.
pub const QUEUE: &str = "local:alerts";

/// Results taken from the queue at a time.
const BATCH: usize = 500;

/// How often an empty queue is looked at again.
const POLL: Duration = Duration::from_millis(500);

/// Why the alerts cannot run.
#[derive(Debug, thiserror::Error)]
pub enum AlertsError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("{0}")]
    Start(String),
}

/// The path of a result, as rules select it.
pub fn path_of(row: &ResultRow) -> PathKey {
    PathKey {
        test: row.test.clone(),
        source: row.from.clone().unwrap_or_else(|| row.source.clone()),
        target: row.to.clone().unwrap_or_else(|| row.target.clone()),
        source_addr: row.source_addr.clone().unwrap_or_default(),
        target_addr: row.target_addr.clone().unwrap_or_default(),
        family: row.family.clone(),
        direction: row.direction.clone(),
        campaign: row.campaign.clone().unwrap_or_default(),
        step: row.step.clone().unwrap_or_default(),
    }
}

/// A result's value of `rule`'s metric (`None`: unknown): its overall
/// figure as the archive indexed it (`figures`: per metric, per result),
/// or whether its route changed.
fn sample(rule: &Rule, row: &ResultRow, figures: &Figures) -> Option<f64> {
    match rule.metric {
        AlertMetric::Figure(m) => figures.get(&m).and_then(|v| v.get(&row.id)).copied(),
        AlertMetric::PathChanged => row.path_changed,
        AlertMetric::Reading => None,
    }
    .filter(|v| v.is_finite())
}

/// The overall figures of a batch's results, per metric the rules watch.
type Figures = BTreeMap<sonde_model::Metric, BTreeMap<String, f64>>;

/// One sample a rule is given: a result's figure or a reading.
struct Sample {
    value: Option<f64>,
    at_ns: i64,
    /// The result's id, or the reading's (`reading:PROBE/METRIC@NS`).
    id: String,
    source_host: String,
    target_host: String,
}

/// The path of a probe's reading: `reading`, the probe, the metric.
pub fn reading_path(probe: &str, metric: &str) -> PathKey {
    PathKey {
        test: "reading".into(),
        source: probe.into(),
        target: metric.into(),
        ..PathKey::default()
    }
}

fn reading_id(probe: &str, metric: &str, at_ns: i64) -> String {
    format!("reading:{probe}/{metric}@{at_ns}")
}

/// The time of the reading a state saw last, from its id.
fn reading_time(id: Option<&str>) -> Option<i64> {
    id?.strip_prefix("reading:")?
        .rsplit_once('@')?
        .1
        .parse()
        .ok()
}

/// Gives `sample` to `rule`'s state on `path` (worked on in `changed`, a
/// copy of the kept one, kept only once the batch is committed: a failed
/// commit leaves the states as the archive has them, and the batch is
/// taken again): the event and notice when the alert is raised or
/// cleared.
fn update(
    kept: &BTreeMap<(String, String), AlertStateRow>,
    changed: &mut BTreeMap<(String, String), AlertStateRow>,
    rule: &Rule,
    path: &PathKey,
    sample: Sample,
    now: i64,
) -> Option<(AlertEvent, Notice)> {
    let key = (rule.name.clone(), path.key());
    if !changed.contains_key(&key) {
        if let Some(k) = kept.get(&key) {
            changed.insert(key.clone(), k.clone());
        }
    }
    let st = changed.entry(key).or_insert_with(|| AlertStateRow {
        rule: rule.name.clone(),
        path: path.key(),
        label: path.display(),
        up: false,
        run: 0,
        history: Vec::new(),
        since_ns: None,
        last_value: None,
        last_result: None,
        updated_ns: now,
        incident_id: None,
    });
    let value = sample.value;
    st.history.push(value);
    let keep = rule.keep();
    if st.history.len() > keep {
        st.history.drain(..st.history.len() - keep);
    }
    let mut state = AlertState {
        up: st.up,
        run: usize::try_from(st.run).unwrap_or(0),
    };
    let edge = state.update(&rule.condition, &st.history);
    st.up = state.up;
    st.run = i64::try_from(state.run).unwrap_or(i64::MAX);
    st.last_value = value;
    st.last_result = Some(sample.id.clone());
    st.updated_ns = now;
    let edge = edge?;
    st.since_ns = (edge == Edge::Raised).then_some(sample.at_ns);
    if edge == Edge::Raised {
        // A new episode: the incident of the last one is not this one's.
        st.incident_id = None;
    }
    let event = AlertEvent {
        rule: rule.name.clone(),
        path: path.key(),
        label: path.display(),
        edge: match edge {
            Edge::Raised => "raised",
            Edge::Cleared => "cleared",
        }
        .into(),
        at_ns: sample.at_ns,
        value,
        result_id: sample.id,
        detail: rule.describe(),
    };
    let notice = Notice {
        event: event.clone(),
        edge,
        path: path.clone(),
        metric: rule.metric,
        source_host: sample.source_host,
        target_host: sample.target_host,
        incident_id: st.incident_id,
    };
    Some((event, notice))
}

/// The rules, and every (rule, path) state they have.
pub struct Evaluator {
    rules: Vec<Rule>,
    states: BTreeMap<(String, String), AlertStateRow>,
}

impl Evaluator {
    /// The evaluator of `rules`, going on from the states `store` keeps.
    pub fn new(rules: Vec<Rule>, store: &mut Store) -> Result<Self, ArchiveError> {
        let states = store
            .alert_states()?
            .into_iter()
            .map(|s| ((s.rule.clone(), s.path.clone()), s))
            .collect();
        Ok(Self { rules, states })
    }

    /// Takes one batch off the queue: the notices it gave, and how many
    /// items it took (0: the queue was empty).
    pub fn step(&mut self, store: &mut Store) -> Result<(Vec<Notice>, usize), ArchiveError> {
        let (results, methods) = store.queued(QUEUE, BATCH)?;
        let on_readings = self.rules.iter().any(|r| r.reading.is_some());
        if results.is_empty() && methods.is_empty() && !on_readings {
            return Ok((Vec::new(), 0));
        }
        let rows = if results.is_empty() {
            Vec::new()
        } else {
            store.rows_by_ids(&results)?
        };
        let mut figures = Figures::new();
        for m in self
            .rules
            .iter()
            .filter(|_| !results.is_empty())
            .filter_map(|r| r.metric.registry())
        {
            if let std::collections::btree_map::Entry::Vacant(e) = figures.entry(m) {
                e.insert(store.overall_values(&results, m)?);
            }
        }
        let mut changed = BTreeMap::new();
        let mut events = Vec::new();
        let mut notices = Vec::new();
        let now = now_ns();
        // A result forwarded by an agent that is not its path's owner
        // (its `from`, when that names an agent of the mesh) neither
        // raises nor clears an alert on that path.
        let agents: std::collections::BTreeSet<String> = store
            .mesh_agents()?
            .into_iter()
            .map(|a| a.info.name)
            .collect();
        for row in rows.iter().filter(|r| r.from_owner(&agents)) {
            let path = path_of(row);
            for rule in self
                .rules
                .iter()
                .filter(|r| r.reading.is_none() && r.select.selects(&path))
            {
                let sample = Sample {
                    value: sample(rule, row, &figures),
                    at_ns: row.start_ns,
                    id: row.id.clone(),
                    source_host: row.source_addr.clone().unwrap_or(row.source.clone()),
                    target_host: row.target_addr.clone().unwrap_or(row.target.clone()),
                };
                if let Some((event, notice)) =
                    update(&self.states, &mut changed, rule, &path, sample, now)
                {
                    events.push(event);
                    notices.push(notice);
                }
            }
        }
        let read = self.readings(store, &mut changed, &mut events, &mut notices, now)?;
        let states: Vec<AlertStateRow> = changed.values().cloned().collect();
        let taken: Vec<String> = results.into_iter().chain(methods).collect();
        if taken.is_empty() && states.is_empty() {
            // Nothing came: nothing to write.
            return Ok((notices, read));
        }
        store.alert_batch(QUEUE, &states, &events, &taken)?;
        self.states.extend(changed);
        Ok((notices, taken.len() + read))
    }

    /// Gives the rules on readings every reading kept since the last one
    /// each (probe, reading) state saw, in the order of their times: how
    /// many it gave.
    fn readings(
        &mut self,
        store: &mut Store,
        changed: &mut BTreeMap<(String, String), AlertStateRow>,
        events: &mut Vec<AlertEvent>,
        notices: &mut Vec<Notice>,
        now: i64,
    ) -> Result<usize, ArchiveError> {
        if self.rules.iter().all(|r| r.reading.is_none()) {
            return Ok(0);
        }
        let series = store.reading_series()?;
        let mut given = 0;
        for rule in &self.rules {
            let Some(select) = &rule.reading else {
                continue;
            };
            for s in series
                .iter()
                .filter(|s| select.selects(&s.probe, &s.metric))
            {
                let path = reading_path(&s.probe, &s.metric);
                let key = (rule.name.clone(), path.key());
                let seen = changed
                    .get(&key)
                    .or(self.states.get(&key))
                    .and_then(|st| reading_time(st.last_result.as_deref()));
                // A rule's first look at a series starts from its latest
                // reading, as rules on results start from now.
                let from = match seen {
                    Some(at) => at.saturating_add(1),
                    None => s.last_ns,
                };
                for (at_ns, value) in
                    store.raw_readings(&s.probe, &s.metric, from, i64::MAX, BATCH)?
                {
                    given += 1;
                    let sample = Sample {
                        value: Some(value).filter(|v| v.is_finite()),
                        at_ns,
                        id: reading_id(&s.probe, &s.metric, at_ns),
                        source_host: s.probe.clone(),
                        target_host: String::new(),
                    };
                    if let Some((event, notice)) =
                        update(&self.states, changed, rule, &path, sample, now)
                    {
                        events.push(event);
                        notices.push(notice);
                    }
                }
            }
        }
        Ok(given)
    }

    /// The rule named `name`.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.name == name)
    }

    /// The incident the alert of `notice` opened last, if any.
    pub fn incident_of(&self, notice: &Notice) -> Option<i64> {
        let key = (notice.event.rule.clone(), notice.event.path.clone());
        self.states.get(&key).and_then(|s| s.incident_id)
    }

    /// Records that the alert of `notice` opened incident `id`.
    pub fn opened(&mut self, notice: &Notice, id: i64) {
        let key = (notice.event.rule.clone(), notice.event.path.clone());
        if let Some(st) = self.states.get_mut(&key) {
            st.incident_id = Some(id);
        }
    }
}

/// Starts the alerts on `archive`: from the results kept from now on
/// (the first time), or from where they stopped. Without rules, the
/// queue is dropped so that it does not grow. Returns the evaluator's
/// thread, or `None` without rules.
pub fn start(
    archive: &str,
    rules: Vec<Rule>,
    deliverer: Deliverer,
    stop: &Arc<AtomicBool>,
) -> Result<Option<JoinHandle<()>>, AlertsError> {
    if rules.is_empty() {
        // An archive not made yet has no queue to drop: leave it unmade
        // (a plain `sonde serve` keeps no archive); one that cannot be
        // opened now is no reason to stop serving.
        let exists = archive.starts_with("postgres") || std::path::Path::new(archive).exists();
        if exists {
            let dropped = Store::open(archive).and_then(|mut s| {
                s.drop_queue(QUEUE)?;
                s.alert_forget_except(&[])
            });
            if let Err(e) = dropped {
                tracing::warn!(error = %e, "alerts: cannot drop the queue of removed rules");
            }
        }
        return Ok(None);
    }
    let mut store = Store::open(archive)?;
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    let forgotten = store.alert_forget_except(&names)?;
    if forgotten > 0 {
        tracing::info!(
            states = forgotten,
            "alerts: the states of rules no longer configured forgotten"
        );
    }
    if store.queue_from_now(QUEUE)? {
        tracing::info!("alerts: evaluating the results kept from now on");
    }
    let mut evaluator = Evaluator::new(rules, &mut store)?;
    for r in &evaluator.rules {
        tracing::info!(alert = %r.name, condition = %r.describe(), "alert rule");
    }
    let stop = Arc::clone(stop);
    std::thread::Builder::new()
        .name("sonde-alerts".into())
        .spawn(move || {
            let mut deliverer = deliverer;
            while !stop.load(Ordering::Relaxed) {
                match evaluator.step(&mut store) {
                    Ok((notices, taken)) => {
                        for mut n in notices {
                            // A clear names the incident its raise opened,
                            // also one opened earlier in the same batch.
                            if n.edge == Edge::Cleared {
                                n.incident_id = n.incident_id.or(evaluator.incident_of(&n));
                            }
                            let rule = evaluator.rule(&n.event.rule).cloned();
                            if let Some(rule) = rule {
                                if let Some(id) = deliverer.deliver(&rule, &n, &mut store) {
                                    evaluator.opened(&n, id);
                                }
                            }
                        }
                        if taken == 0 {
                            std::thread::sleep(POLL);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "alerts: cannot read or write the archive");
                        std::thread::sleep(Duration::from_secs(5));
                    }
                }
            }
        })
        .map(Some)
        .map_err(|e| AlertsError::Start(format!("cannot start a thread: {e}")))
}

#[cfg(test)]
#[path = "evaluate_tests.rs"]
mod tests;
