//! Running a spec from the command line: the runner in the library, the
//! live lines and warnings printed from its events on a thread of their
//! own, the result printed as text or JSON at the end.

use crate::failure::Failure;
use crate::run_args::{JsonFormat, RunArgs};
use crate::sink::Sink;
use sonde_model::{Event, TestResult, TestSpec};
use sonde_report::verbose_text::{stream_details, test_settings};
use sonde_report::{
    error_json, result_json, summary, with_rate_format, Failed, JsonLayout, LiveText, RateFormat,
};
use sonde_run::{Events, LocalRunner, RunError, Runner, Stop};
use std::thread::JoinHandle;

/// How a command prints its test.
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub json: Option<JsonFormat>,
    /// Live lines (connection, intervals, answers).
    pub live: bool,
    /// The spec was spelled with flags: a broken rule names the flag
    /// (a spec file's mistakes name its key).
    pub flags: bool,
    /// `-V`: the settings before the test, the sockets after it.
    pub verbose: bool,
    /// `-f`: the unit of rates in the text.
    pub rates: RateFormat,
    /// The terminal, or `--logfile`'s file.
    pub sink: Sink,
    /// `--correct-for`: the stack the summary's goodput is corrected for.
    pub correct_for: Option<sonde_methods::overhead::Stack>,
    /// `--archive`, `--archive-to`, `--label`: where the result is kept,
    /// and with what labels.
    pub archive: Option<crate::archive_args::Kept>,
    /// `--chart FILE.svg`: the result's chart (an HTTP ramp's), drawn
    /// after it is printed.
    pub chart: Option<std::path::PathBuf>,
}

/// Runs `spec` with tcp/udp's output rule (live lines unless JSON) and
/// their output flags.
pub fn run_and_print(spec: &TestSpec, args: &RunArgs) -> Result<(), Failure> {
    let output = Output::of_args(spec, args)?;
    match args.via() {
        Ok(None) => output.run(spec),
        Ok(Some(agent)) => output.run_with(spec, &agent),
        Err(e) => Err(output.fail(Some(spec), "invalid", Failure::Usage(anyhow::anyhow!(e)))),
    }
}

impl Output {
    /// tcp/udp's output flags (`-J`, `-V`, `-f`, `--logfile`); a logfile
    /// that cannot be opened is reported as the output asked.
    pub fn of_args(spec: &TestSpec, args: &RunArgs) -> Result<Self, Failure> {
        let output = Output {
            json: args.json,
            live: args.json.is_none(),
            flags: true,
            verbose: args.verbose,
            rates: args.format.unwrap_or_default(),
            sink: Sink::Terminal,
            correct_for: None,
            archive: args.archive.kept(),
            chart: None,
        };
        let output = match args.correct_for.as_deref().map(str::parse) {
            None => output,
            Some(Ok(stack)) => Output {
                correct_for: Some(stack),
                ..output
            },
            Some(Err(e)) => {
                let e = anyhow::anyhow!("--correct-for: {e}");
                return Err(output.fail(Some(spec), "invalid", Failure::Usage(e)));
            }
        };
        match Sink::open(args.logfile.as_deref()) {
            Ok(sink) => Ok(Output { sink, ..output }),
            Err(e) => Err(output.fail(Some(spec), "invalid", e)),
        }
    }

    /// Runs `spec`, printing as it goes and at the end; an interrupted
    /// result is printed, then reported as [`Failure::Interrupted`]. A
    /// failure is printed as a JSON document when JSON was asked for.
    pub fn run(self, spec: &TestSpec) -> Result<(), Failure> {
        self.run_with(spec, &LocalRunner)
    }

    /// [`Output::run`] with `runner` (another agent, for `--via`).
    pub fn run_with(self, spec: &TestSpec, runner: &dyn Runner) -> Result<(), Failure> {
        if self.verbose && self.json.is_none() {
            self.sink.out(&test_settings(spec))?;
        }
        // Created before any traffic: a path that cannot be written is a
        // usage error, not a lost run.
        let chart = crate::method_output::ChartFile::create(self.chart.as_deref())?;
        let events = Events::new();
        let printer = self.printer(spec, events.subscribe());
        let stop = interrupt_flag();
        let outcome = runner.run(spec, &stop, &events);
        events.close();
        let _ = printer.join();
        let result = match outcome {
            Ok(result) => result,
            // Ctrl-C cut the set-up short (a wait ended by the signal
            // reports itself as a failed call): an interruption.
            Err(e) if stop.is_stopped() && !e.is_usage() => {
                tracing::debug!(error = %e, "stopped before the test began");
                return Err(self.failed_run(spec, RunError::Interrupted));
            }
            Err(e) => return Err(self.failed_run(spec, e)),
        };
        // Kept before it is printed: a result finished is never lost to a
        // broken pipe or a kill while printing.
        let kept = self.archive.as_ref().map(|k| k.result(&result));
        self.print(&result)?;
        if let Some(chart) = chart {
            match sonde_report::http_ramp_chart(&result) {
                Some(c) => chart.write(&c)?,
                None => {
                    return Err(Failure::Run(anyhow::anyhow!(
                        "--chart: this result has no steps to draw (a chart needs --ramp)"
                    )))
                }
            }
        }
        if let Some(Err(e)) = kept {
            return Err(e);
        }
        if result.interrupted {
            return Err(Failure::Interrupted);
        }
        Ok(())
    }

    fn failed_run(&self, spec: &TestSpec, e: RunError) -> Failure {
        let kind = e.kind();
        let failure = Failure::from_run(e, self.flags);
        self.fail(Some(spec), kind, failure)
    }

