//! `/metrics` in the OpenMetrics text format: per path, a gauge per
//! metric of the registry of its latest result, in the metric's base
//! unit (bytes per second, a ratio, seconds; `sonde_{short}_{unit}`),
//! labelled by test, source, target, direction, family and DSCP; an RTT
//! histogram of every ping answer since the agent started (buckets as
//! smokeping_prober's); and the agent's counters (tests run, refusals by
//! reason, archive write errors, results waiting). The gauges come from
//! the archive's `path_latest` table, which the archive keeps as it stores
//! each result: a scrape reads one row per path and parses no document.
//! Written by hand: the format is a few lines of text, and the crates
//! that write it want a registry of live metrics in this process, where
//! the paths' figures are the archive's (kept by every process that
//! stores into it).

use crate::openmetrics::{escape, label_text};
use crate::rtt_histograms::RttHistograms;
use sonde_archive::PathLatest;
use std::fmt::Write;

/// The labels of a path: test, source, target, direction, family, DSCP.
fn labels(p: &PathLatest) -> Vec<(&'static str, String)> {
    vec![
        ("test", p.test.clone()),
        ("source", p.source.clone()),
        ("target", p.target.clone()),
        ("direction", p.direction.clone()),
        ("family", p.family.clone()),
        ("dscp", p.dscp.to_string()),
    ]
}

/// The agent's counters, as counters (`_total`) and the backlog gauge.
fn render_counters(c: &sonde_server::CountersNow, out: &mut String) {
    let _ = writeln!(
        out,
        "# TYPE sonde_tests counter\n# HELP sonde_tests Tests this agent ran or served since it started.\nsonde_tests_total {}",
        c.tests_run
    );
    let _ = writeln!(
        out,
        "# TYPE sonde_tests_refused counter\n# HELP sonde_tests_refused Tests refused, by the limit or rule that refused them."
    );
    for (reason, n) in &c.refused {
        let _ = writeln!(
            out,
            "sonde_tests_refused_total{{reason=\"{}\"}} {n}",
            escape(reason)
        );
    }
    let _ = writeln!(
        out,
        "# TYPE sonde_archive_write_errors counter\n# HELP sonde_archive_write_errors Results the archive refused to keep.\nsonde_archive_write_errors_total {}",
        c.archive_errors
    );
    let _ = writeln!(
        out,
        "# TYPE sonde_archive_backlog gauge\n# HELP sonde_archive_backlog Results waiting to be written to the archive.\nsonde_archive_backlog {}",
        c.backlog
    );
}

/// The HTTP side's own defences: connections open and closed at once
/// (over the total or the per-source cap), connections it ended (idle,
/// a stalled TLS handshake), and requests refused, by why.
fn render_http(g: &crate::guards::Guards, out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    let c = &g.connections;
    let _ = writeln!(
        out,
        "# TYPE sonde_http_connections gauge\n# HELP sonde_http_connections HTTP connections open now.\nsonde_http_connections {}",
        c.open()
    );
    let _ = writeln!(
        out,
        "# TYPE sonde_http_connections_limit gauge\n# HELP sonde_http_connections_limit HTTP connections allowed at once (the descriptor limit may lower http.max_connections).\nsonde_http_connections_limit {}",
        c.total_cap()
    );
    let _ = writeln!(
        out,
        "# TYPE sonde_http_connections_accepted counter\n# HELP sonde_http_connections_accepted HTTP connections accepted and served.\nsonde_http_connections_accepted_total {}",
        c.accepted()
    );
    let _ = writeln!(
        out,
        "# TYPE sonde_http_connections_refused counter\n# HELP sonde_http_connections_refused HTTP connections closed at once, over the total or the per-source cap."
    );
    for (over, n) in c.refused() {
        let _ = writeln!(
            out,
            "sonde_http_connections_refused_total{{cap=\"{}\"}} {n}",
            over.name()
        );
    }
    let _ = writeln!(
        out,
        "# TYPE sonde_http_connections_closed counter\n# HELP sonde_http_connections_closed HTTP connections the agent ended: idle too long, or a TLS handshake that stalled.\nsonde_http_connections_closed_total{{why=\"idle\"}} {}\nsonde_http_connections_closed_total{{why=\"handshake\"}} {}",
        g.closed.idle.load(Relaxed),
        g.closed.handshake.load(Relaxed)
    );
    let _ = writeln!(
        out,
        "# TYPE sonde_http_event_streams gauge\n# HELP sonde_http_event_streams Clients following the live events now.\nsonde_http_event_streams {}",
        g.streams_open()
    );
    let r = &g.refused;
    let _ = writeln!(
        out,
        "# TYPE sonde_http_requests_refused counter\n# HELP sonde_http_requests_refused API requests refused by the HTTP side's defences, by why."
    );
    for (why, n) in [
        ("wrong_token", &r.wrong_token),
        ("auth_locked", &r.auth_locked),
        ("rate", &r.rate),
        ("event_streams", &r.streams),
        ("ingest_busy", &r.ingest_busy),
        ("host", &r.host),
        ("personal", &r.personal),
        ("campaigns", &r.campaigns),
    ] {
        let _ = writeln!(
            out,
            "sonde_http_requests_refused_total{{why=\"{why}\"}} {}",
            n.load(Relaxed)
        );
    }
}

