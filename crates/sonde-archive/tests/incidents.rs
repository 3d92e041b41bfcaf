//! Incidents in the archive, on SQLite and PostgreSQL: owners found by
//! the longest prefix when an incident is opened, every change with its
//! history row, templates and the mail record.

mod common;

use sonde_archive::{ArchiveError, IncidentFilter, Store};
use sonde_incidents::{
    Constituency, Contact, IncidentChange, IncidentError, MailTemplate, NewIncident, Role,
    Severity, Status,
};
use std::net::IpAddr;

fn constituency(code: &str, name: &str, nets: &[&str], email: &str) -> Constituency {
    Constituency {
        code: code.into(),
        name: name.into(),
        notes: format!("{name} notes"),
        networks: nets.iter().map(|n| n.parse().unwrap()).collect(),
        contacts: vec![Contact {
            name: format!("{name} abuse desk"),
            email: email.into(),
            role: "abuse".into(),
        }],
    }
}

/// LITNET with a /32 and a /22, EENET with a /48 inside LITNET's /32.
fn litnet_and_eenet(s: &mut Store) {
    s.add_constituency(
        &constituency(
            "litnet",
            "LITNET",
            &["2001:db8::/32", "198.51.100.0/22"],
            "abuse@litnet.example",
        ),
        1,
    )
    .unwrap();
    s.add_constituency(
        &constituency("eenet", "EENET", &["2001:db8:1::/48"], "cert@eenet.example"),
        2,
    )
    .unwrap();
}

