//! Flags every measurement shares (`sonde tcp`, `sonde udp`): where, how
//! long, how many streams, which way, marking, peer, output. Parsed once
//! here, flattened into each command. Flags only spell a spec: the rules
//! are `TestSpec::validate`'s, which the runner applies.

use clap::Args;
use sonde_model::{ByteSize, Direction, Dscp, DscpFlag, IpFamily, PeerKind};
use sonde_report::RateFormat;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A duration flag: `10s`, `500ms`, `5m`, or bare seconds (`10`), read by
/// the one parser every flag and file uses.
pub fn duration(s: &str) -> Result<Duration, String> {
    sonde_model::parse_duration(s).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The server: host name, IPv6 or IPv4 address.
    pub host: String,
    /// More detail in the text output, as iperf3's -V: the test's
    /// settings first, both hosts and every stream's sockets at the end.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// The unit of rates in the text output: k, m, g, t (bits per second)
    /// or K, M, G, T (bytes per second); the unit that fits if not given.
    #[arg(short = 'f', long, value_name = "UNIT")]
    pub format: Option<RateFormat>,
    /// Append the output (text or JSON) and the logs to FILE instead of
    /// the terminal.
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// How long to send after the warm-up (10s, 5m; bare numbers are seconds).
    #[arg(short = 't', long = "time", default_value = "10s", value_parser = duration)]
    pub time: Duration,
    /// Interval between reports; 0 for none.
    #[arg(short = 'i', long, default_value = "1s", value_parser = duration)]
    pub interval: Duration,
    /// Warm-up shown but left out of the summary.
    #[arg(short = 'O', long, default_value = "0s", value_parser = duration)]
    pub omit: Duration,
    /// Parallel streams (per direction), 1–128.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub parallel: u16,
    /// Server sends, client receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once, reported per direction.
    #[arg(long)]
    pub bidir: bool,
    /// DSCP of the data packets: EF, AF11…AF43, CS0…CS7, LE, or 0–63; or,
    /// as iperf3's -S, a whole TOS byte: 0x.. or 64–255 (0xb8 is EF).
    #[arg(short = 'S', long, visible_alias = "tos")]
    pub dscp: Option<DscpFlag>,
    /// IPv6 flow label of the client's data packets (0–1048575, or hex
    /// as 0x12345).
    #[arg(long, value_parser = flow_label)]
    pub flowlabel: Option<u32>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// A title for the output and the stored result.
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Print one JSON document: sonde's (docs/schema/result-v3.schema.json),
    /// or with `--json=iperf3` in iperf3's layout, for scripts written for iperf3.
    #[arg(short = 'J', long, num_args = 0..=1, require_equals = true, default_missing_value = "sonde", value_name = "FORMAT")]
    pub json: Option<JsonFormat>,
    /// Ping the server (ICMP) for 1 s before the test and all through it:
    /// RTT idle, under load, and the increase (a bloated buffer shows here).
    #[arg(long)]
    pub latency: bool,
    /// The protocol the server speaks: auto (sonde's, switching to
    /// iperf3's if the server turns out to be iperf3), sonde, or iperf3.
    #[arg(long, value_enum, default_value = "auto", conflicts_with = "iperf3")]
    pub peer: PeerFlag,
    /// The server is a stock iperf3 server (`--peer iperf3`).
    #[arg(long)]
    pub iperf3: bool,
    /// End after this many bytes in each direction (e.g. 100M, 2G), or at
    /// -t if sooner (give -t room: it stays the upper bound).
    #[arg(
        short = 'n',
        long = "bytes",
        value_name = "SIZE",
        conflicts_with = "blockcount"
    )]
    pub bytes: Option<ByteSize>,
    /// End after this many blocks (writes of -l bytes, or UDP datagrams)
    /// in each direction, or at -t if sooner.
    #[arg(short = 'k', long = "blockcount", value_name = "N")]
    pub blockcount: Option<u64>,
    /// The client's source address for the control and data connections.
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// The client's source port for the data streams (stream i takes PORT+i).
    #[arg(long, value_name = "PORT")]
    pub cport: Option<u16>,
    /// How long to wait for each connection to the server (e.g. 3s,
    /// 500ms; bare numbers are seconds, where iperf3's are milliseconds).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub connect_timeout: Option<Duration>,
    /// Against an iperf3 server: ask for its own output and print it after
    /// the summary (sonde's server's figures are in the result anyway).
    #[arg(long)]
    pub get_server_output: bool,
    /// A file holding a token of the server's (one line NAME:SECRET):
    /// proves this client to it, for its class's limits (with --via, to
    /// the agent). The secret never crosses the network.
    #[arg(
        long,
        value_name = "FILE",
        env = "SONDE_TOKEN_FILE",
        conflicts_with = "iperf3"
    )]
    pub token_file: Option<std::path::PathBuf>,
    /// Run the test from another agent: AGENT (HOST or HOST:PORT, a
    /// `sonde serve` that lists this host in `third_party_allow`, or
    /// gives --token-file's token leave) runs it toward the server,
    /// whose own sonde server must accept it.
    #[arg(long, value_name = "AGENT", conflicts_with_all = ["iperf3", "bind", "cport"])]
    pub via: Option<String>,
    /// Add the goodput corrected for a protocol stack assumed on the path
    /// (e.g. tunnel:56/tunnel:56/ipv6/tcp-ts; `sonde overhead --help` lists
    /// the layers): what it carried on the wire, over the same packets
    /// without the stack's tunnels. Text output only; for JSON see
    /// `sonde overhead --correct-for`.
    #[arg(long, value_name = "STACK")]
    pub correct_for: Option<String>,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