/// Forwarding to each central archive (docs/mesh.md): the backlog, the
/// age of its oldest item, what was delivered, failed tries since the
/// last delivery, and when that was.
pub fn render_forwarding(
    forwarding: &[sonde_archive::ForwardStatus],
    now_ns: i64,
    out: &mut String,
) {
    if forwarding.is_empty() {
        return;
    }
    /// A family's value for one destination at a time.
    type Value = fn(&sonde_archive::ForwardStatus, i64) -> Option<f64>;
    let families: [(&str, &str, &str, Value); 5] = [
        (
            "sonde_forward_backlog",
            "gauge",
            "Results kept here and not yet delivered to the destination.",
            |f, _| Some(f.backlog as f64),
        ),
        (
            "sonde_forward_oldest_age_seconds",
            "gauge",
            "How long the oldest undelivered result has waited.",
            |f, now| {
                f.oldest_queued_ns
                    .map(|q| ((now - q) as f64 / 1e9).max(0.0))
            },
        ),
        (
            "sonde_forward_delivered",
            "counter",
            "Results delivered to the destination.",
            |f, _| Some(f.delivered as f64),
        ),
        (
            "sonde_forward_failed_attempts",
            "gauge",
            "Failed deliveries since the last one that worked.",
            |f, _| Some(f.attempts as f64),
        ),
        (
            "sonde_forward_last_success_timestamp_seconds",
            "gauge",
            "When a delivery last worked.",
            |f, _| f.last_ok_ns.map(|n| n as f64 / 1e9),
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# TYPE {name} {kind}\n# HELP {name} {help}");
        let sample = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        for f in forwarding {
            if let Some(v) = value(f, now_ns) {
                let _ = writeln!(
                    out,
                    "{sample}{{destination=\"{}\"}} {v}",
                    escape(&f.destination)
                );
            }
        }
    }
}

/// Each alert rule's state on each path it watches (docs/alerts.md): 1
/// while raised, 0 otherwise, and the notices given.
pub fn render_alerts(
    states: &[sonde_archive::AlertStateRow],
    notices: &[(String, String, i64)],
    out: &mut String,
) {
    if states.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "# TYPE sonde_alert_raised gauge\n# HELP sonde_alert_raised 1 while the alert is raised on the path, else 0."
    );
    for s in states {
        let _ = writeln!(
            out,
            "sonde_alert_raised{{alert=\"{}\",path=\"{}\",key=\"{}\"}} {}",
            escape(&s.rule),
            escape(&s.label),
            escape(&s.path),
            u8::from(s.up)
        );
    }
    let _ = writeln!(
        out,
        "# TYPE sonde_alert_notices counter\n# HELP sonde_alert_notices Notices given by an alert rule, by edge."
    );
    for (rule, edge, n) in notices {
        let _ = writeln!(
            out,
            "sonde_alert_notices_total{{alert=\"{}\",edge=\"{}\"}} {n}",
            escape(rule),
            escape(edge)
        );
    }
}

/// Readings taken from MQTT (docs/readings.md), when the agent
/// subscribes: what the broker delivered, what was refused and why, and
/// what the archive kept.
pub fn render_readings(stats: &crate::readings_ingest::IngestStats, out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(sub) = stats.subscriber.get() else {
        return;
    };
    let families = [
        (
            "sonde_readings_mqtt_received",
            "Valid readings the MQTT subscriber received.",
            sub.readings.load(Relaxed),
        ),
        (
            "sonde_readings_mqtt_malformed",
            "MQTT messages refused as readings (the first logged with its reason, then one warning per 10 s).",
            sub.malformed.load(Relaxed),
        ),
        (
            "sonde_readings_mqtt_connect_errors",
            "Failed connections to the MQTT broker (refused login, TLS, network).",
            sub.connect_errors.load(Relaxed),
        ),
        (
            "sonde_readings_mqtt_connections",
            "Connections made to the MQTT broker, reconnections included.",
            sub.connections.load(Relaxed),
        ),
        (
            "sonde_readings_kept",
            "Readings from MQTT the archive kept as new.",
            stats.kept.load(Relaxed),
        ),
        (
            "sonde_readings_duplicates",
            "Readings from MQTT already kept (same probe, metric and time).",
            stats.duplicates.load(Relaxed),
        ),
        (
            "sonde_readings_refused",
            "Readings from MQTT the archive refused: another unit than their metric's.",
            stats.refused.load(Relaxed),
        ),
        (
            "sonde_readings_lost",
            "Readings from MQTT lost: to an archive that failed three times running, or at stop.",
            stats.lost.load(Relaxed),
        ),
    ];
    for (name, help, n) in families {
        let _ = writeln!(
            out,
            "# TYPE {name} counter\n# HELP {name} {help}\n{name}_total {n}"
        );
    }
}

