//! The archive's PostgreSQL over TLS, against the real PostgreSQL on
//! 127.0.0.1:5433 that accepts TLS only (scripts/services.sh: its own CA,
//! a certificate for localhost and 127.0.0.1, `hostssl` lines only).

use sonde_archive::{Placement, Store};
use sonde_model::{
    Figures, HostEnv, PeerKind, PingSpec, RttStats, Summary, TestEnv, TestResult, Timestamp,
};
use std::path::PathBuf;

mod common;
use common::{admin, with_param, CA, PG};

const SERVER: &str = "postgres://root@127.0.0.1:5433/test";

fn ping() -> TestResult {
    let spec = PingSpec {
        host: "192.0.2.7".into(),
        ..PingSpec::default()
    };
    let mut r = TestResult::new(
        spec.into(),
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        Timestamp::now(),
    );
    r.summary = Summary {
        round_trip: Some(Figures {
            rtt_ms: RttStats::from_ms(&[12.5, 12.7, 12.6]),
            ..Figures::default()
        }),
        ..Summary::default()
    };
    r
}

/// A schema of this test's own, dropped when the guard goes.
struct Schema(String);

impl Schema {
    fn new(test: &str) -> Self {
        let s = Self(format!("sonde_tls{}_{test}", std::process::id()));
        s.drop_it();
        s
    }
    /// `url` with this schema.
    fn at(&self, url: &str) -> String {
        with_param(url, &format!("schema={}", self.0))
    }
    fn drop_it(&self) {
        admin()
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.0))
            .unwrap();
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        self.drop_it();
    }
}

/// What opening the archive at `url` is refused with.
fn refused(url: &str) -> String {
    match Store::open(url) {
        Ok(_) => panic!("{url} opened; it should have been refused"),
        Err(e) => e.to_string(),
    }
}

/// A CA of its own (rcgen), not the one that signed the server's
/// certificate, in a file; the file's path.
fn another_ca(dir: &std::path::Path) -> PathBuf {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "not the sonde test CA");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("other-ca.pem");
    std::fs::write(&path, cert.pem()).unwrap();
    path
}

