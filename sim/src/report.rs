//! The results of a session in the stable JSON schema of `cr-sim run
//! --json` (documented in the crate documentation).

use std::time::Duration;

use cr_serve::bottleneck::{Policer, Schedule};
use qlog_cr::Phase;
use qlog_cr::Trace;
use serde::Serialize;

use crate::endpoint::TokenCapacity;
use crate::link::SimTime;
use crate::packing::PackingReport;
use crate::scenario::Scenario;
use crate::session::SessionOutcome;
use crate::units::LossWindow;
use crate::world::ConnectionRecord;

/// Rounds seconds to the microsecond, so JSON stays short and stable.
fn round_s(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e6
}

/// Rounds a rate or ratio to three decimals.
pub(crate) fn round3(value: f64) -> f64 {
    (value * 1e3).round() / 1e3
}

/// The `scenario` object: the parameters of the session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioView {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay, seconds.
    pub rtt_s: f64,
    /// Object size of the first connection, bytes.
    pub size_bytes: u64,
    /// Object sizes of the later connections, bytes.
    pub later_sizes_bytes: Vec<u64>,
    /// Congestion controller: `cubic`, `reno` or `bbr2`.
    pub cc: &'static str,
    /// Application: `h3` or `hq-interop`.
    pub app: &'static str,
    /// Random loss probability.
    pub loss: f64,
    /// Loss windows, seconds from each connection's start.
    pub loss_windows: Vec<LossWindow>,
    /// Rate of the second connection's path, when it differs.
    pub rate2_bps: Option<u64>,
    /// RTT of the second connection's path, when it differs.
    pub rtt2_s: Option<f64>,
    /// Drop-tail limit of the first connection's path, bytes per direction.
    pub queue_bytes: u64,
    /// Time between the first download's end and the second connection.
    pub gap_s: f64,
    /// Largest random extra one-way delay, seconds.
    pub jitter_s: f64,
    /// Seed of the link's randomness.
    pub seed: u64,
    /// Whether the second connection could resume (false: the baseline).
    pub resume: bool,
    /// Whether a competing long download shared the link.
    pub competing_flow: bool,
    /// Whether the client closed each connection once its download was
    /// complete (otherwise it kept it open until the next one).
    pub close_when_done: bool,
    /// Whether the endpoints sent short packets wherever the congestion
    /// window had a little room (quiche's default).
    pub small_packets: bool,
    /// How Reno and CUBIC ended their first slow start: `hystart` or
    /// `search`.
    pub slow_start: &'static str,
    /// Whether the client sent each later connection's request as early
    /// data (0-RTT), resuming its TLS session.
    pub early_data: bool,
    /// The bottleneck's queue: `droptail`, `codel` or `fq_codel`.
    pub queue_discipline: &'static str,
    /// The policer of the first connection's path, if any.
    pub policer: Option<Policer>,
    /// The policer of the later connections' path, when it differs.
    pub policer2: Option<Policer>,
    /// The link's rate and delay over time, when a schedule set them.
    pub schedule: Option<Vec<StepView>>,
    /// The later connections' schedule, when it differs.
    pub schedule2: Option<Vec<StepView>>,
    /// Whether the server updated its smoothed RTT and rttvar once per
    /// round trip rather than per ACK.
    pub rtt_once_per_rtt: bool,
    /// Whether Reno and CUBIC paced their packets.
    pub pace: bool,
    /// Whether slow start could go on past the saved capacity after a
    /// validated jump.
    pub slow_start_past_saved: bool,
}

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepView {
    /// When it begins, seconds after each connection's start.
    pub at_s: f64,
    /// The rate from then on.
    pub rate_bps: u64,
    /// The round-trip propagation delay from then on, seconds.
    pub rtt_s: f64,
}

impl StepView {
    /// The steps of `schedule`.
    pub fn of(schedule: &Schedule) -> Vec<StepView> {
        schedule
            .steps()
            .iter()
            .map(|step| StepView {
                at_s: round_s(step.at.as_secs_f64()),
                rate_bps: step.rate.bps(),
                rtt_s: round_s(step.rtt.as_secs_f64()),
            })
            .collect()
    }
}

