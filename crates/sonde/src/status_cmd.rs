//! `sonde status`: what this agent's archive holds and where its results
//! are: each forwarding destination's backlog, its oldest undelivered
//! result and its last error (docs/mesh.md), and each campaign's runs.

use crate::archive_args::ArchiveArgs;
use crate::failure::Failure;
use anyhow::anyhow;
use clap::Args;
use sonde_archive::ForwardStatus;
use sonde_campaign::{campaign_status, rfc3339};
use sonde_model::clock::now_ns;
use std::io::Write;

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub archive: ArchiveArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One destination, in words.
fn forwarding_text(f: &ForwardStatus, now: i64) -> String {
    let mut out = format!(
        "forwarding to {}: {} waiting, {} delivered\n",
        f.destination, f.backlog, f.delivered
    );
    if let (Some(at), Some(id)) = (f.oldest_queued_ns, &f.oldest_id) {
        let age = humantime::format_duration(std::time::Duration::from_secs(
            u64::try_from((now - at) / 1_000_000_000).unwrap_or(0),
        ));
        out += &format!(
            "  oldest waiting: {id}, queued {} ({age} ago)\n",
            rfc3339(at)
        );
    }
    if let Some(ok) = f.last_ok_ns {
        out += &format!("  last delivery: {}\n", rfc3339(ok));
    }
    if let (Some(e), Some(at)) = (&f.last_error, f.last_error_ns) {
        out += &format!(
            "  last error: {} at {}{}\n",
            e,
            rfc3339(at),
            if f.attempts > 0 {
                format!(" ({} failed tries since the last delivery)", f.attempts)
            } else {
                String::new()
            }
        );
    }
    out
}

pub fn run(args: StatusArgs) -> Result<(), Failure> {
    let mut store = crate::results_cmd::open(&args.archive)?;
    let location = store.location().to_string();
    let fail = |e: sonde_archive::ArchiveError| Failure::Run(anyhow!(e));
    let results = store.count_results().map_err(fail)?;
    let forwarding = store.forward_status().map_err(fail)?;
    let mut campaigns = Vec::new();
    for c in store.campaigns().map_err(fail)? {
        if let Some(s) =
            campaign_status(&mut store, &c.name, 200).map_err(|e| Failure::Run(anyhow!(e)))?
        {
            campaigns.push(s);
        }
    }
    let alerts_queue = store
        .local_queue_status(sonde_alerts::QUEUE)
        .map_err(fail)?;
    let states = store.alert_states().map_err(fail)?;
    let raised: Vec<_> = states.iter().filter(|s| s.up).collect();
    let events = store.alert_events(0, 20).map_err(fail)?;
    let mut out = std::io::stdout();
    if args.json {
        let doc = serde_json::json!({
            "archive": location,
            "results": results,
            "forwarding": forwarding,
            "campaigns": campaigns,
            "alerts": {
                "waiting": alerts_queue.as_ref().map(|q| q.backlog),
                "raised": raised,
                "states": states.len(),
                "events": events,
            },
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    writeln!(out, "archive {location}: {results} results")?;
    if forwarding.is_empty() {
        writeln!(out, "forwarding: none")?;
    }
    let now = now_ns();
    for f in &forwarding {
        write!(out, "{}", forwarding_text(f, now))?;
    }
    for s in &campaigns {
        write!(out, "{}", crate::campaign_cmd::status_text(s))?;
    }
    if alerts_queue.is_some() || !states.is_empty() {
        write!(
            out,
            "{}",
            alerts_text(alerts_queue.map(|q| q.backlog), &raised, &events)
        )?;
    }
    Ok(())
}

/// The alerts in words: how many results wait to be evaluated, each
/// alert raised, and the latest notices.
fn alerts_text(
    waiting: Option<i64>,
    raised: &[&sonde_archive::AlertStateRow],
    events: &[sonde_archive::AlertEvent],
) -> String {
    let mut out = format!("alerts: {} raised", raised.len());
    if let Some(w) = waiting {
        out += &format!(", {w} results waiting to be evaluated");
    }
    out.push('\n');
    for s in raised {
        out += &format!(
            "  RAISED {} on {} since {}\n",
            s.rule,
            s.label,
            s.since_ns.map_or_else(String::new, rfc3339)
        );
    }
    for e in events.iter().take(5) {
        let value = e
            .value
            .map_or_else(|| "unknown".into(), sonde_model::metric::rounded);
        out += &format!(
            "  {} {} {} on {} ({value})\n",
            rfc3339(e.at_ns),
            e.rule,
            e.edge,
            e.label
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_in_words_names_backlog_oldest_and_error() {
        let f = ForwardStatus {
            destination: "central".into(),
            backlog: 12,
            oldest_queued_ns: Some(1_700_000_000_000_000_000),
            oldest_id: Some("b1e5".into()),
            delivered: 40,
            attempts: 3,
            last_ok_ns: None,
            last_error: Some("connection refused".into()),
            last_error_ns: Some(1_700_000_060_000_000_000),
        };
        let text = forwarding_text(&f, 1_700_000_090_000_000_000);
        assert!(
            text.starts_with("forwarding to central: 12 waiting, 40 delivered\n"),
            "{text}"
        );
        assert!(text.contains("oldest waiting: b1e5"), "{text}");
        assert!(text.contains("(1m 30s ago)"), "{text}");
        assert!(text.contains("last error: connection refused"), "{text}");
        assert!(text.contains("3 failed tries"), "{text}");
    }
}
