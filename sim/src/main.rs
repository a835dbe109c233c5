//! `cr-sim`: run Careful Resume sessions over a simulated link.
//!
//! ```text
//! cr-sim run --rate 10mbit --rtt 800ms --size 1MiB [--cc cubic|reno|bbr2] [--loss P]
//!            [--loss-window FROM..TO:P] [--rate2 R] [--rtt2 T] [--queue [KIND:]SIZE|KIND]
//!            [--policer RATE,BURST] [--policer2 RATE,BURST] [--schedule FILE]
//!            [--schedule2 FILE]
//!            [--gap T] [--seed N] [--app h3|hq] [--no-resume] [--competing]
//!            [--early-data | --no-early-data]
//!            [--qlog-dir DIR] [--plot FILE.svg] [--json] [--server-log]
//! cr-sim crowd --clients N --rate R --rtt T --size S [--cc ...] [--spread D]
//!              [--queue [KIND:]SIZE|KIND] [--policer RATE,BURST] [--schedule FILE]
//!              [--seed N|FIRST..LAST] [--app h3|hq] [--competing]
//!              [--warm-up T] [--slow-start hystart|search] [--resumers K]
//!              [--requested-capacity SIZE] [--json]
//! cr-sim cgnat [--users 20] [--downloads 3] [--window 120s] [--rate R] [--rtt T]
//!              [--size S] [--cc ...] [--queue ...] [--seed N] [--json]
//! cr-sim sweep [--rates R,..] [--rtts T,..] [--sizes S,..] [--size-bdp M,..]
//!              [--loss P,..] [--seeds N,..] [--cc cubic,reno,bbr2] [--queue [KIND:]SIZE|KIND]
//!              [--policer RATE,BURST] [--schedule FILE]
//!              [--jitter T] [--outage START,DURATION].. [--resumed]
//!              [--sample N [--seed S]] [--json]
//! cr-sim sweep --guard first-loss|random-loss|outage|leo|rain-fade [--json]
//! cr-sim satellite [--json]
//! cr-sim suite [--json]
//! cr-sim demo [--out DIR]
//! ```

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use clap::Subcommand;
use cr_serve::bottleneck::{Policer, QueueSpec, Schedule};
use cr_serve::CongestionControl;
use cr_serve::Protocol;
use cr_serve::SlowStart;
use cr_sim::cgnat;
use cr_sim::cgnat::Cgnat;
use cr_sim::crowd;
use cr_sim::crowd::Crowd;
use cr_sim::crowd_seeds;
use cr_sim::first_connections;
use cr_sim::output;
use cr_sim::parallel::run_parallel;
use cr_sim::run_session;
use cr_sim::satellite;
use cr_sim::scenario::Competing;
use cr_sim::suite;
use cr_sim::sweep;
use cr_sim::sweep::Grid;
use cr_sim::sweep::Sample;
use cr_sim::sweep::Sweep;
use cr_sim::sweep::SweepRun;
use cr_sim::table;
use cr_sim::units::parse_duration;
use cr_sim::units::parse_seeds;
use cr_sim::units::ByteSize;
use cr_sim::units::LossWindow;
use cr_sim::units::Outage;
use cr_sim::units::Probability;
use cr_sim::units::QueueLimit;
use cr_sim::units::Rate;
use cr_sim::units::Volume;
use cr_sim::Report;
use cr_sim::Scenario;