impl ScenarioView {
    /// The view of `scenario`.
    pub fn of(scenario: &Scenario) -> ScenarioView {
        ScenarioView {
            rate_bps: scenario.rate.bps(),
            rtt_s: round_s(scenario.rtt.as_secs_f64()),
            size_bytes: scenario.size,
            later_sizes_bytes: scenario.sizes()[1..].to_vec(),
            cc: scenario.cc.name(),
            app: scenario.app.name(),
            loss: scenario.loss.value(),
            loss_windows: scenario.loss_windows.clone(),
            rate2_bps: scenario.rate2.map(|r| r.bps()),
            rtt2_s: scenario.rtt2.map(|r| round_s(r.as_secs_f64())),
            queue_bytes: scenario.queue_bytes(scenario.rate, scenario.rtt),
            gap_s: round_s(scenario.gap.as_secs_f64()),
            jitter_s: round_s(scenario.jitter.as_secs_f64()),
            seed: scenario.seed,
            resume: scenario.resume,
            competing_flow: scenario.competing.is_some(),
            close_when_done: scenario.close_when_done,
            small_packets: scenario.small_packets,
            slow_start: scenario.slow_start.name(),
            early_data: scenario.early_data,
            rtt_once_per_rtt: scenario.rtt_once_per_rtt,
            pace: scenario.pace,
            slow_start_past_saved: scenario.slow_start_past_saved,
            queue_discipline: scenario.discipline.name(),
            policer: scenario.policer,
            policer2: scenario.policer2,
            schedule: scenario.schedule.as_ref().map(StepView::of),
            schedule2: scenario.schedule2.as_ref().map(StepView::of),
        }
    }
}

/// One Careful Resume phase change seen in the server's qlog.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseChangeReport {
    /// Seconds since the client's first packet.
    pub t_s: f64,
    /// The phase left (`null` for the first event without one).
    pub from: Option<&'static str>,
    /// The phase entered.
    pub to: &'static str,
    /// Why, when the event says.
    pub trigger: Option<&'static str>,
}

/// What Careful Resume did on a connection, from the server's qlog.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CrReport {
    /// Whether the window jumped (an Unvalidated phase was entered).
    pub engaged: bool,
    /// The congestion window on entering Unvalidated, bytes.
    pub jump_cwnd: Option<u64>,
    /// The phase changes in time order.
    pub phases: Vec<PhaseChangeReport>,
    /// The phase at the end of the trace.
    pub final_phase: Option<&'static str>,
}

impl CrReport {
    /// The trigger that ended a jump: the change out of Unvalidated or
    /// Validating into normal operation or Safe Retreat.
    pub fn exit_trigger(&self) -> Option<&'static str> {
        self.phases
            .iter()
            .find(|c| {
                let name = Phase::as_str;
                let jumped = [name(Phase::Unvalidated), name(Phase::Validating)];
                let after = [name(Phase::Normal), name(Phase::SafeRetreat)];
                c.from.is_some_and(|from| jumped.contains(&from)) && after.contains(&c.to)
            })
            .and_then(|c| c.trigger)
    }

    /// The report of a server `trace` whose time 0 lies `offset` after the
    /// client's first packet.
    pub fn from_trace(trace: &Trace, offset: Duration) -> CrReport {
        let phases: Vec<PhaseChangeReport> = trace
            .phase_changes
            .iter()
            .map(|c| PhaseChangeReport {
                t_s: round_s(offset.as_secs_f64() + c.time_ms / 1000.0),
                from: c.update.old.map(Phase::as_str),
                to: c.update.new.as_str(),
                trigger: c.update.trigger.map(|t| t.as_str()),
            })
            .collect();
        let jump = trace
            .phase_changes
            .iter()
            .find(|c| c.update.new == Phase::Unvalidated);
        CrReport {
            engaged: jump.is_some(),
            jump_cwnd: jump.and_then(|c| {
                c.update
                    .state_data
                    .congestion_window
                    .or_else(|| trace.timelines.congestion_window.at(c.time_ms))
            }),
            final_phase: trace.phase_changes.last().map(|c| c.update.new.as_str()),
            phases,
        }
    }
}

/// The saved set a BDP token carries, as the client reads it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TokenReport {
    /// Capacity, bytes.
    pub capacity_bytes: u64,
    /// RTT, seconds.
    pub rtt_s: f64,
}