    /// Reports a failure where the output goes: with `-J` one JSON
    /// document saying why (kind and message); with `--logfile` the
    /// message is written in the file too. Returns the failure for its
    /// exit code.
    pub fn fail(&self, spec: Option<&TestSpec>, kind: &str, failure: Failure) -> Failure {
        let message = failure.message();
        if let Some(format) = self.json {
            let host = sonde_engine::host_env::host_env();
            let failed = Failed {
                kind,
                message: &message,
                spec,
                host: &host,
            };
            let _ = self.sink.out(&(error_json(&failed, layout(format)) + "\n"));
        } else if self.sink.is_file() {
            self.sink.err(&format!("sonde: {message}\n"));
        }
        failure
    }

    /// The thread that prints live lines (when asked) and warnings.
    fn printer(&self, spec: &TestSpec, rx: std::sync::mpsc::Receiver<Event>) -> JoinHandle<()> {
        let mut text = LiveText::for_spec(spec);
        let (live, rates, sink) = (self.live, self.rates, self.sink.clone());
        std::thread::spawn(move || {
            for event in rx {
                let lines = with_rate_format(rates, || text.on_event(&event));
                if live && !lines.stdout.is_empty() {
                    let _ = sink.out(&lines.stdout);
                }
                if !lines.stderr.is_empty() {
                    sink.err(&lines.stderr);
                }
            }
        })
    }

    /// The result: sonde's JSON, iperf3's layout, or the text summary
    /// (after the sockets with `-V`).
    fn print(&self, result: &TestResult) -> Result<(), Failure> {
        let text = match self.json {
            Some(format) => result_json(result, layout(format))? + "\n",
            None => {
                let mut text = String::new();
                if self.verbose {
                    text.push_str(&stream_details(result));
                }
                text + &with_rate_format(self.rates, || summary(result)) + &self.corrected(result)
            }
        };
        self.sink.out(&text)?;
        if asked_for_server_output(&result.spec) && result.server_output.is_none() {
            self.sink.err(
                "sonde: --get-server-output: a sonde server sends no separate output; \
                 its figures (the receiver's side) are in the result above\n",
            );
        }
        Ok(())
    }
}

impl Output {
    /// The `--correct-for` lines of a result, one per direction measured.
    fn corrected(&self, result: &TestResult) -> String {
        use sonde_methods::overhead::{correction_factor, payload_per_packet};
        let (Some(stack), Some(payload)) = (&self.correct_for, payload_per_packet(result)) else {
            return String::new();
        };
        let factor = correction_factor(stack, payload);
        let plain = stack.untunnelled().to_string();
        [
            (sonde_model::Direction::Forward, "client -> server"),
            (sonde_model::Direction::Reverse, "server -> client"),
        ]
        .into_iter()
        .filter_map(|(d, name)| {
            let g = result.summary.direction(d)?.throughput_bps?;
            Some(sonde_report::corrected_line(
                &stack.to_string(),
                &plain,
                payload,
                factor,
                name,
                g,
            ))
        })
        .collect()
    }
}

fn asked_for_server_output(spec: &TestSpec) -> bool {
    match spec {
        TestSpec::Tcp(s) => s.get_server_output,
        TestSpec::Udp(s) => s.get_server_output,
        TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => false,
    }
}

fn layout(format: JsonFormat) -> JsonLayout {
    match format {
        JsonFormat::Sonde => JsonLayout::Sonde,
        JsonFormat::Iperf3 => JsonLayout::Iperf3,
    }
}

/// A flag that the first Ctrl-C sets (the test then stops and reports
/// what it measured); a second Ctrl-C exits at once.
///
/// The flag is set in the signal handler itself (signal-hook, chained
/// after ctrlc's handler), not only by ctrlc's thread a moment later: a
/// blocking read with a timeout, such as the handshake's, returns EINTR
/// at once, and the run must then already find itself stopped, or it
/// reports the EINTR as an internal error (seen when Ctrl-C came the
/// moment the client had connected).
pub fn interrupt_flag() -> Stop {
    let stop = Stop::new();
    let presses = std::sync::atomic::AtomicUsize::new(0);
    let installed = ctrlc::set_handler(move || {
        if presses.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0 {
            std::process::exit(130);
        }
        eprintln!("sonde: interrupted; stopping the test (Ctrl-C again to quit at once)");
    });
    if let Err(e) = installed {
        tracing::debug!(error = %e, "no Ctrl-C handler");
    }
    // After ctrlc's, so that signal-hook chains to it.
    let flagged = signal_hook::flag::register(
        signal_hook::consts::SIGINT,
        std::sync::Arc::clone(stop.flag()),
    );
    if let Err(e) = flagged {
        tracing::debug!(error = %e, "no SIGINT flag");
    }
    stop
}

/// The flag that sets a spec field, for errors on the command line.
pub(crate) fn flag_of(field: &str) -> &str {
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
        "ttl" => "-t/--ttl",
        "deadline_s" => "-w/--deadline",
        "interface" => "-I/--interface",
        "bytes" => "-n/--bytes",
        "blocks" => "-k/--blockcount",
        "bind" => "-B/--bind",
        "cport" => "--cport",
        "connect_timeout_s" => "--connect-timeout",
        "get_server_output" => "--get-server-output",
        "first_hop" => "-f/--first-hop",
        "max_hops" => "-m/--max-hops",
        "queries" => "-q/--queries",
        "wait_s" => "-w/--wait",
        "mtu_start" => "--mtu-start",
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
