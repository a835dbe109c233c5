//! Flash crowds: many clients that each measured the path alone
//! resume at once on one shared bottleneck.
//!
//! N clients, each on a /24 of its own (so that RFC 9959's one saved set
//! per Remote Endpoint does not merge them), share one server (one token
//! key, one saved-set guard: one `cr-server` process, through
//! `cr_serve::ServerSession` as everywhere in the simulator). First each
//! client downloads the object alone, one after another, lingering a
//! second for the late tokens; then all N start within `spread` of one
//! another (seeded uniform offsets), once presenting their tokens (arm
//! `resume`) and once without (arm `baseline`). The two arms run in worlds
//! of their own from the same seed, so their lone measurements and their
//! start times are the same. With `competing`, a long download by another
//! client (its own server) runs from the end of the measurements, 40 s
//! before the crowd, and its throughput through the crowd is compared with
//! what it had just before.

use std::net::IpAddr;
use std::net::Ipv4Addr;
use std::time::Duration;

use cr_serve::bottleneck::{Discipline, Policer, Schedule};
use cr_serve::CongestionControl;
use cr_serve::Protocol;
use cr_serve::SlowStart;
use serde::Serialize;

use crate::endpoint::EndpointSettings;
use crate::endpoint::TokenConfig;
use crate::error::SimError;
use crate::link::SimTime;
use crate::report::round3;
use crate::report::ConnectionReport;
use crate::report::StepView;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::session::build_world;
use crate::units::QueueLimit;
use crate::units::Rate;
use crate::world::ConnectionRecord;
use crate::world::Flow;
use crate::world::World;

/// Virtual time one download (or the whole crowd) may take before the run
/// is declared failed.
const TIME_LIMIT: Duration = Duration::from_secs(900);

/// How long a client keeps its connection after the last byte, for the
/// tokens sent after it (as `cr-client --linger 1s`).
pub const LINGER: Duration = Duration::from_secs(1);

/// How long the incumbent long download runs before the crowd arrives, by
/// default: long enough for CUBIC and BBR2 to leave their start-up (CUBIC
/// fills 50 Mbit/s at 600 ms within 6 s). Where in its cycle CUBIC then
/// stands (how full it keeps the queue) changes what the crowd meets.
pub const INCUMBENT_WARM_UP: Duration = Duration::from_secs(20);

/// What the incumbent asks for: more than it can fetch while the crowd
/// runs.
const INCUMBENT_SIZE: u64 = 1 << 40;

/// The round trips after the crowd's start over which `incumbent_share_early`
/// is measured: handshake, request and initial window, the jump, its
/// validation.
pub const EARLY_RTTS: u32 = 5;

/// The random stream the crowd's start offsets come from (the links use 1
/// and 2).
const STREAM_OFFSETS: u64 = 3;

/// A flash crowd: `clients` clients fetching `size` bytes each over one
/// bottleneck.
#[derive(Clone, Debug, PartialEq)]
pub struct Crowd {
    /// How many clients.
    pub clients: usize,
    /// Bottleneck rate (both directions).
    pub rate: Rate,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Bytes each client fetches, alone and in the crowd.
    pub size: u64,
    /// The servers' congestion controller.
    pub cc: CongestionControl,
    /// How Reno and CUBIC end their first slow start (SEARCH beside
    /// HyStart++ by default, as in every other simulation and `cr-server`).
    pub slow_start: SlowStart,
    /// Drop-tail queue per direction.
    pub queue: QueueLimit,
    /// The crowd's clients start within this of the first.
    pub spread: Duration,
    /// A long download shares the bottleneck from before the crowd.
    pub competing: bool,
    /// How long that download runs before the crowd starts.
    pub warm_up: Duration,
    /// Seed of the link's randomness and of the start offsets.
    pub seed: u64,
    /// The application.
    pub app: Protocol,
    /// In the `resume` arm, only the first this many clients present their
    /// tokens (the others start as in the baseline): what a server that
    /// admitted only so many concurrent jumps would see. `None`: all.
    pub resumers: Option<usize>,
    /// In the `resume` arm, each client asks to resume with at most this
    /// capacity (Requested Capacity), so its jump is at most half of it:
    /// what smaller jumps would do. `None`: as saved.
    pub requested_capacity: Option<u64>,
    /// Whether the server shares out the jumps of connections resuming at
    /// the same time ([`cr_endpoint::JumpBudget`], `cr-server`'s default);
    /// false: every client jumps in full, as before the safeguard.
    pub jump_budget: bool,
    /// The bottleneck's queue (see [`Scenario::discipline`]).
    pub discipline: Discipline,
    /// A token-bucket policer before the queue.
    pub policer: Option<Policer>,
    /// The rate and round-trip delay over time, from the simulation's
    /// start (see [`Scenario::schedule`]).
    pub schedule: Option<Schedule>,
    /// Whether Reno and CUBIC pace their packets (see [`Scenario::pace`]).
    pub pace: bool,
}