impl From<TokenCapacity> for TokenReport {
    fn from(token: TokenCapacity) -> Self {
        TokenReport {
            capacity_bytes: token.capacity,
            rtt_s: round_s(token.rtt.as_secs_f64()),
        }
    }
}

/// The results of one connection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConnectionReport {
    /// Seconds from the client's first packet to the last body byte.
    pub completion_s: Option<f64>,
    /// Seconds from the client's first packet to the first body byte.
    pub ttfb_s: Option<f64>,
    /// Object size over completion time, Mbit/s.
    pub goodput_mbps: Option<f64>,
    /// Datagrams the server sent.
    pub packets_sent: u64,
    /// Datagrams the server declared lost.
    pub packets_lost: u64,
    /// Bytes fetched.
    pub size_bytes: u64,
    /// The saved set of the token the client presented (`null`: none, or a
    /// token without one).
    pub token_presented: Option<TokenReport>,
    /// The saved set of the token the client would present next.
    pub token_left: Option<TokenReport>,
    /// The physical limit 2*RTT + size/rate of this connection's path.
    pub limit_s: f64,
    /// Completion time over `limit_s`.
    pub ratio_to_limit: Option<f64>,
    /// What Careful Resume did.
    pub cr: CrReport,
    /// Whether the server accepted the request as early data (0-RTT): a
    /// session run with early data whose ticket had expired goes on in
    /// 1-RTT, and its figures are then no 0-RTT figures.
    pub early_data: bool,
    /// How well the server packed the data into packets (`null`: the
    /// server never had a side).
    pub packing: Option<PackingReport>,
    /// How many times the server's loss detection found persistent
    /// congestion (RFC 9002, 7.6): every packet lost over three probe
    /// timeouts, as in an outage.
    pub persistent_congestion: usize,
    /// How many times the server's probe timeout fired.
    pub probe_timeouts: usize,
    /// Packets the server declared lost that were acknowledged later.
    pub spurious_losses: usize,
    /// How the server's controller left its first slow start (BBR2: its
    /// Startup), if it did.
    pub slow_start_exit: Option<SlowStartExit>,
}

/// How a controller left its first slow start.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SlowStartExit {
    /// Why: `loss`, `bandwidth_plateau` (SEARCH's deliveries stopped
    /// keeping up, or BBR2's bandwidth stopped growing),
    /// `conservative_slow_start_rounds` (HyStart++ saw the RTT rise and its
    /// conservative slow start ran out) or `persistent_queue` (BBR2).
    pub reason: &'static str,
    /// The congestion window then, bytes.
    pub cwnd_bytes: u64,
}

impl SlowStartExit {
    fn of(exit: quiche::StartupExit) -> SlowStartExit {
        use quiche::StartupExitReason as Reason;
        SlowStartExit {
            reason: match exit.reason {
                Reason::Loss => "loss",
                Reason::BandwidthPlateau => "bandwidth_plateau",
                Reason::PersistentQueue => "persistent_queue",
                Reason::ConservativeSlowStartRounds => "conservative_slow_start_rounds",
            },
            cwnd_bytes: exit.cwnd as u64,
        }
    }
}