/// Simulate IETF Careful Resume (RFC 9959) over a bottleneck link, in
/// virtual time, with real quiche-cr endpoints.
#[derive(Parser)]
#[command(name = "cr-sim", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One session: a first connection, then a second one that presents the
    /// first one's token; the second in 1-RTT and, run again with early
    /// data, in 0-RTT.
    Run(RunArgs),
    /// A flash crowd: N clients each measure the path alone, then all start
    /// within --spread on one bottleneck, presenting their tokens (arm
    /// `resume`) and not (arm `baseline`).
    Crowd(CrowdArgs),
    /// Many users behind one /24 (a carrier-grade NAT) download at random
    /// times: without tokens, sharing one saved set (RFC 9959's one set per
    /// Remote Endpoint), and with a set per address.
    Cgnat(CgnatArgs),
    /// Sessions over ranges of paths, sizes, loss, seeds, outages and
    /// controllers, as the full grid or a fixed sample of it: a summary per
    /// controller, or one JSON line per point.
    Sweep(SweepArgs),
    /// 100 MB over 600 ms at 250, 50 and 10 Mbit/s, 0 % and 1 % loss,
    /// 3 ms of jitter, first and resumed, CUBIC, Reno and BBR2, beside
    /// picoquic's published bounds (minutes: `make satellite`).
    Satellite {
        /// One JSON line per point instead of the table.
        #[arg(long)]
        json: bool,
        /// Reno and CUBIC pace their packets (as `run --pace`).
        #[arg(long)]
        pace: bool,
    },
    /// The standard scenarios, each also as its no-resume baseline and
    /// resumed in 0-RTT, in parallel.
    Suite {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Runs the suite and rewrites the simulator's figures in the given
    /// Markdown files: the blocks between `<!-- cr-sim results: NAME -->`
    /// and `<!-- /cr-sim results -->` (`make results`).
    Results {
        /// The files to rewrite.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// GEO satellite link, 1 MiB and 10 MiB, first versus resumed (in 1-RTT
    /// and in 0-RTT), with plots.
    Demo {
        /// Folder for the plots and qlog traces.
        #[arg(long, default_value = "target/cr-demo")]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Bottleneck rate (both directions), e.g. 10mbit.
    #[arg(long, default_value = "10mbit")]
    rate: Rate,
    /// Round-trip propagation delay, e.g. 800ms.
    #[arg(long, default_value = "800ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Object size fetched on each connection, e.g. 1MiB.
    #[arg(long, default_value = "1MiB")]
    size: ByteSize,
    /// A sequence of connections instead of two: the size each fetches, e.g.
    /// 1MiB,10KiB,1MiB; each presents the newest token the client holds.
    #[arg(long, value_delimiter = ',', conflicts_with = "size")]
    sizes: Vec<ByteSize>,
    /// The server's congestion controller.
    #[arg(long, value_enum, default_value = "cubic")]
    cc: CongestionControl,
    /// Random loss probability, e.g. 0.05 or 5%.
    #[arg(long, default_value = "0")]
    loss: Probability,
    /// Loss window FROM..TO:P counted from each connection's start, e.g.
    /// 0..2s:30%; may be repeated.
    #[arg(long = "loss-window")]
    loss_windows: Vec<LossWindow>,
    /// Rate for the second connection (capacity change).
    #[arg(long)]
    rate2: Option<Rate>,
    /// RTT for the second connection (path change).
    #[arg(long, value_parser = parse_duration)]
    rtt2: Option<Duration>,
    /// A policer on the second and later connections' path instead,
    /// RATE,BURST (a path that changed).
    #[arg(long)]
    policer2: Option<Policer>,
    /// A schedule FILE on the second and later connections' path instead
    /// (the first connection saves the steady path's capacity; the path
    /// then changes while a later one resumes).
    #[arg(long)]
    schedule2: Option<PathBuf>,
    #[command(flatten)]
    bottleneck: BottleneckArgs,
    /// Time from the end of the first download to the second connection.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    gap: Duration,
    /// Seed of the link's randomness.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Application: an HTTP/3 GET, or hq-interop (`GET /<n>` on one raw
    /// stream: the transport with the least framing on top).
    #[arg(long, value_enum, default_value = "h3")]
    app: Protocol,
    /// Close each connection as soon as its download is complete, as a
    /// command-line tool does (default: keep it open until the next one, as
    /// an HTTP client's connection pool does).
    #[arg(long)]
    close_when_done: bool,
    /// Send short packets wherever the congestion window has a little room,
    /// as quiche does by default (for comparison; quiche-cr waits for room
    /// for a full packet).
    #[arg(long)]
    small_packets: bool,
    /// Do not present the token: the baseline.
    #[arg(long)]
    no_resume: bool,
    /// Only the session that resumes the TLS session too and sends each
    /// later connection's request as early data (0-RTT), as browsers do.
    /// Without this flag or --no-early-data, the table shows both: each
    /// later connection in 1-RTT, then in 0-RTT.
    #[arg(long, conflicts_with = "no_early_data")]
    early_data: bool,
    /// Only the session in 1-RTT: no early data.
    #[arg(long)]
    no_early_data: bool,
    /// The server updates its smoothed RTT and rttvar once per round trip,
    /// from the mean and spread of its samples, instead of per ACK.
    #[arg(long)]
    rtt_once_per_rtt: bool,
    /// Reno and CUBIC pace their packets (RFC 9002 7.7; quiche-cr's
    /// opt-in, off by default): 4 x cwnd / RTT in slow start, 1.25 x after.
    #[arg(long)]
    pace: bool,
    /// After a validated jump, slow start goes on past the saved capacity
    /// once the round trip after it came back whole and without a queue
    /// (by default it ends at the saved capacity).
    #[arg(long)]
    slow_start_past_saved: bool,
    /// Largest random extra one-way delay, e.g. 3ms.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    jitter: Duration,
    /// How Reno and CUBIC end their first slow start: SEARCH beside
    /// HyStart++ (cr-server's default) or HyStart++ alone (quiche's).
    #[arg(long, value_enum, default_value_t)]
    slow_start: SlowStart,
    /// A long download by another client shares the bottleneck from the
    /// start (with the server's controller).
    #[arg(long)]
    competing: bool,
    /// Write the qlog traces of both connections into this folder.
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
    /// Draw the server's traces of both connections into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Print the report as JSON (schema in the crate documentation): of
    /// one session, in 1-RTT unless --early-data.
    #[arg(long)]
    json: bool,
    /// Also print each connection's line as `cr-server` logs it (the same
    /// server code made it), on standard error, to set beside a real run.
    #[arg(long)]
    server_log: bool,
}

/// The bottleneck's queue, policer and schedule, as `run`, `crowd` and
/// `sweep` take them.
#[derive(clap::Args)]
struct BottleneckArgs {
    /// The queue per direction: droptail, codel or fq_codel (RFC 8289 and
    /// 8290: target 5 ms, interval 100 ms), a limit in bytes (64KiB) or
    /// BDPs (2xBDP), or both (codel:2xBDP); drop-tail and 1xBDP unless
    /// given.
    #[arg(long, default_value = "droptail")]
    queue: QueueSpec<QueueLimit>,
    /// A token-bucket policer before the queue, RATE,BURST (e.g.
    /// 25mbit,64KiB): a datagram finding too few tokens is dropped.
    #[arg(long)]
    policer: Option<Policer>,
    /// A file of `time rate delay` rows: the link's rate and round-trip
    /// delay from each row's time (docs/simulator.md; sim/schedules/).
    #[arg(long)]
    schedule: Option<PathBuf>,
}

/// A queue's limit: as given, or one bandwidth-delay product.
fn queue_limit(queue: &QueueSpec<QueueLimit>) -> QueueLimit {
    queue.limit.unwrap_or(QueueLimit::Bdp(1.0))
}

impl BottleneckArgs {
    /// The queue's limit: as given, or one bandwidth-delay product.
    fn queue_limit(&self) -> QueueLimit {
        queue_limit(&self.queue)
    }

    /// The schedule the file describes, if one was given.
    fn schedule(&self) -> Result<Option<Schedule>, String> {
        self.schedule.as_deref().map(Schedule::read).transpose()
    }
}

#[derive(clap::Args)]
struct SweepArgs {
    /// Bottleneck rates, e.g. 5mbit,300mbit; with --sample, the range from
    /// the smallest to the largest.
    #[arg(long, value_delimiter = ',', default_value = "10mbit")]
    rates: Vec<Rate>,
    /// Round-trip propagation delays, e.g. 100ms,1s; with --sample, the
    /// range from the smallest to the largest.
    #[arg(long, value_delimiter = ',', default_value = "800ms", value_parser = parse_duration)]
    rtts: Vec<Duration>,
    /// Object sizes, e.g. 1MiB,10MB (or 2xBDP); 1 MiB unless these or
    /// --size-bdp say otherwise.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<Volume>,
    /// Object sizes as multiples of each path's bandwidth-delay product,
    /// e.g. 0.5,2,8.
    #[arg(long, value_delimiter = ',', value_parser = parse_bdp_multiple)]
    size_bdp: Vec<f64>,
    /// Random loss probabilities, e.g. 0,0.1%,1%.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    loss: Vec<Probability>,
    /// Seeds of the link's randomness, e.g. 1,2,3.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    seeds: Vec<u64>,
    /// The servers' congestion controllers, e.g. cubic,reno,bbr2.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "cubic")]
    cc: Vec<CongestionControl>,
    #[command(flatten)]
    bottleneck: BottleneckArgs,
    /// Largest random extra one-way delay, e.g. 3ms.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    jitter: Duration,
    /// The server updates its smoothed RTT and rttvar once per round trip,
    /// from the mean and spread of its samples, instead of per ACK.
    #[arg(long)]
    rtt_once_per_rtt: bool,
    /// Reno and CUBIC pace their packets (RFC 9002 7.7; quiche-cr's
    /// opt-in, off by default): 4 x cwnd / RTT in slow start, 1.25 x after.
    #[arg(long)]
    pace: bool,
    /// After a validated jump, slow start goes on past the saved capacity
    /// once the round trip after it came back whole and without a queue.
    #[arg(long)]
    slow_start_past_saved: bool,
    /// The link drops everything for DURATION from START after each
    /// connection's start, e.g. 3s,5s; each one given is a value of the
    /// sweep.
    #[arg(long)]
    outage: Vec<Outage>,
    /// Run the first connection, then a second presenting its token,
    /// beside the same seed's session whose second connection presents
    /// none (default: first connections only).
    #[arg(long)]
    resumed: bool,
    /// Run N points of a Latin hypercube over log-rate and log-RTT (each
    /// with every controller) instead of every combination.
    #[arg(long)]
    sample: Option<usize>,
    /// Seed of the sample's design (default 1).
    #[arg(long, requires = "sample")]
    seed: Option<u64>,
    /// Run a guard's sweep and checks instead: first-loss, random-loss,
    /// outage, leo or rain-fade.
    #[arg(long, conflicts_with_all = [
        "rates", "rtts", "sizes", "size_bdp", "loss", "seeds", "cc", "queue",
        "policer", "schedule", "jitter", "rtt_once_per_rtt", "slow_start_past_saved", "outage",
        "resumed", "sample",
    ])]
    guard: Option<String>,
    /// Print one JSON line per point (schema in the crate documentation);
    /// the summary goes to standard error.
    #[arg(long)]
    json: bool,
}

