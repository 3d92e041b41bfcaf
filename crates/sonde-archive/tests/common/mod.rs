//! What the archive's tests share: both backends, each test in its own
//! place.

#![allow(dead_code)]

use sonde_archive::Store;

pub const PG: &str = "postgres://root@127.0.0.1:5432/test";

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
    let url = format!("{PG}?schema={schema}");
    let mut admin =
        postgres::Client::connect(PG, postgres::NoTls).expect("PostgreSQL on 127.0.0.1:5432");
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
    body(&|| Store::open(&url).unwrap(), &url);
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}
