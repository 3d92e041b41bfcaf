//! What the archive's tests share: both backends, each test in its own
//! place.

#![allow(dead_code)]

use sonde_archive::Store;

/// The CA that signed the certificate of the PostgreSQL on 5433
/// (scripts/services.sh makes both).
pub const CA: &str = "/var/tmp/sonde-pg-tls/certs/ca.pem";

/// The PostgreSQL the archive's tests use: TLS only (scripts/services.sh),
/// its certificate verified, name included.
pub const PG: &str = "postgres://root@127.0.0.1:5433/test?sslmode=verify-full&sslrootcert=/var/tmp/sonde-pg-tls/certs/ca.pem";

/// `url` with one more query parameter `kv` (`key=value`).
pub fn with_param(url: &str, kv: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{kv}")
}

/// The archive in `schema` of the test PostgreSQL.
pub fn schema_url(schema: &str) -> String {
    with_param(PG, &format!("schema={schema}"))
}

/// A client of the test PostgreSQL, over TLS as sonde connects.
pub fn admin() -> postgres::Client {
    sonde_archive::connect_postgres(PG).unwrap_or_else(|e| {
        panic!("PostgreSQL over TLS on 127.0.0.1:5433 (scripts/services.sh): {e}")
    })
}

/// A SQLite file and a PostgreSQL schema named for `test`, each given to
/// `body`; both removed after.
pub fn on_both(test: &str, body: impl Fn(&(dyn Fn() -> Store + Sync), &str)) {
    let dir = std::env::temp_dir().join(format!("sonde-archive-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = dir.join("sonde.db");
    let path = file.to_str().unwrap().to_string();
    body(&|| Store::open(&path).unwrap(), &path);
    let _ = std::fs::remove_dir_all(&dir);

    let schema = format!("sonde_t{}_{test}", std::process::id());
    let url = schema_url(&schema);
    let mut admin = admin();
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
    body(&|| Store::open(&url).unwrap(), &url);
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}

/// Runs `sql` on the archive at `location` (a SQLite file, or a schema of
/// the test PostgreSQL), as an older sonde's archive would be.
/// Undoes the migrations after 11 (run steps, campaigns' overrides,
/// results' addresses, path changes), for a test that takes an archive
/// back to an older schema.
pub const UNDO_AFTER_11: &str =
    "DROP TABLE result_latest; DROP TABLE indexed_metrics; ALTER TABLE path_latest ADD COLUMN \
     throughput_bps DOUBLE PRECISION; ALTER TABLE path_latest ADD COLUMN loss_pct DOUBLE \
     PRECISION; ALTER TABLE path_latest ADD COLUMN jitter_ms DOUBLE PRECISION; ALTER TABLE \
     path_latest ADD COLUMN rtt_p50_ms DOUBLE PRECISION; DROP TABLE path_changes; DROP TABLE \
     run_steps; ALTER TABLE \
     campaigns DROP COLUMN overrides; ALTER TABLE results DROP COLUMN source_addr; ALTER TABLE \
     results DROP COLUMN target_addr;";

pub fn raw(location: &str, sql: &str) {
    if let Some((_, schema)) = location.split_once("schema=") {
        admin()
            .batch_execute(&format!("SET search_path TO {schema}; {sql}"))
            .unwrap();
    } else {
        rusqlite::Connection::open(location)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    }
}

/// Takes the archive at `location` back to schema 17, rows and all, as
/// a test of an older schema's archive starts: `result_latest` without
/// its results' columns (19), figures and labels without their start,
/// and on PostgreSQL each table whole again, not partitioned, with its
/// foreign keys (18).
pub fn back_to_17(location: &str) {
    back_to_18(location);
    if location.contains("schema=") {
        raw(location, &unpartition_sql());
    } else {
        raw(
            location,
            "ALTER TABLE result_figures DROP COLUMN start_ns; ALTER TABLE result_labels DROP \
             COLUMN start_ns; DELETE FROM sonde_schema WHERE version = 18;",
        );
    }
}

/// Takes the archive at `location` back to schema 18: `result_latest`
/// without its copy of each result's columns (and readings' summaries
/// without their sums, 20).
pub fn back_to_18(location: &str) {
    back_to_19(location);
    raw(location, &undo_19());
}

/// Takes the archive at `location` back to schema 19: readings'
/// summaries without their sums.
pub fn back_to_19(location: &str) {
    raw(
        location,
        "ALTER TABLE readings_15min DROP COLUMN total; ALTER TABLE readings_15min DROP COLUMN \
         total_count; ALTER TABLE readings_day DROP COLUMN total; ALTER TABLE readings_day DROP \
         COLUMN total_count; DELETE FROM sonde_schema WHERE version = 20;",
    );
}

/// SQL that takes an archive of schema 19 back to 18 ([`back_to_18`]).
fn undo_19() -> String {
    let mut sql: String = sonde_archive::schema::LATEST_COLUMNS
        .iter()
        .map(|c| format!("ALTER TABLE result_latest DROP COLUMN {c}; "))
        .collect();
    sql.push_str("DELETE FROM sonde_schema WHERE version = 19;");
    sql
}

/// SQL that takes a partitioned archive of schema 18 back to schema 17's
/// tables, rows and all (PostgreSQL).
fn unpartition_sql() -> String {
    let mut sql = String::new();
    for (t, cols) in [
        ("results", "*"),
        ("intervals", "*"),
        ("result_figures", "result_id, direction, metric, value"),
        ("result_labels", "result_id, key, value"),
    ] {
        sql.push_str(&format!(
            "CREATE TABLE {t}_old AS SELECT {cols} FROM {t}; DROP TABLE {t} CASCADE; \
             ALTER TABLE {t}_old RENAME TO {t}; "
        ));
    }
    sql.push_str(
        "ALTER TABLE results ADD PRIMARY KEY (id); \
         CREATE INDEX results_by_start ON results (start_ns); \
         CREATE INDEX results_by_target ON results (target, start_ns); \
         CREATE INDEX results_by_source ON results (source, start_ns); \
         CREATE INDEX results_by_campaign ON results (campaign, start_ns); \
         CREATE INDEX results_by_method ON results (method_id); \
         ALTER TABLE intervals ADD PRIMARY KEY (result_id, direction, size_bytes, start_s); \
         ALTER TABLE intervals ADD FOREIGN KEY (result_id) REFERENCES results (id); \
         CREATE INDEX intervals_by_time ON intervals (at_ns); \
         ALTER TABLE result_figures ADD PRIMARY KEY (result_id, direction, metric); \
         ALTER TABLE result_figures ADD FOREIGN KEY (result_id) REFERENCES results (id); \
         ALTER TABLE result_labels ADD PRIMARY KEY (result_id, key); \
         ALTER TABLE result_labels ADD FOREIGN KEY (result_id) REFERENCES results (id); \
         CREATE INDEX result_labels_by_key ON result_labels (key, value); \
         ALTER TABLE path_changes ADD FOREIGN KEY (result_id) REFERENCES results (id); \
         DELETE FROM sonde_schema WHERE version = 18;",
    );
    sql
}

/// The integer `sql` gives (its first column of its first row) on the
/// archive at `location`.
pub fn count(location: &str, sql: &str) -> i64 {
    if let Some((_, schema)) = location.split_once("schema=") {
        let mut c = admin();
        c.batch_execute(&format!("SET search_path TO {schema}"))
            .unwrap();
        c.query_one(sql, &[]).unwrap().get(0)
    } else {
        rusqlite::Connection::open(location)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    }
}