impl Default for Crowd {
    /// `crowd-50`'s path: 50 Mbit/s, 600 ms, 1 x BDP of queue, 1 MiB, CUBIC.
    fn default() -> Self {
        Crowd {
            clients: 10,
            rate: Rate::mbit(50),
            rtt: Duration::from_millis(600),
            size: 1 << 20,
            cc: CongestionControl::Cubic,
            slow_start: SlowStart::Search,
            queue: QueueLimit::Bdp(1.0),
            spread: Duration::from_millis(100),
            competing: false,
            warm_up: INCUMBENT_WARM_UP,
            seed: 1,
            app: Protocol::H3,
            resumers: None,
            requested_capacity: None,
            jump_budget: true,
            discipline: Discipline::DropTail,
            policer: None,
            schedule: None,
            pace: false,
        }
    }
}

impl Crowd {
    /// The session scenario with the same path and endpoints (what the
    /// world and the endpoints are built from).
    pub fn scenario(&self, resume: bool) -> Scenario {
        Scenario {
            rate: self.rate,
            rtt: self.rtt,
            size: self.size,
            cc: self.cc,
            queue: self.queue,
            seed: self.seed,
            app: self.app,
            resume,
            discipline: self.discipline,
            policer: self.policer,
            schedule: self.schedule.clone(),
            pace: self.pace,
            ..Scenario::default()
        }
    }

    /// Rejects parameters the simulator cannot run.
    pub fn check(&self) -> Result<(), SimError> {
        if self.clients == 0 || self.clients > 1 << 16 {
            return Err(SimError::Scenario("a crowd has 1 to 65536 clients".into()));
        }
        self.scenario(true).check()
    }

    /// The crowd's start offsets, client by client: uniform in
    /// `[0, spread]`, the first at 0, from the seed.
    pub fn offsets(&self) -> Vec<Duration> {
        let mut rng = Rng::new(self.seed, STREAM_OFFSETS);
        let spread = u64::try_from(self.spread.as_nanos()).unwrap_or(u64::MAX);
        let mut offsets: Vec<Duration> = (0..self.clients)
            .map(|_| Duration::from_nanos(rng.below_inclusive(spread)))
            .collect();
        let first = offsets.iter().copied().min().unwrap_or_default();
        for offset in &mut offsets {
            *offset -= first;
        }
        offsets
    }
}

/// Client `index`'s address: 10.X.Y.1, each client on a /24 of its own.
pub fn client_ip(index: usize) -> IpAddr {
    let [_, _, x, y] = u32::try_from(index).unwrap_or(u32::MAX).to_be_bytes();
    IpAddr::V4(Ipv4Addr::new(10, x, y, 1))
}

