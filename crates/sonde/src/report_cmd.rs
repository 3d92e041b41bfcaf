//! `sonde report`: the studies' tables and figures from the archive, in
//! one command: a self-contained HTML page, Markdown, JSON, or a PDF
//! printed by headless Chromium; each figure also as SVG and PNG files
//! (`--figures DIR`). See docs/reports.md.

use crate::archive_args::ArchiveArgs;
use crate::failure::Failure;
use crate::results_filter::FilterArgs;
use anyhow::anyhow;
use clap::{Args, ValueEnum};
use sonde_report::report::{Provenance, Report};
use sonde_report::report_build::{build_report, Group};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Html,
    Pdf,
    Md,
    Json,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub archive: ArchiveArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The report's title (default: what it selected, as
    /// "campaign=geant-stesta, since 1d ago: results by label:step").
    #[arg(long)]
    pub title: Option<String>,
    /// Group results by a label (label:KEY; campaigns label each result
    /// with its step: label:step, the default when there are such
    /// labels), or by test, direction and target (test).
    #[arg(long, default_value = "label:step")]
    pub by: String,
    /// Report on this selection (repeatable): KEY=VALUE[,KEY=VALUE…] as
    /// `sonde compare` writes them (campaign, test, target, family,
    /// direction, or a label such as suite=open). Each selection is a
    /// group of its own, in the order given, and the groups of a test are
    /// drawn together on one chart; --since and --until apply to each.
    #[arg(long = "select", value_name = "SELECTION")]
    pub selections: Vec<String>,
    /// Report on this result only (repeatable): its figures per direction
    /// and each of its intervals drawn over the seconds of the test (every
    /// stream or direction; throughput, loss, jitter, RTT, TCP's
    /// retransmits and congestion window).
    #[arg(long = "result", value_name = "ID", conflicts_with = "selections")]
    pub results: Vec<String>,
    /// The heat maps' layout: hour-day (each group by hour of day and
    /// day), hour-step (each test's groups side by side by hour: a
    /// one-day battery), time-run (each group's runs side by side, the
    /// seconds of the test down).
    #[arg(long, default_value = "hour-day", value_name = "LAYOUT")]
    pub heat_map: sonde_report::report_heat::HeatLayout,
    #[arg(long, value_enum, default_value = "html")]
    pub format: ReportFormat,
    /// Write the report to FILE (needed for pdf; default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write each figure as DIR/ID.svg and DIR/ID.png.
    #[arg(long, value_name = "DIR")]
    pub figures: Option<PathBuf>,
}

fn run_err(e: impl std::fmt::Display) -> Failure {
    Failure::Run(anyhow!("{e}"))
}

/// What the filters select, in words.
fn described(f: &FilterArgs) -> String {
    let mut parts = Vec::new();
    let mut add = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            parts.push(format!("{k}={v}"));
        }
    };
    add("test", &f.test);
    add("target", &f.target);
    add("campaign", &f.campaign);
    add("family", &f.family);
    add("direction", &f.direction);
    if let Some((k, v)) = &f.label {
        parts.push(format!("label {k}={v}"));
    }
    if let Some(s) = f.since {
        parts.push(format!("since {} ago", sonde_model::format_duration(s)));
    }
    if let Some(u) = f.until {
        parts.push(format!("until {} ago", sonde_model::format_duration(u)));
    }
    if parts.is_empty() {
        "every result".into()
    } else {
        parts.join(", ")
    }
}

/// The report of `--result` IDs.
fn results_report(a: &ReportArgs, store: &mut sonde_archive::Store) -> Result<Report, Failure> {
    let mut results = Vec::new();
    for id in &a.results {
        let rid: sonde_model::ResultId = id
            .parse()
            .map_err(|_| Failure::Usage(anyhow!("--result {id}: not a result id (a UUID)")))?;
        let r = store.get_result(rid).map_err(run_err)?.ok_or_else(|| {
            Failure::Run(anyhow!(
                "--result {id}: no such result in {}",
                store.location()
            ))
        })?;
        results.push(r);
    }
    let provenance = Provenance {
        sonde_version: sonde_model::SONDE_VERSION.into(),
        made: sonde_campaign::rfc3339(sonde_campaign::now_ns()),
        archive: store.location().to_string(),
        queries: a.results.iter().map(|id| format!("result {id}")).collect(),
        result_ids: a.results.clone(),
    };
    let title = a
        .title
        .clone()
        .unwrap_or_else(|| format!("result {}", a.results.join(", ")));
    Ok(sonde_report::result_chart::results_report(
        &title, &results, provenance,
    ))
}