#[test]
fn incidents_keep_owners_changes_and_history() {
    common::on_both("incidents", |open, _| {
        let mut s = open();
        litnet_and_eenet(&mut s);
        s.add_network("eenet", "198.51.101.128/25".parse().unwrap(), 3)
            .unwrap();
        // The same prefix, written differently, is refused naming both.
        let e = s
            .add_network("eenet", "198.51.100.1/22".parse().unwrap(), 4)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "198.51.100.0/22 is owned by both litnet and eenet"
        );
        let e = s
            .add_network("nobody", "203.0.113.0/24".parse().unwrap(), 4)
            .unwrap_err();
        assert!(
            matches!(e, ArchiveError::Incident(IncidentError::NotFound { .. })),
            "{e}"
        );
        let e = s
            .add_constituency(&constituency("litnet", "again", &[], "a@b.example"), 5)
            .unwrap_err();
        assert_eq!(e.to_string(), "constituency litnet already exists");

        let list = s.constituencies().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].code, "eenet");
        assert_eq!(
            list[0]
                .networks
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>(),
            ["2001:db8:1::/48", "198.51.101.128/25"]
        );
        assert_eq!(list[1].contacts[0].email, "abuse@litnet.example");
        let (owner, by) = s
            .owner_of("198.51.101.200".parse().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(
            (owner.code.as_str(), by.to_string().as_str()),
            ("eenet", "198.51.101.128/25")
        );
        assert!(s
            .owner_of("203.0.113.1".parse().unwrap())
            .unwrap()
            .is_none());

        let new = NewIncident {
            kind: "loss-high".into(),
            severity: Severity::High,
            summary: "loss 7% toward the campus".into(),
            addresses: vec![
                ("2001:db8:1:5::9".parse().unwrap(), Role::Target),
                ("2001:db8:9::1".parse().unwrap(), Role::Source),
                ("198.51.101.7".parse().unwrap(), Role::Source),
                ("198.51.101.200".parse().unwrap(), Role::Target),
                ("203.0.113.1".parse().unwrap(), Role::Target),
            ],
            source: "alert:loss-high".into(),
        };
        let id = s.open_incident(&new, 100).unwrap();
        assert_eq!(id, 1);
        let second = s
            .open_incident(
                &NewIncident {
                    kind: "scan".into(),
                    severity: Severity::Low,
                    summary: "a scan".into(),
                    addresses: vec![("2001:db8:2::1".parse().unwrap(), Role::Source)],
                    source: "cli".into(),
                },
                200,
            )
            .unwrap();
        assert_eq!(second, 2);

        let i = s.incident(id).unwrap().unwrap();
        let owners: Vec<Option<&str>> = i.addresses.iter().map(|a| a.owner.as_deref()).collect();
        assert_eq!(
            owners,
            [
                Some("eenet"),
                Some("litnet"),
                Some("litnet"),
                Some("eenet"),
                None
            ]
        );
        assert_eq!(i.owners(), ["eenet", "litnet"]);
        assert_eq!((i.state.as_str(), i.status), ("reported", Status::Open));
        assert_eq!(i.history.len(), 1);
        assert_eq!(i.history[0].what, "opened");
        assert_eq!(i.history[0].actor, "alert:loss-high");

        s.comment_incident(id, "ana", "asked the campus NOC", 110)
            .unwrap();
        s.change_incident(
            id,
            &IncidentChange {
                state: Some("confirmed".into()),
                status: None,
                severity: Some(Severity::Critical),
            },
            "ana",
            120,
        )
        .unwrap();
        // The same state again changes nothing and writes no history.
        s.change_incident(
            id,
            &IncidentChange {
                state: Some("confirmed".into()),
                ..Default::default()
            },
            "ana",
            125,
        )
        .unwrap();
        let e = s.comment_incident(99, "ana", "x", 130).unwrap_err();
        assert_eq!(e.to_string(), "incident 99 does not exist");

        let t = MailTemplate {
            name: "first-notice".into(),
            subject: "[#{incident.id}] {incident.type}".into(),
            body: "Dear {constituency.name}".into(),
            set_state: Some("notified".into()),
            set_status: Some(Status::Stalled),
        };
        s.put_mail_template(&t, 130).unwrap();
        assert_eq!(s.mail_template("first-notice").unwrap(), t);
        assert!(s.mail_template("nope").is_err());
        s.record_mail(id, &t, &["cert@eenet.example".into()], "ana", 140)
            .unwrap();

        let i = s.incident(id).unwrap().unwrap();
        assert_eq!(
            (i.state.as_str(), i.status, i.severity),
            ("notified", Status::Stalled, Severity::Critical)
        );
        assert_eq!(i.updated_ns, 140);
        assert_eq!(i.comments.len(), 1);
        assert_eq!(i.comments[0].text, "asked the campus NOC");
        let h: Vec<(i64, &str, Option<&str>, Option<&str>)> = i
            .history
            .iter()
            .map(|h| (h.at_ns, h.what.as_str(), h.old.as_deref(), h.new.as_deref()))
            .collect();
        assert_eq!(
            h,
            [
                (100, "opened", None, Some("reported")),
                (110, "comment", None, Some("1")),
                (120, "state", Some("reported"), Some("confirmed")),
                (120, "severity", Some("high"), Some("critical")),
                (140, "state", Some("confirmed"), Some("notified")),
                (140, "status", Some("open"), Some("stalled")),
                (
                    140,
                    "mail",
                    None,
                    Some("first-notice to cert@eenet.example")
                ),
            ]
        );

        let ids = |f: IncidentFilter, s: &mut sonde_archive::Store| {
            s.incidents(&f)
                .unwrap()
                .iter()
                .map(|i| i.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(IncidentFilter::default(), &mut s), [2, 1]);
        let stalled = IncidentFilter {
            status: Some(Status::Stalled),
            ..Default::default()
        };
        assert_eq!(ids(stalled, &mut s), [1]);
        let eenet = IncidentFilter {
            owner: Some("eenet".into()),
            ..Default::default()
        };
        assert_eq!(ids(eenet, &mut s), [1]);
        let litnet_open = IncidentFilter {
            owner: Some("litnet".into()),
            status: Some(Status::Open),
            ..Default::default()
        };
        assert_eq!(ids(litnet_open, &mut s), [2]);
    });
}