/// A multiple of the bandwidth-delay product, more than 0.
fn parse_bdp_multiple(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(m) if m.is_finite() && m > 0.0 => Ok(m),
        _ => Err(format!(
            "`{text}`: expected a multiple of the BDP, like 0.5 or 8"
        )),
    }
}

impl SweepArgs {
    fn sweep(&self) -> Result<Sweep, String> {
        let mut sizes = self.sizes.clone();
        sizes.extend(self.size_bdp.iter().copied().map(Volume::Bdp));
        if sizes.is_empty() {
            sizes.push(Volume::Bytes(1 << 20));
        }
        Ok(Sweep {
            grid: Grid {
                rates: self.rates.clone(),
                rtts: self.rtts.clone(),
                sizes,
                losses: self.loss.clone(),
                seeds: self.seeds.clone(),
                outages: self.outage.clone(),
                ccs: self.cc.clone(),
                queue: self.bottleneck.queue_limit(),
                jitter: self.jitter,
                rtt_once_per_rtt: self.rtt_once_per_rtt,
                pace: self.pace,
                slow_start_past_saved: self.slow_start_past_saved,
                discipline: self.bottleneck.queue.discipline,
                policer: self.bottleneck.policer,
                schedule: self.bottleneck.schedule()?,
                resumed: self.resumed,
            },
            sample: self.sample.map(|points| Sample {
                points,
                seed: self.seed.unwrap_or(1),
            }),
        })
    }
}

