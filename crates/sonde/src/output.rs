//! Running a spec from the command line: the runner in the library, the
//! live lines and warnings printed from its events on a thread of their
//! own, the result printed as text or JSON at the end.

use crate::cli::Failure;
use crate::run_args::JsonFormat;
use sonde_model::{Event, TestResult, TestSpec};
use sonde_report::{result_json, summary, JsonLayout, LiveText};
use sonde_run::{Events, RunError, Stop};
use std::io::Write;
use std::thread::JoinHandle;

/// How a command prints its test.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: Option<JsonFormat>,
    /// Live lines (connection, intervals, answers) on standard output.
    pub live: bool,
    /// The spec was spelled with flags: a broken rule names the flag
    /// (a spec file's mistakes name its key).
    pub flags: bool,
}

/// Runs `spec` with tcp/udp's output rule: live lines unless JSON.
pub fn run_and_print(spec: &TestSpec, json: Option<JsonFormat>) -> Result<(), Failure> {
    Output {
        json,
        live: json.is_none(),
        flags: true,
    }
    .run(spec)
}

impl Output {
    /// Runs `spec`, printing as it goes and at the end; an interrupted
    /// result is printed, then reported as [`Failure::Interrupted`].
    pub fn run(self, spec: &TestSpec) -> Result<(), Failure> {
        let events = Events::new();
        let printer = self.printer(spec, events.subscribe());
        let stop = interrupt_flag();
        let outcome = sonde_run::run(spec, &stop, &events);
        events.close();
        let _ = printer.join();
        let result = outcome.map_err(|e| Failure::from_run(e, self.flags))?;
        self.print(&result)?;
        if result.interrupted {
            return Err(Failure::Interrupted);
        }
        Ok(())
    }

    /// The thread that prints live lines (when asked) and warnings.
    fn printer(self, spec: &TestSpec, rx: std::sync::mpsc::Receiver<Event>) -> JoinHandle<()> {
        let mut text = LiveText::for_spec(spec);
        std::thread::spawn(move || {
            let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
            for event in rx {
                let lines = text.on_event(&event);
                if self.live && !lines.stdout.is_empty() {
                    let _ = out.write_all(lines.stdout.as_bytes());
                    let _ = out.flush();
                }
                if !lines.stderr.is_empty() {
                    let _ = err.write_all(lines.stderr.as_bytes());
                }
            }
        })
    }

    /// The result: sonde's JSON, iperf3's layout, or the text summary.
    fn print(self, result: &TestResult) -> Result<(), Failure> {
        let mut out = std::io::stdout().lock();
        match self.json {
            Some(format) => {
                let layout = match format {
                    JsonFormat::Sonde => JsonLayout::Sonde,
                    JsonFormat::Iperf3 => JsonLayout::Iperf3,
                };
                out.write_all(result_json(result, layout)?.as_bytes())?;
                writeln!(out)?;
            }
            None => write!(out, "{}", summary(result))?,
        }
        Ok(())
    }
}

/// A flag that the first Ctrl-C sets (the test then stops and reports
/// what it measured); a second Ctrl-C exits at once.
pub fn interrupt_flag() -> Stop {
    let stop = Stop::new();
    let flag = stop.clone();
    let installed = ctrlc::set_handler(move || {
        if flag.is_stopped() {
            std::process::exit(130);
        }
        flag.stop();
        eprintln!("sonde: interrupted; stopping the test (Ctrl-C again to quit at once)");
    });
    if let Err(e) = installed {
        tracing::debug!(error = %e, "no Ctrl-C handler");
    }
    stop
}

/// The flag that sets a spec field, for errors on the command line.
fn flag_of(field: &str) -> &str {
    match field {
        "host" => "HOST",
        "port" => "-p/--port",
        "time_s" => "-t/--time",
        "interval_s" => "-i/--interval",
        "omit_s" => "-O/--omit",
        "parallel" => "-P/--parallel",
        "length_bytes" => "-l/--length",
        "window_bytes" => "-w/--window",
        "mss_bytes" => "-M/--mss",
        "congestion" => "-C/--congestion",
        "bitrate_bps" => "-b/--bitrate",
        "flowlabel" => "--flowlabel",
        "title" => "--title",
        "profile" => "--profile",
        "sizes" => "-s/--size or --sizes",
        "key_file" => "--key-file",
        "report_interval_s" => "--report-interval",
        "timeout_s" => "-W/--timeout",
        "bytes" => "-n/--bytes",
        "blocks" => "-k/--blockcount",
        "bind" => "-B/--bind",
        "cport" => "--cport",
        "connect_timeout_s" => "--connect-timeout",
        other => other,
    }
}

impl Failure {
    /// A run's failure with its exit code: a bad request is a usage error
    /// (2, naming the flag when `flags` spelled the spec, else the key),
    /// a stop before anything was measured an interruption (130).
    pub fn from_run(e: RunError, flags: bool) -> Self {
        match e {
            RunError::Interrupted => Failure::Interrupted,
            RunError::Invalid(s) => Failure::Usage(anyhow::anyhow!(
                "invalid test: {}: {}",
                if flags { flag_of(s.field) } else { s.field },
                s.reason
            )),
            e if e.is_usage() => Failure::Usage(e.into()),
            e => Failure::Run(e.into()),
        }
    }
}
