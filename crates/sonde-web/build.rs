//! Builds the web portal (portal/, plain JavaScript, uPlot for charts)
//! with npm and vite into `$OUT_DIR/portal`, which `src/assets.rs` embeds
//! in the binary. Front-end libraries come from npm through the lock file
//! (`npm ci`); nothing third-party is kept in the repository.
//!
//! `npm ci` runs only when `portal/node_modules` is missing or older than
//! the lock file; the whole script reruns only when the portal's sources,
//! its manifest or its lock change, so a rebuild with no change to them
//! costs nothing. `NPM` names another npm.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

fn main() {
    let crate_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let portal = crate_dir.join("portal");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("portal");
    for watched in [
        "package.json",
        "package-lock.json",
        "index.html",
        "vite.config.js",
        "src",
    ] {
        println!("cargo:rerun-if-changed=portal/{watched}");
    }
    println!("cargo:rerun-if-env-changed=NPM");
    let npm = std::env::var("NPM").unwrap_or_else(|_| "npm".into());

    if let Err(e) = Command::new(&npm)
        .arg("--version")
        .stdout(Stdio::null())
        .status()
    {
        fail(&format!(
            "the web portal is built with npm, and '{npm}' cannot be run ({e}); \
             install Node.js and npm (scripts/system-deps.sh does, with apt-get)"
        ));
    }
    if needs_install(&portal) {
        run(&npm, &["ci", "--no-audit", "--no-fund"], &portal, None);
    }
    run(&npm, &["run", "build"], &portal, Some(&out));
    if !out.join("index.html").exists() {
        fail(&format!(
            "npm run build wrote no {}",
            out.join("index.html").display()
        ));
    }
}

/// Whether `node_modules` is missing or older than the lock file (npm
/// writes `node_modules/.package-lock.json` on every install).
fn needs_install(portal: &Path) -> bool {
    let modified = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let installed = modified(portal.join("node_modules/.package-lock.json"));
    let lock = modified(portal.join("package-lock.json")).unwrap_or(SystemTime::UNIX_EPOCH);
    installed.is_none_or(|i| i < lock)
}

/// Runs npm in `dir`; its output goes to stderr (cargo reads a build
/// script's stdout for its own directives).
fn run(npm: &str, args: &[&str], dir: &Path, out: Option<&Path>) {
    let mut cmd = Command::new(npm);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::io::stderr());
    if let Some(out) = out {
        cmd.env("SONDE_PORTAL_OUT", out);
    }
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!(
            "'{npm} {}' in {} failed ({s}); its output is above",
            args.join(" "),
            dir.display()
        )),
        Err(e) => fail(&format!("cannot run '{npm} {}': {e}", args.join(" "))),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: sonde-web: {message}");
    panic!("sonde-web: {message}");
}