/// The settings of every endpoint of a crowd (or prefix) run.
pub(crate) fn endpoint_settings(
    scenario: &Scenario,
    slow_start: SlowStart,
    jump_budget: bool,
) -> EndpointSettings {
    EndpointSettings {
        cc: scenario.cc,
        slow_start,
        app: scenario.app,
        resume: scenario.resume,
        seed: scenario.seed,
        close_when_done: false,
        small_packets: scenario.small_packets,
        requested_capacity: None,
        jump_budget: jump_budget.then(Default::default),
        early_data: scenario.early_data,
        rtt_once_per_rtt: scenario.rtt_once_per_rtt,
        pace: scenario.pace,
        slow_start_past_saved: scenario.slow_start_past_saved,
    }
}

/// Runs `run` in a world built for `scenario`, with quiche's randomness
/// seeded, as a session does; cleans up after it.
pub(crate) fn in_world<T>(
    scenario: &Scenario,
    run: impl FnOnce(&mut World) -> Result<T, SimError>,
) -> Result<T, SimError> {
    scenario.check()?;
    quiche::seeded_random::seed(scenario.seed);
    let mut world = build_world(scenario);
    let outcome = run(&mut world);
    quiche::clock::unset();
    quiche::seeded_random::unseed();
    outcome
}

/// Runs until `flow`'s current download is complete.
pub(crate) fn download(world: &mut World, flow: usize) -> Result<(), SimError> {
    let deadline = world.now() + TIME_LIMIT;
    world.run_until(deadline, |w| w.flow(flow).is_some_and(Flow::is_done))
}

/// Everything one arm produced.
#[derive(Debug)]
pub struct ArmOutcome {
    /// Whether the crowd presented its tokens.
    pub resume: bool,
    /// Each client's lone download, in client order.
    pub alone: Vec<ConnectionRecord>,
    /// Each client's download in the crowd, in client order.
    pub crowd: Vec<ConnectionRecord>,
    /// When the crowd's first client started.
    pub crowd_start: SimTime,
    /// When its last client had its last byte.
    pub crowd_done: SimTime,
    /// With `competing`: the bytes of the incumbent's datagrams that had
    /// crossed the bottleneck by each arrival, and when it started.
    pub incumbent: Option<(Vec<(SimTime, u64)>, SimTime)>,
}

/// Runs one arm of `crowd`: the lone measurements, then the crowd, with
/// (`resume`) or without the clients' tokens.
pub fn run_arm(crowd: &Crowd, resume: bool) -> Result<ArmOutcome, SimError> {
    crowd.check()?;
    let scenario = crowd.scenario(resume);
    in_world(&scenario, |world| arm_in(world, crowd, &scenario))
}