impl ConnectionReport {
    /// The report of `record`, a connection fetching `size` bytes over a
    /// path whose limit is `limit`.
    pub fn of(record: &ConnectionRecord, size: u64, limit: Duration) -> ConnectionReport {
        let since_first = |t: Option<SimTime>| {
            let start = record.first_packet_at?;
            t?.checked_sub(start)
        };
        let completion = since_first(record.progress.done);
        let ttfb = since_first(record.progress.first_byte);
        let stats = record.server_stats.as_ref();
        let packets = record.server_report.as_ref().map_or((0, 0), |r| r.packets);
        let cr = record
            .server_qlog
            .as_ref()
            .and_then(|q| q.trace("server"))
            .map(|trace| {
                let offset = since_first(record.server_created_at).unwrap_or_default();
                CrReport::from_trace(&trace, offset)
            })
            .unwrap_or_default();
        let limit_s = limit.as_secs_f64();
        ConnectionReport {
            completion_s: completion.map(|c| round_s(c.as_secs_f64())),
            ttfb_s: ttfb.map(|t| round_s(t.as_secs_f64())),
            goodput_mbps: completion
                .filter(|c| !c.is_zero())
                .map(|c| round3(size as f64 * 8.0 / c.as_secs_f64() / 1e6)),
            packets_sent: packets.0 as u64,
            packets_lost: packets.1 as u64,
            size_bytes: size,
            token_presented: record.token_presented.map(TokenReport::from),
            token_left: record.token_left.map(TokenReport::from),
            limit_s: round_s(limit_s),
            ratio_to_limit: completion.map(|c| round3(c.as_secs_f64() / limit_s)),
            cr,
            early_data: record.early_data_accepted,
            packing: stats.map(|s| PackingReport::of(&record.server_datagrams, s, size)),
            persistent_congestion: record.server_persistent_congestion,
            probe_timeouts: record.server_probe_timeouts,
            spurious_losses: stats.map_or(0, |s| s.spurious_lost),
            slow_start_exit: record.server_startup_exit.map(SlowStartExit::of),
        }
    }

    /// Packets the server declared lost over packets it sent.
    pub fn loss_ratio(&self) -> f64 {
        self.packets_lost as f64 / self.packets_sent.max(1) as f64
    }
}

/// The competing flow's throughput around the second connection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompetingReport {
    /// Mbit/s before the second connection started.
    pub before_mbps: f64,
    /// Mbit/s while the second connection ran.
    pub during_mbps: f64,
    /// `during_mbps / before_mbps`.
    pub kept: Option<f64>,
    /// Mbit/s from the second connection's jump until Careful Resume ended;
    /// `null` when it did not jump.
    pub through_jump_mbps: Option<f64>,
    /// `through_jump_mbps / before_mbps`.
    pub kept_through_jump: Option<f64>,
}

/// The results of a session: the JSON document of `cr-sim run --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The parameters.
    pub scenario: ScenarioView,
    /// 2*RTT + size/rate of the first connection's path, seconds.
    pub limit_s: f64,
    /// Every connection, in order: the first, then each resumed one.
    pub connections: Vec<ConnectionReport>,
    /// First completion time over the last one's.
    pub speedup: Option<f64>,
    /// The competing flow, when there was one.
    pub competing: Option<CompetingReport>,
}

impl Report {
    /// The report of a finished session.
    pub fn of(outcome: &SessionOutcome) -> Report {
        let s = &outcome.scenario;
        let connections: Vec<ConnectionReport> = outcome
            .connections
            .iter()
            .zip(s.sizes())
            .enumerate()
            .map(|(index, (record, size))| {
                let limit = match index {
                    0 => Scenario::limit(size, s.rate, s.rtt),
                    _ => Scenario::limit(size, s.second_rate(), s.second_rtt()),
                };
                ConnectionReport::of(record, size, limit)
            })
            .collect();
        let completion = |c: Option<&ConnectionReport>| c.and_then(|c| c.completion_s);
        let speedup = match (
            completion(connections.first()),
            completion(connections.last()),
        ) {
            (Some(a), Some(b)) if b > 0.0 => Some(round3(a / b)),
            _ => None,
        };
        Report {
            scenario: ScenarioView::of(s),
            limit_s: round_s(Scenario::limit(s.size, s.rate, s.rtt).as_secs_f64()),
            connections,
            speedup,
            competing: outcome.competing.map(|c| CompetingReport {
                before_mbps: round3(c.before_bps / 1e6),
                during_mbps: round3(c.during_bps / 1e6),
                kept: (c.before_bps > 0.0).then(|| round3(c.during_bps / c.before_bps)),
                through_jump_mbps: c.through_jump_bps.map(|b| round3(b / 1e6)),
                kept_through_jump: c
                    .through_jump_bps
                    .filter(|_| c.before_bps > 0.0)
                    .map(|b| round3(b / c.before_bps)),
            }),
        }
    }

    /// The first connection.
    pub fn first(&self) -> &ConnectionReport {
        &self.connections[0]
    }

    /// The last connection (the second, in a two-connection session).
    pub fn last(&self) -> &ConnectionReport {
        self.connections
            .last()
            .expect("a session has at least two connections")
    }
}