/// The whole page: the latest results' gauges, the RTT histograms, the
/// agent's counters, its forwarding, its alerts and its MQTT readings.
pub fn page(
    latest: &[PathLatest],
    rtt: &RttHistograms,
    counters: &sonde_server::CountersNow,
    forwarding: &[sonde_archive::ForwardStatus],
    alerts: (&[sonde_archive::AlertStateRow], &[(String, String, i64)]),
    readings: Option<&crate::readings_ingest::IngestStats>,
) -> String {
    let mut out = render(latest);
    out.truncate(out.len() - "# EOF\n".len());
    rtt.render(&mut out);
    render_counters(counters, &mut out);
    render_forwarding(forwarding, sonde_model::clock::now_ns(), &mut out);
    render_alerts(alerts.0, alerts.1, &mut out);
    if let Some(stats) = readings {
        render_readings(stats, &mut out);
    }
    out.push_str("# EOF\n");
    out
}

/// Paths shown at most (the most recently measured).
const MAX_PATHS: i64 = 1_000;

/// `GET /metrics`.
pub async fn serve(
    axum::extract::State(state): axum::extract::State<crate::state::Shared>,
) -> Result<axum::response::Response, crate::api::reply::ApiError> {
    use axum::response::IntoResponse;
    let (latest, forwarding, states, notices) = crate::state::with_store(&state, move |s| {
        Ok((
            s.path_latest(MAX_PATHS)?,
            s.forward_status()?,
            s.alert_states()?,
            s.alert_notice_counts()?,
        ))
    })
    .await?;
    let mut text = page(
        &latest,
        &state.live.rtt,
        &state.counters.now(),
        &forwarding,
        (&states, &notices),
        state.readings.as_deref(),
    );
    text.truncate(text.len() - "# EOF\n".len());
    render_http(&state.guards, &mut text);
    text.push_str("# EOF\n");
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// The metrics page of `latest` (one row per path).
pub fn render(latest: &[PathLatest]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# TYPE sonde_agent info\n# HELP sonde_agent This agent.\nsonde_agent_info{{version=\"{}\"}} 1",
        escape(sonde_model::SONDE_VERSION)
    );
    // A gauge per registry metric some path has, in its base unit.
    for m in sonde_model::Metric::ALL {
        if !latest.iter().any(|p| p.figures.contains_key(&m)) {
            continue;
        }
        let info = m.info();
        let (name, (unit, factor)) = (info.gauge(), info.base);
        let _ = writeln!(
            out,
            "# TYPE {name} gauge\n# UNIT {name} {unit}\n# HELP {name} {} of the path's latest \
             result.",
            info.about
        );
        for p in latest {
            if let Some(v) = p.figures.get(&m).map(|v| v * factor) {
                let _ = writeln!(out, "{name}{{{}}} {v}", label_text(&labels(p)));
            }
        }
    }
    let name = "sonde_result_timestamp_seconds";
    let _ = writeln!(
        out,
        "# TYPE {name} gauge\n# UNIT {name} seconds\n# HELP {name} When the path's latest result \
         started (Unix time)."
    );
    for p in latest {
        let _ = writeln!(
            out,
            "{name}{{{}}} {}",
            label_text(&labels(p)),
            p.start_ns as f64 / 1e9
        );
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{
        Direction, Figures, HostEnv, PeerKind, TcpSpec, TestEnv, TestResult, TestSpec, Timestamp,
    };

    fn tcp(host: &str, bps: u64) -> TestResult {
        let mut r = TestResult::new(
            TestSpec::Tcp(TcpSpec {
                host: host.into(),
                ..TcpSpec::default()
            }),
            TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
            Timestamp::now(),
        );
        r.summary.forward = Some(Figures {
            direction: Some(Direction::Forward),
            throughput_bps: Some(bps),
            ..Figures::default()
        });
        r
    }

    #[test]
    fn a_paths_figures_are_shown_in_base_units_with_its_labels_escaped() {
        let latest = [
            PathLatest::of(&tcp("b", 8_000)),
            PathLatest::of(&tcp("c\"d", 800)),
        ]
        .concat();
        let text = render(&latest);
        assert!(
            text.contains("target=\"b\",direction=\"forward\""),
            "{text}"
        );
        assert!(text.contains("} 1000\n"), "{text}");
        assert!(text.contains("} 100\n"), "{text}");
        assert!(text.contains("target=\"c\\\"d\""), "{text}");
        // A TCP result has no loss or RTT: those series are left out.
        assert!(!text.contains("sonde_loss_ratio{"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn every_registry_metric_a_path_has_is_a_gauge() {
        let mut r = tcp("b", 8_000);
        if let Some(f) = r.summary.forward.as_mut() {
            f.loss_pct = Some(2.5);
            f.loss_burst_max = Some(7);
        }
        let text = render(&PathLatest::of(&r));
        for line in [
            "# UNIT sonde_loss_ratio ratio",
            "# UNIT sonde_burst_packets packets",
            "# HELP sonde_burst_packets The longest run of packets lost in a row of the path's \
             latest result.",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        let value = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("{name}{{")))
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        };
        assert_eq!(value("sonde_loss_ratio"), Some(0.025), "{text}");
        assert_eq!(value("sonde_burst_packets"), Some(7.0), "{text}");
    }
}
