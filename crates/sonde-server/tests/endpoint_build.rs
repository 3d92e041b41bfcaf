//! The test endpoint builds alone, small: none of the daemon's stacks
//! (the async runtime and TLS of the HTTP side and the HTTP load
//! generator, the archive's databases, mail) come with it. Read from
//! `cargo tree`, as a packager building `sonde-server` would get it.

use std::process::Command;

#[test]
fn the_endpoint_pulls_in_no_async_runtime_tls_database_or_mail() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            "sonde-server",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let crates: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(crates.contains("sonde-engine"), "{crates:?}");
    let heavy = [
        "tokio",
        "rustls",
        "h2",
        "hyper",
        "rusqlite",
        "libsqlite3-sys",
        "postgres",
        "tokio-postgres",
        "lettre",
        "sonde-run",
        "sonde-archive",
    ];
    let found: Vec<&&str> = heavy.iter().filter(|c| crates.contains(**c)).collect();
    assert!(found.is_empty(), "sonde-server pulls in {found:?}");
    eprintln!("sonde-server: {} crates", crates.len());
}