fn arm_in(world: &mut World, crowd: &Crowd, scenario: &Scenario) -> Result<ArmOutcome, SimError> {
    let endpoints = endpoint_settings(scenario, crowd.slow_start, crowd.jump_budget);
    let server = world.add_server(endpoints, TokenConfig::default())?;
    let flows = (0..crowd.clients)
        .map(|i| {
            let settings = EndpointSettings {
                resume: endpoints.resume && crowd.resumers.is_none_or(|k| i < k),
                requested_capacity: crowd.requested_capacity,
                ..endpoints
            };
            world.add_client(settings, server, client_ip(i), false)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let vanished = || SimError::Stalled("a connection vanished".into());

    let mut alone = Vec::with_capacity(flows.len());
    for &flow in &flows {
        world.start_connection(flow, crowd.size, false)?;
        download(world, flow)?;
        world.advance_to(world.now() + LINGER)?;
        alone.push(world.retire_connection(flow).ok_or_else(vanished)?);
    }

    let incumbent = match crowd.competing {
        true => {
            let flow = world.add_flow(endpoints, false)?;
            let started = world.now();
            world.start_connection(flow, INCUMBENT_SIZE, true)?;
            world.advance_to(started + crowd.warm_up)?;
            Some((flow, started))
        }
        false => {
            world.advance_to(world.now() + LINGER)?;
            None
        }
    };

    let crowd_start = world.now();
    let mut starts: Vec<(Duration, usize)> =
        crowd.offsets().into_iter().zip(flows.clone()).collect();
    starts.sort();
    for (offset, flow) in starts {
        world.advance_to(crowd_start + offset)?;
        world.start_connection(flow, crowd.size, false)?;
    }
    let deadline = world.now() + TIME_LIMIT;
    world.run_until(deadline, |w| {
        flows.iter().all(|&f| w.flow(f).is_some_and(Flow::is_done))
    })?;
    let crowd_done = world.now();
    // The crowd's connections, too, keep the tokens sent after their last
    // byte before they are counted.
    world.advance_to(crowd_done + LINGER)?;
    let crowd_records = flows
        .iter()
        .map(|&flow| world.retire_connection(flow).ok_or_else(vanished))
        .collect::<Result<Vec<_>, _>>()?;
    let incumbent = incumbent.and_then(|(flow, started)| {
        let samples = world.flow(flow)?.pair()?.delivered()?.to_vec();
        Some((samples, started))
    });
    Ok(ArmOutcome {
        resume: scenario.resume,
        alone,
        crowd: crowd_records,
        crowd_start,
        crowd_done,
        incumbent,
    })
}

/// Rounds seconds to the microsecond.
fn round_s(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e6
}

/// The mean of `values`.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The `p`-quantile of `values` by nearest rank (the smallest value with at
/// least `p` of them at or below it): with 10 values, p95 is the largest.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// Jain's fairness index of `values`: (sum x)^2 / (n sum x^2), 1 when all
/// are equal, 1/n when one has everything.
pub fn jain(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|x| x * x).sum();
    (squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

/// The median completion of the connections that `which` picks.
fn median_of(
    reports: &[ConnectionReport],
    which: impl Fn(&ConnectionReport) -> bool,
) -> Option<f64> {
    let picked: Vec<f64> = reports
        .iter()
        .filter(|c| which(c))
        .filter_map(|c| c.completion_s)
        .collect();
    median(&picked).map(round_s)
}

/// Bytes per second between `from` and `to` from a flow's samples.
fn rate_between(samples: &[(SimTime, u64)], from: SimTime, to: SimTime) -> f64 {
    let by = |t: SimTime| {
        let after = samples.partition_point(|&(at, _)| at <= t);
        after.checked_sub(1).map_or(0, |i| samples[i].1)
    };
    let seconds = to.saturating_sub(from).as_secs_f64();
    if seconds <= 0.0 {
        return 0.0;
    }
    by(to).saturating_sub(by(from)) as f64 / seconds
}

/// Each client's connection in `arm`, in client order.
fn connection_reports(crowd: &Crowd, arm: &ArmOutcome) -> Vec<ConnectionReport> {
    let limit = Scenario::limit(crowd.size, crowd.rate, crowd.rtt);
    arm.crowd
        .iter()
        .map(|r| ConnectionReport::of(r, crowd.size, limit))
        .collect()
}

/// The stretch of `arm`'s crowd, counted from its start, from the first
/// jump to the end of the last validation; `None` when none jumped.
pub fn jumps_stretch(crowd: &Crowd, arm: &ArmOutcome) -> Option<(Duration, Duration)> {
    let reports = connection_reports(crowd, arm);
    let (from, to) = jumps_span(&arm.crowd, &reports)?;
    Some((
        from.saturating_sub(arm.crowd_start),
        to.saturating_sub(arm.crowd_start),
    ))
}

/// From the first jump of `records` (their `reports`) to the end of the
/// last one's validation, when any jumped: the span RFC 9959 calls
/// Unvalidated and Validating. A validation the trace never saw end lasts
/// to the connection's last byte.
fn jumps_span(
    records: &[ConnectionRecord],
    reports: &[ConnectionReport],
) -> Option<(SimTime, SimTime)> {
    let mut span: Option<(SimTime, SimTime)> = None;
    for (record, report) in records.iter().zip(reports) {
        let (Some(origin), Some(done)) = (record.first_packet_at, record.progress.done) else {
            continue;
        };
        let phases = &report.cr.phases;
        let Some(jump) = phases.iter().position(|p| p.to == "unvalidated") else {
            continue;
        };
        let ended = phases[jump + 1..]
            .iter()
            .find(|p| p.to != "unvalidated" && p.to != "validating");
        let at = |t_s: f64| origin + Duration::from_secs_f64(t_s);
        let (from, to) = (at(phases[jump].t_s), ended.map_or(done, |p| at(p.t_s)));
        span = Some(span.map_or((from, to), |(f, t)| (f.min(from), t.max(to))));
    }
    span
}

/// One arm's figures: the `resume` and `baseline` objects of `cr-sim crowd
/// --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArmReport {
    /// Clients in the crowd.
    pub clients: usize,
    /// Clients whose download completed (all, unless the run failed).
    pub completed: usize,
    /// Clients that presented a token with a saved set.
    pub presented: usize,
    /// Clients whose server jumped (entered Unvalidated).
    pub engaged: usize,
    /// Clients whose jump met congestion (Safe Retreat).
    pub retreated: usize,
    /// Sum of the engaged clients' jump windows, bytes: what the server
    /// sent unvalidated, at once, into the bottleneck.
    pub jump_bytes: u64,
    /// Median completion, seconds from each client's first packet.
    pub median_completion_s: Option<f64>,
    /// 95th percentile (nearest rank) of the completions.
    pub p95_completion_s: Option<f64>,
    /// The slowest completion.
    pub max_completion_s: Option<f64>,
    /// Mean completion.
    pub mean_completion_s: Option<f64>,
    /// Median completion of the clients whose server jumped.
    pub median_completion_engaged_s: Option<f64>,
    /// Median completion of the others.
    pub median_completion_not_engaged_s: Option<f64>,
    /// Packets the server declared lost, over all clients.
    pub lost_packets: u64,
    /// Packets the server sent, over all clients.
    pub sent_packets: u64,
    /// Jain's fairness index over the clients' goodputs (size / completion).
    pub jain_fairness: Option<f64>,
    /// From the crowd's first start to its last byte, seconds.
    pub crowd_span_s: f64,
    /// The incumbent's throughput (its datagrams across the bottleneck) from
    /// the crowd's first start to its last byte, over its throughput just
    /// before (over as long a stretch, at most half its warm-up); `null`
    /// without `--competing`.
    pub incumbent_share: Option<f64>,
    /// The same over the first [`EARLY_RTTS`] round trips of the crowd
    /// (handshakes, initial windows, jumps and their validation).
    pub incumbent_share_early: Option<f64>,
    /// The incumbent's throughput while the crowd's jumps were
    /// unvalidated or being validated (from the first jump to the end of
    /// the last validation: RFC 9959's Unvalidated and Validating), as a
    /// share of the link's rate; `null` without `--competing` or a jump.
    /// The arm without tokens gives it over the same stretch of its crowd
    /// (counted from the crowd's start): what the incumbent carried when
    /// the newcomers slow-started instead, beside what it kept through
    /// their jumps.
    pub incumbent_link_share_in_jumps: Option<f64>,
    /// The incumbent's throughput just before the crowd, Mbit/s.
    pub incumbent_before_mbps: Option<f64>,
    /// Each client's connection in the crowd, in client order, as `cr-sim
    /// run --json` reports one (completion, losses, Careful Resume's phases
    /// and jump, how slow start ended): the clients behind the medians, to
    /// tell which of them finished late and why.
    pub connections: Vec<ConnectionReport>,
}

impl ArmReport {
    /// The figures of `arm`, a crowd of `crowd`; the incumbent's share of
    /// the link is taken over `jumps`, a stretch of the crowd counted from
    /// its start ([`jumps_stretch`] of the arm presenting tokens).
    pub fn of(crowd: &Crowd, arm: &ArmOutcome, jumps: Option<(Duration, Duration)>) -> ArmReport {
        let reports = connection_reports(crowd, arm);
        let completions: Vec<f64> = reports.iter().filter_map(|c| c.completion_s).collect();
        let goodputs: Vec<f64> = reports.iter().filter_map(|c| c.goodput_mbps).collect();
        let retreated = |c: &&ConnectionReport| c.cr.phases.iter().any(|p| p.to == "safe_retreat");
        let span = arm.crowd_done.saturating_sub(arm.crowd_start);
        // The incumbent's rate just before the crowd: over as long a
        // stretch as the crowd took, at most half the warm-up.
        let before = arm.incumbent.as_ref().map(|(samples, started)| {
            let stretch = span.min(crowd.warm_up / 2);
            let from = arm.crowd_start.saturating_sub(stretch).max(*started);
            rate_between(samples, from, arm.crowd_start)
        });
        let share = |from: SimTime, to: SimTime| {
            let (samples, _) = arm.incumbent.as_ref()?;
            let before = before.filter(|&b| b > 0.0)?;
            Some(round3(rate_between(samples, from, to) / before))
        };
        let early_end = arm.crowd_start + crowd.rtt * EARLY_RTTS;
        let in_jumps = jumps.and_then(|(from, to)| {
            let (samples, _) = arm.incumbent.as_ref()?;
            let link = crowd.rate.bps() as f64 / 8.0;
            let (from, to) = (arm.crowd_start + from, arm.crowd_start + to);
            Some(round3(rate_between(samples, from, to) / link))
        });
        let before_mbps = before.map(|b| round3(b * 8.0 / 1e6));
        ArmReport {
            clients: reports.len(),
            completed: completions.len(),
            presented: reports
                .iter()
                .filter(|c| c.token_presented.is_some())
                .count(),
            engaged: reports.iter().filter(|c| c.cr.engaged).count(),
            retreated: reports.iter().filter(retreated).count(),
            jump_bytes: reports.iter().filter_map(|c| c.cr.jump_cwnd).sum(),
            median_completion_s: median(&completions).map(round_s),
            p95_completion_s: percentile(&completions, 0.95).map(round_s),
            max_completion_s: percentile(&completions, 1.0).map(round_s),
            median_completion_engaged_s: median_of(&reports, |c| c.cr.engaged),
            median_completion_not_engaged_s: median_of(&reports, |c| !c.cr.engaged),
            mean_completion_s: mean(&completions).map(round_s),
            lost_packets: reports.iter().map(|c| c.packets_lost).sum(),
            sent_packets: reports.iter().map(|c| c.packets_sent).sum(),
            jain_fairness: jain(&goodputs).map(round3),
            crowd_span_s: round_s(span.as_secs_f64()),
            incumbent_share: share(arm.crowd_start, arm.crowd_done),
            incumbent_share_early: share(arm.crowd_start, early_end.min(arm.crowd_done)),
            incumbent_link_share_in_jumps: in_jumps,
            incumbent_before_mbps: before_mbps,
            connections: reports,
        }
    }
}

/// The crowd's parameters, as reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CrowdView {
    /// Clients.
    pub clients: usize,
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay, seconds.
    pub rtt_s: f64,
    /// Bytes each client fetches.
    pub size_bytes: u64,
    /// Congestion controller.
    pub cc: &'static str,
    /// Slow start of Reno and CUBIC: `hystart` or `search`.
    pub slow_start: &'static str,
    /// Application.
    pub app: &'static str,
    /// Drop-tail limit per direction, bytes.
    pub queue_bytes: u64,
    /// The clients start within this, seconds.
    pub spread_s: f64,
    /// Whether an incumbent long download shared the bottleneck.
    pub competing: bool,
    /// How long it ran before the crowd, seconds.
    pub warm_up_s: f64,
    /// Seed.
    pub seed: u64,
    /// What-if: only this many clients presented their tokens in the
    /// `resume` arm (`null`: all).
    pub resumers: Option<usize>,
    /// What-if: the Requested Capacity each client of the `resume` arm
    /// presented, bytes (`null`: as saved).
    pub requested_capacity_bytes: Option<u64>,
    /// Whether the server shared out concurrent jumps (the safeguard).
    pub jump_budget: bool,
    /// The bottleneck's queue: `droptail`, `codel` or `fq_codel`.
    pub queue_discipline: &'static str,
    /// The policer before the queue, if any.
    pub policer: Option<Policer>,
    /// The link's rate and delay over time (from the simulation's start),
    /// when a schedule set them.
    pub schedule: Option<Vec<StepView>>,
}

/// The clients' lone downloads, before the crowd (the resume arm's; the
/// baseline's are the same).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AloneReport {
    /// Median completion of a lone download, seconds.
    pub median_completion_s: Option<f64>,
    /// Median capacity of the saved sets the clients then held, bytes.
    pub median_saved_bytes: Option<u64>,
}