/// The report the arguments ask for.
pub fn make_report(a: &ReportArgs) -> Result<Report, Failure> {
    let mut store = crate::results_cmd::open(&a.archive)?;
    if !a.results.is_empty() {
        return results_report(a, &mut store);
    }
    let mut filter = a.filter.filter(i64::MAX);
    // Methods' trials are drawn by their methods, not as groups.
    filter.trials = false;
    let mut results = store.list_results(&filter).map_err(run_err)?;
    let methods = store
        .list_methods(
            filter.campaign.as_deref(),
            filter.since_ns,
            filter.until_ns,
            usize::MAX,
        )
        .map_err(run_err)?;
    if results.is_empty() && methods.is_empty() {
        return Err(Failure::Run(anyhow!(
            "no results in {} match {}",
            store.location(),
            described(&a.filter)
        )));
    }
    results.reverse();
    let mut groups: Vec<(String, Vec<sonde_model::TestResult>)> = Vec::new();
    if !a.selections.is_empty() {
        results.clear();
        for sel in &a.selections {
            let mut f = crate::compare_cmd::selection(sel)
                .map_err(|e| Failure::Usage(anyhow!("--select {e}")))?;
            f.since_ns = filter.since_ns;
            f.until_ns = filter.until_ns;
            f.trials = false;
            let mut found = store.list_results(&f).map_err(run_err)?;
            if found.is_empty() {
                return Err(Failure::Run(anyhow!(
                    "--select {sel}: no results in {} match",
                    store.location()
                )));
            }
            found.reverse();
            results.extend(found.iter().cloned());
            groups.push((sel.clone(), found));
        }
    }
    // Selections draw their own results only, no method of the archive.
    let methods = if a.selections.is_empty() {
        methods
    } else {
        Vec::new()
    };
    let labels: HashMap<String, String> = match a.by.strip_prefix("label:") {
        Some(key) if !key.is_empty() => store
            .label_values(&filter, key)
            .map_err(run_err)?
            .into_iter()
            .collect(),
        Some(_) => return Err(Failure::Usage(anyhow!("--by label: name the label"))),
        None if a.by == "test" => HashMap::new(),
        None => {
            return Err(Failure::Usage(anyhow!(
                "--by {}: use label:KEY or test",
                a.by
            )))
        }
    };
    let mut by_name: BTreeMap<String, Vec<sonde_model::TestResult>> = BTreeMap::new();
    for r in results.iter().filter(|_| a.selections.is_empty()) {
        let name = labels.get(&r.id.to_string()).cloned().unwrap_or_else(|| {
            let dir = match &r.spec {
                sonde_model::TestSpec::Tcp(s) => format!(" {:?}", s.direction).to_lowercase(),
                sonde_model::TestSpec::Udp(s) => format!(" {:?}", s.direction).to_lowercase(),
                sonde_model::TestSpec::Ping(_)
                | sonde_model::TestSpec::Http(_)
                | sonde_model::TestSpec::Trace(_) => String::new(),
            };
            format!("{}{dir} to {}", r.spec.kind().name(), r.spec.host())
        });
        by_name.entry(name).or_default().push(r.clone());
    }
    groups.extend(by_name);
    // The campaign endpoints each result ran between, which name its
    // directions ("A to B (with B to A)").
    let mut ends: HashMap<String, (String, String)> = HashMap::new();
    {
        let from: HashMap<String, String> = store
            .label_values(&filter, "from")
            .map_err(run_err)?
            .into_iter()
            .collect();
        for (id, to) in store.label_values(&filter, "to").map_err(run_err)? {
            if let Some(f) = from.get(&id) {
                ends.insert(id, (f.clone(), to));
            }
        }
    }
    let groups: Vec<Group> = groups
        .into_iter()
        .flat_map(|(name, results)| {
            let first = results.first().and_then(|r| ends.get(&r.id.to_string()));
            // One pair of endpoints for the whole group, or none.
            let same = first.filter(|e| {
                results
                    .iter()
                    .all(|r| ends.get(&r.id.to_string()) == Some(*e))
            });
            Group::per_direction(
                &name,
                results.clone(),
                same.map(|(a, b)| (a.as_str(), b.as_str())),
            )
        })
        .collect();
    let provenance = Provenance {
        sonde_version: sonde_model::SONDE_VERSION.into(),
        made: sonde_campaign::rfc3339(sonde_campaign::now_ns()),
        archive: store.location().to_string(),
        queries: if a.selections.is_empty() {
            vec![described(&a.filter), format!("grouped by {}", a.by)]
        } else {
            a.selections
                .iter()
                .map(|s| format!("selection {s}"))
                .collect()
        },
        result_ids: results
            .iter()
            .map(|r| r.id)
            .chain(methods.iter().map(|m| m.id))
            .map(|id| id.to_string())
            .collect(),
    };
    let title = a.title.clone().unwrap_or_else(|| {
        if a.selections.is_empty() {
            format!("{}: results by {}", described(&a.filter), a.by)
        } else {
            a.selections.join(" against ")
        }
    });
    Ok(build_report(
        &title, &groups, &methods, a.heat_map, provenance,
    ))
}

