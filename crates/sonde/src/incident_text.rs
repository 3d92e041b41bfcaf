//! `sonde incident`'s text output: a line per incident, an incident in
//! full, the constituencies.

use sonde_incidents::{Constituency, Incident};

fn time(ns: i64) -> String {
    sonde_incidents::template::rfc3339(ns)
}

/// One line of `list`.
pub fn line(i: &Incident) -> String {
    format!(
        "{:>5} {} {:<8} {:<8} {:<14} {:<12} {} [{}]",
        i.id,
        time(i.opened_ns),
        i.status,
        i.severity,
        i.state,
        i.kind,
        i.summary,
        i.owners().join(", ")
    )
}

pub fn show(i: &Incident) -> String {
    let mut s = format!(
        "incident {}: {}\n  type {}, state {}, status {}, severity {}, from {}\n  opened {}, changed {}\n",
        i.id,
        i.summary,
        i.kind,
        i.state,
        i.status,
        i.severity,
        i.source,
        time(i.opened_ns),
        time(i.updated_ns)
    );
    s.push_str("addresses:\n");
    for a in &i.addresses {
        s.push_str(&format!(
            "  {:<40} {:<6} {}\n",
            a.address,
            a.role,
            a.owner.as_deref().unwrap_or("(no owner)")
        ));
    }
    if !i.comments.is_empty() {
        s.push_str("comments:\n");
        for c in &i.comments {
            s.push_str(&format!("  {} {}: {}\n", time(c.at_ns), c.author, c.text));
        }
    }
    s.push_str("history:\n");
    for h in &i.history {
        let change = match (&h.old, &h.new) {
            (Some(o), Some(n)) => format!("{o} -> {n}"),
            (None, Some(n)) => n.clone(),
            (Some(o), None) => format!("{o} ->"),
            (None, None) => String::new(),
        };
        s.push_str(&format!(
            "  {} {} {} {}\n",
            time(h.at_ns),
            h.actor,
            h.what,
            change
        ));
    }
    s
}

pub fn constituencies_text(list: &[Constituency]) -> String {
    let mut s = String::new();
    for c in list {
        s.push_str(&format!("{} ({})\n", c.code, c.name));
        if !c.notes.is_empty() {
            s.push_str(&format!("  notes: {}\n", c.notes));
        }
        for n in &c.networks {
            s.push_str(&format!("  network {n}\n"));
        }
        for k in &c.contacts {
            s.push_str(&format!(
                "  contact {} <{}> ({})\n",
                k.name, k.email, k.role
            ));
        }
    }
    s
}