/// The JSON document of `cr-sim crowd --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CrowdReport {
    /// The parameters.
    pub crowd: CrowdView,
    /// 2*RTT + size/rate: one client's physical limit alone, seconds.
    pub limit_s: f64,
    /// 2*RTT + clients*size/rate: no crowd can have its last byte sooner.
    pub crowd_limit_s: f64,
    /// The lone downloads.
    pub alone: AloneReport,
    /// The crowd presenting its tokens.
    pub resume: ArmReport,
    /// The crowd without tokens.
    pub baseline: ArmReport,
}

impl CrowdReport {
    /// The report of the two arms of `crowd`.
    pub fn of(crowd: &Crowd, resume: &ArmOutcome, baseline: &ArmOutcome) -> CrowdReport {
        let limit = Scenario::limit(crowd.size, crowd.rate, crowd.rtt);
        let alone: Vec<ConnectionReport> = resume
            .alone
            .iter()
            .map(|r| ConnectionReport::of(r, crowd.size, limit))
            .collect();
        let alone_completions: Vec<f64> = alone.iter().filter_map(|c| c.completion_s).collect();
        let saved: Vec<f64> = alone
            .iter()
            .filter_map(|c| c.token_left.map(|t| t.capacity_bytes as f64))
            .collect();
        let total = crowd.size.saturating_mul(crowd.clients as u64);
        let jumps = jumps_stretch(crowd, resume);
        CrowdReport {
            crowd: CrowdView {
                clients: crowd.clients,
                rate_bps: crowd.rate.bps(),
                rtt_s: round_s(crowd.rtt.as_secs_f64()),
                size_bytes: crowd.size,
                cc: crowd.cc.name(),
                slow_start: crowd.slow_start.name(),
                app: crowd.app.name(),
                queue_bytes: crowd.scenario(true).queue_bytes(crowd.rate, crowd.rtt),
                spread_s: round_s(crowd.spread.as_secs_f64()),
                competing: crowd.competing,
                warm_up_s: round_s(crowd.warm_up.as_secs_f64()),
                seed: crowd.seed,
                resumers: crowd.resumers,
                requested_capacity_bytes: crowd.requested_capacity,
                jump_budget: crowd.jump_budget,
                queue_discipline: crowd.discipline.name(),
                policer: crowd.policer,
                schedule: crowd.schedule.as_ref().map(StepView::of),
            },
            limit_s: round_s(limit.as_secs_f64()),
            crowd_limit_s: round_s(Scenario::limit(total, crowd.rate, crowd.rtt).as_secs_f64()),
            alone: AloneReport {
                median_completion_s: median(&alone_completions).map(round_s),
                median_saved_bytes: median(&saved).map(|b| b.round() as u64),
            },
            resume: ArmReport::of(crowd, resume, jumps),
            baseline: ArmReport::of(crowd, baseline, jumps),
        }
    }

