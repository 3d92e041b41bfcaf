//! Running a method from the command line: Ctrl-C stops it after the
//! trial in progress, the result is printed as text or as one JSON
//! document (`-J`), and a failure gets its exit code.

use crate::failure::Failure;
use sonde_model::{Event, MethodResult};
use sonde_run::Events;

/// How a method's result leaves: as JSON or text, and kept in an archive
/// (`--archive`, resolved) or not.
#[derive(Debug, Clone, Default)]
pub struct MethodOut {
    pub json: bool,
    pub archive: Option<crate::archive_args::Kept>,
}

impl MethodOut {
    pub fn new(json: bool, archive: &crate::archive_args::KeepArgs) -> Self {
        Self {
            json,
            archive: archive.kept(),
        }
    }
}

/// Keeps `result` if asked (before printing, so that what was printed is
/// kept), then prints it as JSON or as `text` renders it; an interrupted
/// method is printed, then reported as interrupted (130).
pub fn print_method(
    result: &MethodResult,
    out: &MethodOut,
    text: impl FnOnce(&MethodResult) -> String,
) -> Result<(), Failure> {
    use std::io::Write;
    if let Some(kept) = &out.archive {
        kept.method(result)?;
    }
    let json = out.json;
    let out = if json {
        serde_json::to_string_pretty(result)? + "\n"
    } else {
        text(result)
    };
    std::io::stdout().write_all(out.as_bytes())?;
    if result.interrupted {
        return Err(Failure::Interrupted);
    }
    Ok(())
}

/// Runs `body` with a new [`Events`] hub whose every event `print`
/// reads on a thread of its own as it comes (a method's progress,
/// `Event::Method`, among its trials' events), and returns what `body`
/// returned once `print` has had the last of them: what it prints comes
/// before whatever the caller prints next.
pub fn with_printer<T>(print: impl FnMut(&Event) + Send, body: impl FnOnce(&Events) -> T) -> T {
    /// Ends the printer's stream even if `body` panics.
    struct Close<'a>(&'a Events);
    impl Drop for Close<'_> {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    let events = Events::new();
    let rx = events.subscribe();
    std::thread::scope(|scope| {
        let mut print = print;
        let printer = scope.spawn(move || rx.iter().for_each(|e| print(&e)));
        let out = {
            let _close = Close(&events);
            body(&events)
        };
        let _ = printer.join();
        out
    })
}

/// A method's failure with its exit code: a bad request (the method's
/// own flags, or a trial's) is a usage error (2), naming the flag.
pub fn method_failure(e: sonde_methods::MethodError) -> Failure {
    use sonde_methods::MethodError;
    match e {
        MethodError::Trial { source, .. } => Failure::from_run(source, true),
        e if e.is_usage() => Failure::Usage(e.into()),
        e => Failure::Run(e.into()),
    }
}

/// A chart file asked for (`--chart FILE.svg`), created before the method
/// runs, so that a path that cannot be written is a usage error before any
/// traffic is sent.
pub struct ChartFile {
    path: std::path::PathBuf,
    file: std::fs::File,
}

impl ChartFile {
    pub fn create(path: Option<&std::path::Path>) -> Result<Option<Self>, Failure> {
        path.map(|p| {
            std::fs::File::create(p)
                .map(|file| Self {
                    path: p.to_path_buf(),
                    file,
                })
                .map_err(|e| Failure::Usage(anyhow::anyhow!("--chart {}: {e}", p.display())))
        })
        .transpose()
    }

    /// Draws `chart` into the file: SVG, or PNG when its name ends in
    /// `.png`.
    pub fn write(mut self, chart: &sonde_report::chart::Chart) -> Result<(), Failure> {
        use std::io::Write;
        let failed =
            |e: String| Failure::Run(anyhow::anyhow!("--chart {}: {e}", self.path.display()));
        let svg = sonde_report::chart::render_svg(chart).map_err(|e| failed(e.to_string()))?;
        let png = self
            .path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"));
        let bytes = if png {
            sonde_report::png::svg_to_png(&svg).map_err(|e| failed(e.to_string()))?
        } else {
            svg.into_bytes()
        };
        self.file
            .write_all(&bytes)
            .map_err(|e| failed(e.to_string()))
    }
}