/// The Chromium to print with: $SONDE_CHROMIUM, else the first on PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SONDE_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// Prints `html` to the PDF `out` with headless Chromium.
pub fn print_pdf(html: &str, out: &Path) -> Result<(), Failure> {
    let browser = chromium().ok_or_else(|| {
        Failure::Run(anyhow!(
            "--format pdf prints with Chromium, which is not installed (apt-get install \
             chromium, or set SONDE_CHROMIUM)"
        ))
    })?;
    let dir = std::env::temp_dir().join(format!("sonde-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let page = dir.join("report.html");
    std::fs::write(&page, html)?;
    let out_abs = std::path::absolute(out)?;
    let status = std::process::Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-pdf-header-footer",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--print-to-pdf={}", out_abs.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| Failure::Run(anyhow!("{}: {e}", browser.display())))?;
    let _ = std::fs::remove_dir_all(&dir);
    if !status.success() || !out.exists() {
        return Err(Failure::Run(anyhow!(
            "{} did not print {} ({status})",
            browser.display(),
            out.display()
        )));
    }
    Ok(())
}

pub fn run(a: ReportArgs) -> Result<(), Failure> {
    if a.format == ReportFormat::Pdf && a.output.is_none() {
        return Err(Failure::Usage(anyhow!("--format pdf needs -o FILE.pdf")));
    }
    let report = make_report(&a)?;
    if let Some(dir) = &a.figures {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Usage(anyhow!("cannot make {}: {e}", dir.display())))?;
        for f in &report.figures {
            let svg = f.svg().map_err(run_err)?;
            let png = sonde_report::png::svg_to_png(&svg).map_err(run_err)?;
            std::fs::write(dir.join(format!("{}.svg", f.id)), &svg)?;
            std::fs::write(dir.join(format!("{}.png", f.id)), png)?;
        }
    }
    let text = match a.format {
        ReportFormat::Html | ReportFormat::Pdf => report.to_html().map_err(run_err)?,
        ReportFormat::Md => {
            let dir = a
                .figures
                .as_ref()
                .map_or_else(|| "figures".to_string(), |d| d.display().to_string());
            report.to_markdown(&dir)
        }
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
    };
    match (&a.output, a.format) {
        (Some(out), ReportFormat::Pdf) => print_pdf(&text, out)?,
        (Some(out), _) => std::fs::write(out, text)
            .map_err(|e| Failure::Usage(anyhow!("cannot write {}: {e}", out.display())))?,
        (None, _) => {
            use std::io::Write;
            std::io::stdout().write_all(text.as_bytes())?;
        }
    }
    Ok(())
}