/// Whether the server's backend of the client named `application` is
/// over TLS, and with what version; asked of pg_stat_ssl.
fn backend_tls(application: &str) -> Vec<(bool, Option<String>)> {
    admin()
        .query(
            "SELECT s.ssl, s.version FROM pg_stat_ssl s \
             JOIN pg_stat_activity a ON a.pid = s.pid WHERE a.application_name = $1",
            &[&application],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[test]
fn a_store_over_tls_round_trips_a_result_on_an_encrypted_backend() {
    let schema = Schema::new("roundtrip");
    let application = format!("sonde-tls-test-{}", std::process::id());
    let url = schema.at(&with_param(PG, &format!("application_name={application}")));
    let mut s = Store::open(&url).unwrap_or_else(|e| panic!("{e}"));
    let r = ping();
    assert!(s.put_result(&r, &Placement::default()).unwrap());
    assert_eq!(s.get_result(r.id).unwrap().as_ref(), Some(&r));
    // The store's own backend, seen by the server: TLS.
    let seen = backend_tls(&application);
    assert_eq!(seen.len(), 1, "one backend named {application}: {seen:?}");
    assert!(seen[0].0, "the store's backend is not over TLS: {seen:?}");
    assert!(
        seen[0]
            .1
            .as_deref()
            .is_some_and(|v| v.starts_with("TLSv1.")),
        "{seen:?}"
    );
    // And the admin client of the tests, sonde's connector too.
    let own: bool = admin()
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(own);
    drop(s);
}

#[test]
fn sslmode_disable_is_refused_by_a_server_that_requires_tls() {
    let schema = Schema::new("disable");
    let e = refused(&schema.at(&format!("{SERVER}?sslmode=disable")));
    // The server's own words: no hostssl line matches a plain connection.
    assert!(e.contains("no pg_hba.conf entry"), "{e}");
    assert!(e.contains("no encryption"), "{e}");
    assert!(
        e.contains("archive postgres://root@127.0.0.1:5433/test"),
        "{e}"
    );
}

#[test]
fn a_server_certificate_not_signed_by_the_ca_file_is_refused_naming_the_file() {
    let schema = Schema::new("wrongca");
    let dir = std::env::temp_dir().join(format!("sonde-tls-wrongca-{}", std::process::id()));
    let ca = another_ca(&dir);
    // The chain is verified in every mode that asks for TLS.
    for mode in ["verify-full", "verify-ca", "require"] {
        let url = format!("{SERVER}?sslmode={mode}&sslrootcert={}", ca.display());
        let e = refused(&schema.at(&url));
        assert!(e.contains("not trusted"), "{mode}: {e}");
        assert!(
            e.contains(&format!(
                "not signed by the CA in sslrootcert {}",
                ca.display()
            )),
            "{mode}: {e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_ca_file_is_named() {
    let schema = Schema::new("noca");
    let missing = format!("/nonexistent/sonde-{}/ca.pem", std::process::id());
    for mode in ["verify-full", "prefer"] {
        let e = refused(&schema.at(&format!("{SERVER}?sslmode={mode}&sslrootcert={missing}")));
        assert!(
            e.contains(&format!("sslrootcert {missing}: cannot read it")),
            "{mode}: {e}"
        );
    }
}

#[test]
fn an_unknown_sslmode_is_refused_by_name() {
    let e = refused(&format!("{SERVER}?sslmode=verify_full&schema=never_made"));
    assert!(e.contains("sslmode 'verify_full'"), "{e}");
}

#[test]
fn verify_ca_leaves_the_name_unchecked_and_verify_full_checks_it() {
    // TCP to 127.0.0.1, TLS for a name the certificate does not carry.
    let schema = Schema::new("names");
    let elsewhere =
        format!("postgres://root@elsewhere.invalid:5433/test?hostaddr=127.0.0.1&sslrootcert={CA}");
    for mode in ["verify-ca", "require"] {
        let url = schema.at(&with_param(&elsewhere, &format!("sslmode={mode}")));
        Store::open(&url).unwrap_or_else(|e| panic!("{mode}: {e}"));
    }
    let e = refused(&schema.at(&with_param(&elsewhere, "sslmode=verify-full")));
    assert!(e.contains("not for the host"), "{e}");
    // The right name, verify-full: the tests' own URL (PG) opens, as
    // every other test shows; by host name too.
    let localhost =
        format!("postgres://root@localhost:5433/test?sslmode=verify-full&sslrootcert={CA}");
    Store::open(&schema.at(&localhost)).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn prefer_uses_tls_when_it_verifies_and_says_both_failures_when_not() {
    let schema = Schema::new("prefer");
    let application = format!("sonde-tls-prefer-{}", std::process::id());
    let url = schema.at(&format!(
        "{SERVER}?sslrootcert={CA}&application_name={application}"
    ));
    let _s = Store::open(&url).unwrap_or_else(|e| panic!("{e}"));
    let seen = backend_tls(&application);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].0,
        "sslmode=prefer (by default) did not use TLS: {seen:?}"
    );
    // Against the system's roots the test CA is unknown: TLS fails, then
    // the plain connection the server refuses. Both are said.
    let e = refused(&schema.at(SERVER));
    assert!(e.contains("not trusted"), "{e}");
    assert!(e.contains("system's root CAs"), "{e}");
    assert!(e.contains("then without TLS"), "{e}");
    assert!(e.contains("no encryption"), "{e}");
}

#[test]
fn the_plain_server_still_opens_without_an_sslmode() {
    // What sonde's other tests and older configurations give: no
    // sslmode (prefer) to the PostgreSQL on 5432; TLS if its certificate
    // verifies, plain otherwise.
    let mut c = sonde_archive::connect_postgres("postgres://root@127.0.0.1:5432/test")
        .unwrap_or_else(|e| panic!("{e}"));
    let one: i32 = c.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
}