#[derive(clap::Args)]
struct CrowdArgs {
    /// Clients in the crowd, each on a /24 of its own.
    #[arg(long, default_value_t = 10)]
    clients: usize,
    /// Bottleneck rate (both directions), e.g. 50mbit.
    #[arg(long, default_value = "50mbit")]
    rate: Rate,
    /// Round-trip propagation delay, e.g. 600ms.
    #[arg(long, default_value = "600ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Object each client fetches, alone and in the crowd, e.g. 1MiB.
    #[arg(long, default_value = "1MiB")]
    size: ByteSize,
    /// The servers' congestion controller.
    #[arg(long, value_enum, default_value = "cubic")]
    cc: CongestionControl,
    /// How Reno and CUBIC end their first slow start: SEARCH beside
    /// HyStart++ (the default, as everywhere) or HyStart++ alone.
    #[arg(long, value_enum, default_value_t)]
    slow_start: SlowStart,
    /// The crowd's clients start within this of the first (seeded uniform
    /// offsets).
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    spread: Duration,
    #[command(flatten)]
    bottleneck: BottleneckArgs,
    /// Seed of the link's randomness and of the start offsets; FIRST..LAST
    /// (both included, e.g. 1..10) runs the crowd once per seed and adds
    /// what the seeds say together: their ratios' mean and worst, how
    /// many resumed slower, and the ratios of all their clients pooled.
    #[arg(long, default_value = "1", value_parser = parse_seeds)]
    seed: RangeInclusive<u64>,
    /// Application.
    #[arg(long, value_enum, default_value = "h3")]
    app: Protocol,
    /// A long download by another client runs from --warm-up before the
    /// crowd; reports its throughput through the crowd against before.
    #[arg(long)]
    competing: bool,
    /// How long the incumbent runs before the crowd starts.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    warm_up: Duration,
    /// What-if: only the first K clients present their tokens in the
    /// `resume` arm (a cap on concurrent jumps).
    #[arg(long)]
    resumers: Option<usize>,
    /// What-if: each client of the `resume` arm asks to resume with at most
    /// this capacity (Requested Capacity), e.g. 100kB: smaller jumps.
    #[arg(long)]
    requested_capacity: Option<ByteSize>,
    /// What-if: the server lets every jump go in full, however many
    /// clients resume at once (no jump budget).
    #[arg(long)]
    no_jump_budget: bool,
    /// Reno and CUBIC pace their packets (RFC 9002 7.7; quiche-cr's
    /// opt-in, off by default): 4 x cwnd / RTT in slow start, 1.25 x after.
    #[arg(long)]
    pace: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct CgnatArgs {
    /// Users behind the prefix (100.64.0.1, .2, ...).
    #[arg(long, default_value_t = 20)]
    users: usize,
    /// Downloads per user.
    #[arg(long, default_value_t = 3)]
    downloads: usize,
    /// The downloads start at random times within this (seeded).
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    window: Duration,
    /// Bottleneck rate (both directions).
    #[arg(long, default_value = "50mbit")]
    rate: Rate,
    /// Round-trip propagation delay.
    #[arg(long, default_value = "600ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Bytes per download.
    #[arg(long, default_value = "1MiB")]
    size: ByteSize,
    /// The server's congestion controller.
    #[arg(long, value_enum, default_value = "cubic")]
    cc: CongestionControl,
    /// The queue per direction: droptail, codel or fq_codel, a limit in
    /// bytes (64KiB) or BDPs (2xBDP), or both (codel:2xBDP); drop-tail and
    /// 1xBDP unless given.
    #[arg(long, default_value = "droptail")]
    queue: QueueSpec<QueueLimit>,
    /// A token-bucket policer before the queue, RATE,BURST (e.g.
    /// 25mbit,64KiB).
    #[arg(long)]
    policer: Option<Policer>,
    /// Seed of the link and of the schedule.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Application.
    #[arg(long, value_enum, default_value = "h3")]
    app: Protocol,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

impl CgnatArgs {
    fn cgnat(&self) -> Cgnat {
        Cgnat {
            users: self.users,
            downloads: self.downloads,
            window: self.window,
            rate: self.rate,
            rtt: self.rtt,
            size: self.size.0,
            cc: self.cc,
            queue: queue_limit(&self.queue),
            discipline: self.queue.discipline,
            policer: self.policer,
            seed: self.seed,
            app: self.app,
        }
    }
}

impl CrowdArgs {
    fn crowd(&self) -> Result<Crowd, String> {
        Ok(Crowd {
            clients: self.clients,
            rate: self.rate,
            rtt: self.rtt,
            size: self.size.0,
            cc: self.cc,
            slow_start: self.slow_start,
            queue: self.bottleneck.queue_limit(),
            spread: self.spread,
            competing: self.competing,
            warm_up: self.warm_up,
            seed: *self.seed.start(),
            app: self.app,
            resumers: self.resumers,
            requested_capacity: self.requested_capacity.map(|b| b.0),
            jump_budget: !self.no_jump_budget,
            discipline: self.bottleneck.queue.discipline,
            policer: self.bottleneck.policer,
            schedule: self.bottleneck.schedule()?,
            pace: self.pace,
        })
    }
}

impl RunArgs {
    fn scenario(&self) -> Result<Scenario, String> {
        Ok(Scenario {
            rate: self.rate,
            rtt: self.rtt,
            size: self.sizes.first().unwrap_or(&self.size).0,
            later_sizes: self.sizes.iter().skip(1).map(|s| s.0).collect(),
            cc: self.cc,
            loss: self.loss,
            loss_windows: self.loss_windows.clone(),
            rate2: self.rate2,
            rtt2: self.rtt2,
            queue: self.bottleneck.queue_limit(),
            gap: self.gap,
            seed: self.seed,
            app: self.app,
            resume: !self.no_resume,
            close_when_done: self.close_when_done,
            small_packets: self.small_packets,
            slow_start: self.slow_start,
            early_data: self.early_data,
            competing: self.competing.then(Competing::default),
            rtt_once_per_rtt: self.rtt_once_per_rtt,
            pace: self.pace,
            slow_start_past_saved: self.slow_start_past_saved,
            jitter: self.jitter,
            discipline: self.bottleneck.queue.discipline,
            policer: self.bottleneck.policer,
            policer2: self.policer2,
            schedule: self.bottleneck.schedule()?,
            schedule2: self.schedule2.as_deref().map(Schedule::read).transpose()?,
            ..Scenario::default()
        })
    }
}

fn main() -> ExitCode {
    // The libraries' decisions (refused tokens, retreats) at RUST_LOG's
    // level; warnings only by default, as a suite runs many connections.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cr-sim: {message}");
            ExitCode::FAILURE
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string_pretty(value).map_err(|e| e.to_string())
}

/// Runs `sweep` on every core and prints its runs (JSON lines) or its
/// summary, with the wall time on standard error.
fn run_sweep(sweep: &Sweep, json: bool) -> Result<Vec<SweepRun>, String> {
    let started = std::time::Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runs = sweep.run(threads);
    let summary = sweep::render(&sweep::summarise(&runs));
    if json {
        for run in &runs {
            println!("{}", serde_json::to_string(run).map_err(|e| e.to_string())?);
        }
        eprint!("{summary}");
    } else {
        print!("{summary}");
    }
    eprintln!(
        "{} point(s) in {:.1} s of wall time on {threads} thread(s)",
        runs.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(runs)
}

/// An error naming the runs that failed, if any did.
fn failures(runs: &[SweepRun]) -> Result<(), String> {
    let failed: Vec<String> = runs
        .iter()
        .filter(|r| !r.completed())
        .map(|r| format!("{}: {:?}", r.label(), r.errors))
        .collect();
    match failed.as_slice() {
        [] => Ok(()),
        failed => Err(format!(
            "{} run(s) failed:\n  {}",
            failed.len(),
            failed.join("\n  ")
        )),
    }
}

fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Run(args) => {
            let scenario = args.scenario()?;
            // Files and plots need complete traces; a report alone does not.
            let full_traces = args.qlog_dir.is_some() || args.plot.is_some();
            // Unless told which, the table sets each later connection in
            // 1-RTT beside the same in 0-RTT: a second session, with early
            // data, run alongside. Files, logs and JSON describe the first.
            // A baseline client keeps no TLS session either: no 0-RTT.
            let both = scenario.resume && !args.early_data && !args.no_early_data && !args.json;
            let mut jobs = vec![(scenario.clone(), full_traces)];
            if both {
                jobs.push((scenario.in_early_data(), false));
            }
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let mut outcomes =
                run_parallel(jobs, threads, |(s, full)| run_session(&s, full)).into_iter();
            let outcome = outcomes
                .next()
                .ok_or("the session did not run")?
                .map_err(|e| e.to_string())?;
            let in_early_data = outcomes
                .next()
                .transpose()
                .map_err(|e| e.to_string())?
                .map(|o| Report::of(&o));
            if let Some(dir) = &args.qlog_dir {
                output::write_qlogs(&outcome, dir).map_err(|e| e.to_string())?;
            }
            if let Some(svg) = &args.plot {
                output::plot(&outcome, "", svg).map_err(|e| e.to_string())?;
            }
            if args.server_log {
                for line in outcome
                    .connections
                    .iter()
                    .filter_map(|c| c.server_report.as_ref())
                {
                    eprintln!("cr-server: {line}");
                }
            }
            let report = Report::of(&outcome);
            if args.json {
                println!("{}", to_json(&report)?);
            } else {
                print!("{}", table::session(&report, in_early_data.as_ref()));
            }
            Ok(())
        }
        Command::Crowd(args) if args.seed.start() != args.seed.end() => {
            let report =
                crowd_seeds::run(&args.crowd()?, args.seed.clone()).map_err(|e| e.to_string())?;
            if args.json {
                println!("{}", to_json(&report)?);
            } else {
                print!("{}", table::crowd_seeds(&report));
            }
            Ok(())
        }
        Command::Crowd(args) => {
            let report = crowd::run(&args.crowd()?).map_err(|e| e.to_string())?;
            if args.json {
                println!("{}", to_json(&report)?);
            } else {
                print!("{}", table::crowd(&report));
            }
            Ok(())
        }
        Command::Cgnat(args) => {
            let report = cgnat::run(&args.cgnat()).map_err(|e| e.to_string())?;
            if args.json {
                println!("{}", to_json(&report)?);
            } else {
                print!("{}", table::cgnat(&report));
            }
            Ok(())
        }
        Command::Results { files } => {
            let results = suite::run(suite::cases());
            let crowds = suite::run_crowds(suite::crowd_cases());
            let first =
                first_connections::run(&[CongestionControl::Cubic, CongestionControl::Reno]);
            let without_budget = suite::crowd_cases()
                .into_iter()
                .map(|mut case| {
                    case.crowd.jump_budget = false;
                    case
                })
                .collect();
            let without_budget = suite::run_crowds(without_budget);
            let mut blocks = cr_sim::results::blocks(&results, &crowds);
            blocks.push(cr_sim::results::budget_block(&crowds, &without_budget));
            blocks.push(cr_sim::results::first_connections_block(&first));
            let bottlenecks = cr_sim::bottlenecks::run(&cr_sim::bottlenecks::cases());
            blocks.extend(cr_sim::results::bottlenecks_blocks(&bottlenecks));
            for file in files {
                let doc = std::fs::read_to_string(&file)
                    .map_err(|e| format!("reading {}: {e}", file.display()))?;
                let (updated, found) = cr_sim::results::update(&doc, &blocks);
                if found == 0 {
                    return Err(format!("{}: no `cr-sim results` block", file.display()));
                }
                if updated != doc {
                    std::fs::write(&file, updated)
                        .map_err(|e| format!("writing {}: {e}", file.display()))?;
                }
                println!("{}: {found} block(s) written", file.display());
            }
            Ok(())
        }
        Command::Suite { json } => {
            // Wall time of each part, so that the docs' figures for it stay
            // honest and a part that grew slow shows.
            let started = std::time::Instant::now();
            let results = suite::run(suite::cases());
            let scenarios_s = started.elapsed().as_secs_f64();
            let crowds = suite::run_crowds(suite::crowd_cases());
            let crowds_s = started.elapsed().as_secs_f64() - scenarios_s;
            let first =
                first_connections::run(&[CongestionControl::Cubic, CongestionControl::Reno]);
            let first_s = started.elapsed().as_secs_f64() - scenarios_s - crowds_s;
            if json {
                // The sessions' objects, then the crowds' (`crowd` in place
                // of `resumed` and `baseline`).
                let mut all: Vec<serde_json::Value> = Vec::new();
                for value in results.iter().map(serde_json::to_value) {
                    all.push(value.map_err(|e| e.to_string())?);
                }
                for value in crowds.iter().map(serde_json::to_value) {
                    all.push(value.map_err(|e| e.to_string())?);
                }
                // Then the first-connection sweep, one object.
                all.push(serde_json::json!({ "first_connections": first }));
                println!("{}", to_json(&all)?);
            } else {
                print!("{}", suite::render(&results));
                println!("\nsender efficiency (last connection, resumed; \"quiche\": the same run with quiche's default packet sizes):\n");
                print!("{}", suite::render_packing(&results));
                println!("\nflash crowds (each client measured the path alone, then all start within 100 ms; resume: presenting their tokens, baseline: not):\n");
                print!("{}", suite::render_crowds(&crowds));
                println!("\nfirst connections, HyStart++ against SEARCH (1xBDP drop-tail queue; \"vs ideal\": against ideal doubling slow start; saved: the capacity the connection saved over the BDP):\n");
                print!("{}", first_connections::render(&first));
                let walls = results
                    .iter()
                    .map(|r| (&r.name, r.wall_s))
                    .chain(crowds.iter().map(|r| (&r.name, r.wall_s)));
                if let Some((name, wall)) = walls.max_by(|a, b| a.1.total_cmp(&b.1)) {
                    println!("\nslowest session: {name} ({wall:.1} s of wall time)");
                }
                println!(
                    "wall time: scenarios {scenarios_s:.1} s, crowds {crowds_s:.1} s, \
                     first connections {first_s:.1} s"
                );
            }
            let failed = results
                .iter()
                .filter(|r| {
                    r.resumed.is_err()
                        || r.baseline.is_err()
                        || r.small_packets.is_err()
                        || r.early_data.is_err()
                })
                .count()
                + crowds.iter().filter(|r| r.crowd.is_err()).count();
            if failed > 0 {
                return Err(format!("{failed} scenario(s) failed"));
            }
            Ok(())
        }
        Command::Sweep(args) => {
            let Some(name) = &args.guard else {
                let runs = run_sweep(&args.sweep()?, args.json)?;
                return failures(&runs);
            };
            let guard = sweep::guard(name).ok_or_else(|| {
                let names: Vec<&str> = sweep::guards().iter().map(|g| g.name).collect();
                format!("no guard `{name}` (guards: {})", names.join(", "))
            })?;
            eprintln!("{}: {}", guard.name, guard.about);
            let mut sweep = guard.sweep.clone();
            sweep.grid.pace = args.pace;
            let runs = run_sweep(&sweep, args.json)?;
            let violations = guard.violations(&runs);
            if violations.is_empty() {
                eprintln!("{}: every run passes", guard.name);
                Ok(())
            } else {
                Err(format!(
                    "{}: {} violation(s):\n  {}",
                    guard.name,
                    violations.len(),
                    violations.join("\n  ")
                ))
            }
        }
        Command::Satellite { json, pace } => {
            let started = std::time::Instant::now();
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let mut sweep = satellite::sweep();
            sweep.grid.pace = pace;
            let runs = sweep.run(threads);
            if json {
                for run in &runs {
                    println!("{}", serde_json::to_string(run).map_err(|e| e.to_string())?);
                }
            } else {
                println!("100 MB at 600 ms, 3 ms of jitter, 1 x BDP drop-tail queue; \"no token\": the same seed's second connection without a token; target: draft-kuhn-quic-4-sat's, picoquic and seeded: what picoquic's satellite tests hold it to, first and seeded with a previous connection's RTT and rate:\n");
                print!("{}", satellite::render(&runs));
            }
            // A transfer that cannot finish (a loss-based controller under
            // 1 % random loss at 600 ms) is a result of the benchmark, not a
            // failure of it.
            if let Err(failed) = failures(&runs) {
                eprintln!("{failed}");
            }
            eprintln!(
                "{} point(s) in {:.1} s of wall time on {threads} thread(s)",
                runs.len(),
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Demo { out } => {
            let text = cr_sim::demo::run(&out).map_err(|e| e.to_string())?;
            print!("{text}");
            Ok(())
        }
    }
}