    /// Resumed over baseline, for a figure of both arms.
    pub fn ratio(&self, figure: impl Fn(&ArmReport) -> Option<f64>) -> Option<f64> {
        let (resumed, baseline) = (figure(&self.resume)?, figure(&self.baseline)?);
        (baseline > 0.0).then(|| resumed / baseline)
    }

    /// Packets lost resumed over baseline, in words: `9.2x`, or `12 vs 0`
    /// when the baseline lost none.
    pub fn lost_ratio(&self) -> String {
        match (self.resume.lost_packets, self.baseline.lost_packets) {
            (0, 0) => "0 vs 0".to_string(),
            (resumed, 0) => format!("{resumed} vs 0"),
            (resumed, baseline) => format!("{:.1}x", resumed as f64 / baseline as f64),
        }
    }

    /// The crowd targets this crowd misses, in words (empty: all
    /// met): median completion at most the baseline's, p95 at most 1.1 x
    /// the baseline's, lost packets at most 1.5 x the baseline's, Jain's
    /// fairness at least 0.9 and, with an incumbent, its share at least
    /// 0.5.
    pub fn missed_targets(&self) -> Vec<String> {
        let mut missed = Vec::new();
        let r = &self.resume;
        if let Some(x) = self.ratio(|a| a.median_completion_s).filter(|&x| x > 1.0) {
            missed.push(format!("median {x:.2}x"));
        }
        if let Some(x) = self.ratio(|a| a.p95_completion_s).filter(|&x| x > 1.1) {
            missed.push(format!("p95 {x:.2}x"));
        }
        let lost_limit = 1.5 * self.baseline.lost_packets.max(1) as f64;
        if r.lost_packets as f64 > lost_limit {
            missed.push(format!("lost {}", self.lost_ratio()));
        }
        if let Some(j) = r.jain_fairness.filter(|&j| j < 0.9) {
            missed.push(format!("jain {j:.2}"));
        }
        if let Some(s) = r.incumbent_share.filter(|&s| s < 0.5) {
            missed.push(format!("incumbent {s:.2}"));
        }
        missed
    }
}