#[test]
fn incidents_opened_at_once_from_two_connections_get_distinct_ids() {
    common::on_both("incident_ids", |open, _| {
        open(); // migrated before the threads race
        let new = NewIncident {
            kind: "loss-high".into(),
            severity: Severity::default(),
            summary: "loss".into(),
            addresses: vec![("2001:db8::1".parse().unwrap(), Role::Target)],
            source: "alert:loss-high".into(),
        };
        let ids: Vec<i64> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let mut store = open();
                        (0..20)
                            .map(|n| {
                                let id = store.open_incident(&new, n).unwrap();
                                store.comment_incident(id, "a", "b", n).unwrap();
                                id
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect()
        });
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=40).collect::<Vec<i64>>());
        let mut s = open();
        let all = s
            .incidents(&IncidentFilter {
                limit: Some(1000),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(all.len(), 40);
        assert_eq!(s.incident(17).unwrap().unwrap().history.len(), 2);
    });
}

#[test]
fn constituencies_are_changed_and_removed_and_incidents_keep_their_owners() {
    common::on_both("constituency_edits", |open, _| {
        let mut s = open();
        litnet_and_eenet(&mut s);

        s.set_constituency("litnet", Some("LITNET CERT"), None)
            .unwrap();
        s.set_constituency("litnet", None, Some("the Lithuanian NREN"))
            .unwrap();
        let lit = s
            .owner_of("2001:db8::1".parse().unwrap())
            .unwrap()
            .unwrap()
            .0;
        assert_eq!(
            (lit.name.as_str(), lit.notes.as_str()),
            ("LITNET CERT", "the Lithuanian NREN")
        );
        let e = s.set_constituency("litnet", Some(""), None).unwrap_err();
        assert!(e.to_string().contains("name"), "{e}");
        let e = s.set_constituency("nobody", Some("x"), None).unwrap_err();
        assert!(
            matches!(e, ArchiveError::Incident(IncidentError::NotFound { .. })),
            "{e}"
        );

        // A network taken away: the shorter prefix owns the address again;
        // a prefix written differently is the same prefix.
        let inner: IpAddr = "2001:db8:1::5".parse().unwrap();
        assert_eq!(s.owner_of(inner).unwrap().unwrap().0.code, "eenet");
        s.remove_network("eenet", "2001:db8:1::1/48".parse().unwrap())
            .unwrap();
        assert_eq!(s.owner_of(inner).unwrap().unwrap().0.code, "litnet");
        // Only its owner can give it up.
        let e = s
            .remove_network("eenet", "198.51.100.0/22".parse().unwrap())
            .unwrap_err();
        assert!(e.to_string().contains("198.51.100.0/22 of eenet"), "{e}");

        s.remove_contact("eenet", "cert@eenet.example").unwrap();
        let e = s.remove_contact("eenet", "cert@eenet.example").unwrap_err();
        assert!(e.to_string().contains("cert@eenet.example of eenet"), "{e}");

        // An incident opened while litnet owned its address keeps litnet
        // as the owner after litnet is gone; nobody owns the address now.
        let id = s
            .open_incident(
                &NewIncident {
                    kind: "loss-high".into(),
                    severity: Severity::High,
                    summary: "loss".into(),
                    addresses: vec![("198.51.100.9".parse().unwrap(), Role::Target)],
                    source: "test".into(),
                },
                10,
            )
            .unwrap();
        s.remove_constituency("litnet").unwrap();
        assert!(s
            .owner_of("198.51.100.9".parse().unwrap())
            .unwrap()
            .is_none());
        let codes: Vec<String> = s
            .constituencies()
            .unwrap()
            .into_iter()
            .map(|c| c.code)
            .collect();
        assert_eq!(codes, ["eenet"]);
        let kept = s.incident(id).unwrap().unwrap();
        assert_eq!(kept.addresses[0].owner.as_deref(), Some("litnet"));
        let e = s.remove_constituency("litnet").unwrap_err();
        assert!(
            matches!(e, ArchiveError::Incident(IncidentError::NotFound { .. })),
            "{e}"
        );
        // Its code is free again, with none of its old networks.
        s.add_constituency(
            &constituency("litnet", "LITNET", &[], "a@litnet.example"),
            11,
        )
        .unwrap();
        assert!(s
            .owner_of("2001:db8::1".parse().unwrap())
            .unwrap()
            .is_none());
    });
}