/// `--peer`: the spellings of [`PeerKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PeerFlag {
    Auto,
    Sonde,
    Iperf3,
}

/// The layout of `-J` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JsonFormat {
    /// sonde's own result (docs/schema/).
    Sonde,
    /// iperf3's `-J` layout.
    Iperf3,
}

impl RunArgs {
    /// The agent `--via` names, on port 5201 unless it gives its own.
    pub fn via(&self) -> Result<Option<sonde_run::ThirdPartyRunner>, String> {
        self.via
            .as_deref()
            .map(|a| sonde_run::ThirdPartyRunner::parse(a, 5201, self.family()))
            .transpose()
            .map_err(|e| format!("--via: {e}"))
    }

    /// The token `--token-file` holds, if given ([`read_token`]).
    pub fn token(&self) -> Result<Option<sonde_model::Credential>, crate::failure::Failure> {
        read_token(self.token_file.as_deref())
    }

    pub fn peer(&self) -> PeerKind {
        match (self.iperf3, self.peer) {
            (true, _) | (_, PeerFlag::Iperf3) => PeerKind::Iperf3,
            (_, PeerFlag::Sonde) => PeerKind::Sonde,
            (_, PeerFlag::Auto) => PeerKind::Auto,
        }
    }

    pub fn direction(&self) -> Direction {
        if self.bidir {
            Direction::Bidir
        } else if self.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        }
    }

    pub fn family(&self) -> IpFamily {
        family(self.ipv4, self.ipv6)
    }

    /// What the flags say of the fields every client test shares (the
    /// token is read by `run`: a file that cannot be read is a usage
    /// error).
    pub fn core(&self) -> sonde_model::ClientCore {
        sonde_model::ClientCore {
            host: self.host.clone(),
            port: self.port,
            time: self.time,
            interval: self.interval,
            omit: self.omit,
            parallel: self.parallel,
            direction: self.direction(),
            dscp: self.dscp(),
            flowlabel: self.flowlabel,
            family: self.family(),
            title: self.title.clone(),
            peer: self.peer(),
            latency: self.latency,
            bytes: self.bytes,
            blocks: self.blockcount,
            bind: self.bind,
            cport: self.cport,
            connect_timeout: self.connect_timeout,
            get_server_output: self.get_server_output,
            token: None,
        }
    }

    /// The DSCP asked for (`-S`), whichever way it was spelled.
    pub fn dscp(&self) -> Option<Dscp> {
        self.dscp.map(DscpFlag::dscp)
    }

    /// Notes on how flags were read, for standard error (a TOS byte
    /// given to `-S`).
    pub fn print_notes(&self) {
        if let Some(note) = self.dscp.and_then(DscpFlag::note) {
            eprintln!("sonde: note: {note}");
        }
    }
}

/// The token a `--token-file` holds (one line `NAME:SECRET`), if one is
/// given; a file that cannot be read or does not hold a token is a usage
/// error.
pub fn read_token(
    path: Option<&std::path::Path>,
) -> Result<Option<sonde_model::Credential>, crate::failure::Failure> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        crate::failure::Failure::Usage(anyhow::anyhow!(
            "--token-file: cannot read {}: {e}",
            path.display()
        ))
    })?;
    sonde_model::Credential::parse(&text)
        .map(Some)
        .map_err(|e| {
            crate::failure::Failure::Usage(anyhow::anyhow!("--token-file {}: {e}", path.display()))
        })
}

/// `-4` / `-6` as an address family.
/// A 20-bit IPv6 flow label, decimal or hex (`0x12345`).
pub fn flow_label(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    };
    n.filter(|n| *n <= 0xF_FFFF)
        .ok_or_else(|| format!("'{s}' is not a flow label: 0 to 1048575, or hex as 0x12345"))
}

pub fn family(ipv4: bool, ipv6: bool) -> IpFamily {
    match (ipv4, ipv6) {
        (true, _) => IpFamily::V4,
        (_, true) => IpFamily::V6,
        _ => IpFamily::Any,
    }
}