/// Runs both arms of `crowd` (side by side on two threads: each has its own
/// virtual clock) and reports them.
pub fn run(crowd: &Crowd) -> Result<CrowdReport, SimError> {
    let arms = crate::parallel::run_parallel(vec![true, false], 2, |resume| run_arm(crowd, resume));
    let mut arms = arms.into_iter();
    let (Some(resume), Some(baseline)) = (arms.next(), arms.next()) else {
        return Err(SimError::Stalled("an arm did not run".into()));
    };
    Ok(CrowdReport::of(crowd, &resume?, &baseline?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&ten, 0.95), Some(10.0));
        assert_eq!(percentile(&ten, 0.5), Some(5.0));
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 0.95), Some(95.0));
        assert_eq!(jain(&[2.0, 2.0, 2.0]), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
    }

    #[test]
    fn clients_are_on_distinct_prefixes() {
        let prefixes: std::collections::HashSet<_> = (0..300)
            .map(|i| match client_ip(i) {
                IpAddr::V4(ip) => [ip.octets()[0], ip.octets()[1], ip.octets()[2]],
                IpAddr::V6(_) => unreachable!(),
            })
            .collect();
        assert_eq!(prefixes.len(), 300);
    }

    #[test]
    fn offsets_are_seeded_and_within_the_spread() {
        let crowd = Crowd {
            clients: 50,
            ..Crowd::default()
        };
        let offsets = crowd.offsets();
        assert_eq!(offsets, crowd.offsets());
        assert!(offsets.contains(&Duration::ZERO));
        assert!(offsets.iter().all(|&o| o <= crowd.spread));
        let other = Crowd { seed: 2, ..crowd };
        assert_ne!(offsets, other.offsets());
    }
}
