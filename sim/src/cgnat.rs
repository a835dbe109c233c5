//! Many users behind one address prefix: a carrier-grade NAT, a
//! campus or a satellite beam's gateway, whose users share one access path
//! and, under RFC 9959's one saved set per Remote Endpoint, one saved set.
//!
//! `users` clients at 100.64.0.1, .2, ... (one /24) share one bottleneck
//! and one server (one token key, one saved-set guard), and each downloads
//! `size` bytes `downloads` times, at times drawn uniformly over `window`
//! from the seed; a user whose previous download is still running starts
//! the next one when it completes. A client keeps a finished connection for
//! a second (the late tokens), then closes it. The same schedule runs in
//! three arms, each a world of its own: `baseline` (no tokens presented),
//! `one-set` (the server's Remote Endpoint is the client's /24, the
//! default: the users share one saved set) and `per-address` (a /32 prefix:
//! each user has a set of its own, which RFC 9959 allows only for networks
//! known to be one client each).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::net::Ipv4Addr;
use std::time::Duration;

use cr_endpoint::ex_token::AddressPrefixes;
use cr_endpoint::Refusal;
use cr_serve::bottleneck::{Discipline, Policer};
use cr_serve::CongestionControl;
use cr_serve::Protocol;
use serde::Serialize;

use crate::crowd::endpoint_settings;
use crate::crowd::in_world;
use crate::crowd::mean;
use crate::crowd::median;
use crate::crowd::LINGER;
use crate::endpoint::TokenConfig;
use crate::error::SimError;
use crate::link::SimTime;
use crate::report::ConnectionReport;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::units::QueueLimit;
use crate::units::Rate;
use crate::world::ConnectionRecord;
use crate::world::Flow;
use crate::world::World;

/// Virtual time allowed after the last scheduled start.
const TIME_LIMIT: Duration = Duration::from_secs(900);

/// The random stream the schedule comes from (the links use 1 and 2, the
/// crowd's offsets 3).
const STREAM_SCHEDULE: u64 = 4;

/// Users behind one prefix downloading at random times.
#[derive(Clone, Debug, PartialEq)]
pub struct Cgnat {
    /// Users, all in 100.64.0.0/24.
    pub users: usize,
    /// Downloads per user.
    pub downloads: usize,
    /// The downloads start at uniform random times within this.
    pub window: Duration,
    /// Bottleneck rate (both directions).
    pub rate: Rate,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Bytes per download.
    pub size: u64,
    /// The server's congestion controller.
    pub cc: CongestionControl,
    /// The queue's limit per direction.
    pub queue: QueueLimit,
    /// The bottleneck's queue: drop-tail, CoDel or fq_codel (see
    /// [`Scenario::discipline`]).
    pub discipline: Discipline,
    /// A token-bucket policer before the queue, in both directions.
    pub policer: Option<Policer>,
    /// Seed of the link and of the schedule.
    pub seed: u64,
    /// The application.
    pub app: Protocol,
}

impl Default for Cgnat {
    /// 20 users, 3 downloads of 1 MiB each within 120 s, over 50 Mbit/s and
    /// 600 ms (a GEO beam's gateway), CUBIC.
    fn default() -> Self {
        Cgnat {
            users: 20,
            downloads: 3,
            window: Duration::from_secs(120),
            rate: Rate::mbit(50),
            rtt: Duration::from_millis(600),
            size: 1 << 20,
            cc: CongestionControl::Cubic,
            queue: QueueLimit::Bdp(1.0),
            discipline: Discipline::DropTail,
            policer: None,
            seed: 1,
            app: Protocol::H3,
        }
    }
}

/// The arms, in order: name and the Remote Endpoint's IPv4 prefix length
/// (`None`: no tokens presented).
pub const ARMS: [(&str, Option<u8>); 3] = [
    ("baseline", None),
    ("one-set", Some(24)),
    ("per-address", Some(32)),
];

impl Cgnat {
    /// The session scenario with the same path and endpoints.
    pub fn scenario(&self, resume: bool) -> Scenario {
        Scenario {
            rate: self.rate,
            rtt: self.rtt,
            size: self.size,
            cc: self.cc,
            queue: self.queue,
            discipline: self.discipline,
            policer: self.policer,
            seed: self.seed,
            app: self.app,
            resume,
            ..Scenario::default()
        }
    }

    /// Rejects parameters the simulator cannot run.
    pub fn check(&self) -> Result<(), SimError> {
        if !(1..=250).contains(&self.users) || self.downloads == 0 {
            return Err(SimError::Scenario(
                "1 to 250 users, at least one download each".into(),
            ));
        }
        self.scenario(true).check()
    }

    /// Every download's scheduled start and user, in time order.
    pub fn schedule(&self) -> Vec<(Duration, usize)> {
        let mut rng = Rng::new(self.seed, STREAM_SCHEDULE);
        let window = u64::try_from(self.window.as_nanos()).unwrap_or(u64::MAX);
        let mut starts: Vec<(Duration, usize)> = (0..self.users)
            .flat_map(|user| std::iter::repeat_n(user, self.downloads))
            .map(|user| (Duration::from_nanos(rng.below_inclusive(window)), user))
            .collect();
        starts.sort();
        starts
    }
}

/// User `index`'s address: 100.64.0.(index + 1).
pub fn user_ip(index: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        100,
        64,
        0,
        u8::try_from(index + 1).unwrap_or(u8::MAX),
    ))
}

/// One download of one user.
#[derive(Debug)]
pub struct Download {
    /// The user.
    pub user: usize,
    /// The user's how-manieth download (0: the first, with no token).
    pub nth: usize,
    /// The connection.
    pub record: ConnectionRecord,
}

/// Where a user stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Idle,
    Running,
    Lingering(SimTime),
}

/// Runs one arm: `prefix` is the Remote Endpoint's IPv4 prefix length
/// (`None`: the clients present no tokens, with the default /24).
pub fn run_arm(cgnat: &Cgnat, prefix: Option<u8>) -> Result<Vec<Download>, SimError> {
    cgnat.check()?;
    let scenario = cgnat.scenario(prefix.is_some());
    in_world(&scenario, |world| arm_in(world, cgnat, &scenario, prefix))
}

fn arm_in(
    world: &mut World,
    cgnat: &Cgnat,
    scenario: &Scenario,
    prefix: Option<u8>,
) -> Result<Vec<Download>, SimError> {
    let endpoints = endpoint_settings(scenario, scenario.slow_start, true);
    let tokens = TokenConfig {
        bdp_prefixes: AddressPrefixes {
            v4: prefix.unwrap_or(24),
            v6: 128,
        },
        ..TokenConfig::default()
    };
    let server = world.add_server(endpoints, tokens)?;
    let flows = (0..cgnat.users)
        .map(|u| world.add_client(endpoints, server, user_ip(u), false))
        .collect::<Result<Vec<_>, _>>()?;
    let mut state = vec![State::Idle; cgnat.users];
    let mut queued = vec![0usize; cgnat.users];
    let mut downloads = Vec::new();
    let schedule = cgnat.schedule();
    let mut next = 0;
    let origin = world.now();

    // A download's `nth` is set once all are in, by start time.
    let start = |world: &mut World, user: usize, downloads: &mut Vec<Download>| {
        let previous = world.start_connection(flows[user], cgnat.size, false)?;
        if let Some(record) = previous {
            downloads.push(Download {
                user,
                nth: 0,
                record,
            });
        }
        Ok::<_, SimError>(())
    };
    loop {
        let arrival = schedule.get(next).map(|&(at, _)| origin + at);
        let linger_end = state
            .iter()
            .filter_map(|s| match s {
                State::Lingering(until) => Some(*until),
                _ => None,
            })
            .min();
        let running: Vec<usize> = (0..cgnat.users)
            .filter(|&u| state[u] == State::Running)
            .collect();
        if arrival.is_none() && linger_end.is_none() && running.is_empty() {
            break;
        }
        let limit = origin + cgnat.window + TIME_LIMIT;
        let until = [arrival, linger_end, Some(limit)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(limit);
        let finished = world.run_until_or(until, |w| {
            running
                .iter()
                .any(|&u| w.flow(flows[u]).is_some_and(Flow::is_done))
        })?;
        let now = world.now();
        if finished {
            for &u in &running {
                if world.flow(flows[u]).is_some_and(Flow::is_done) {
                    if queued[u] > 0 {
                        queued[u] -= 1;
                        start(world, u, &mut downloads)?;
                    } else {
                        state[u] = State::Lingering(now + LINGER);
                    }
                }
            }
            continue;
        }
        if now >= limit {
            return Err(SimError::TimedOut(format!(
                "downloads still running {:.1} s after the window",
                TIME_LIMIT.as_secs_f64()
            )));
        }
        for u in 0..cgnat.users {
            if matches!(state[u], State::Lingering(end) if end <= now) {
                let record = world
                    .retire_connection(flows[u])
                    .ok_or_else(|| SimError::Stalled("a connection vanished".into()))?;
                downloads.push(Download {
                    user: u,
                    nth: 0,
                    record,
                });
                state[u] = State::Idle;
            }
        }
        while let Some(&(_, u)) = schedule.get(next).filter(|&&(at, _)| origin + at <= now) {
            next += 1;
            match state[u] {
                State::Running => queued[u] += 1,
                State::Idle | State::Lingering(_) => {
                    start(world, u, &mut downloads)?;
                    state[u] = State::Running;
                }
            }
        }
    }
    // A connection retired after its linger is its user's latest.
    let mut seen = vec![0usize; cgnat.users];
    let mut ordered: Vec<Download> = Vec::with_capacity(downloads.len());
    downloads.sort_by_key(|d| d.record.started_at);
    for mut d in downloads {
        d.nth = seen[d.user];
        seen[d.user] += 1;
        ordered.push(d);
    }
    ordered.sort_by_key(|d| (d.user, d.nth));
    Ok(ordered)
}

/// Rounds seconds to the millisecond.
fn round_ms(seconds: f64) -> f64 {
    (seconds * 1e3).round() / 1e3
}

/// One arm's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArmReport {
    /// `baseline`, `one-set` or `per-address`.
    pub arm: &'static str,
    /// The Remote Endpoint's IPv4 prefix length (`null`: no tokens).
    pub prefix_len: Option<u8>,
    /// Downloads.
    pub downloads: usize,
    /// Downloads that presented a token with a saved set.
    pub presented: usize,
    /// Downloads whose server jumped.
    pub engaged: usize,
    /// Downloads whose jump retreated.
    pub retreated: usize,
    /// Presented saved sets that did not resume, by reason (`superseded`,
    /// `already_used`, `revoked`, ...).
    pub refused: BTreeMap<&'static str, usize>,
    /// Median completion of every download, seconds.
    pub median_completion_s: Option<f64>,
    /// Mean completion of every download.
    pub mean_completion_s: Option<f64>,
    /// Median completion of the users' second and later downloads (those
    /// that could resume).
    pub median_repeat_completion_s: Option<f64>,
    /// Mean completion of those.
    pub mean_repeat_completion_s: Option<f64>,
    /// Median completion of the downloads that jumped.
    pub median_engaged_completion_s: Option<f64>,
    /// Packets the server declared lost, over all downloads.
    pub lost_packets: u64,
    /// Packets the server sent.
    pub sent_packets: u64,
    /// The most downloads running at once.
    pub max_concurrent: usize,
    /// Seconds of download time saved over the baseline, summed over the
    /// downloads (positive: faster).
    pub saved_vs_baseline_s: f64,
}

impl ArmReport {
    fn of(
        cgnat: &Cgnat,
        (arm, prefix_len): (&'static str, Option<u8>),
        downloads: &[Download],
        baseline: &[Download],
    ) -> ArmReport {
        let limit = Scenario::limit(cgnat.size, cgnat.rate, cgnat.rtt);
        let reports: Vec<ConnectionReport> = downloads
            .iter()
            .map(|d| ConnectionReport::of(&d.record, cgnat.size, limit))
            .collect();
        let completions = |pick: &dyn Fn(usize, &ConnectionReport) -> bool| -> Vec<f64> {
            reports
                .iter()
                .enumerate()
                .filter(|&(i, c)| pick(i, c))
                .filter_map(|(_, c)| c.completion_s)
                .collect()
        };
        let all = completions(&|_, _| true);
        let repeat = completions(&|i, _| downloads[i].nth > 0);
        let engaged = completions(&|_, c| c.cr.engaged);
        let mut refused = BTreeMap::new();
        for d in downloads {
            let why = d
                .record
                .server_report
                .as_ref()
                .and_then(|r| r.resume.as_ref().err());
            if let Some(refusal) = why.and_then(Refusal::of) {
                *refused.entry(refusal.as_str()).or_insert(0) += 1;
            }
        }
        let mut spans: Vec<(SimTime, i32)> = downloads
            .iter()
            .filter_map(|d| Some((d.record.first_packet_at?, d.record.progress.done?)))
            .flat_map(|(from, to)| [(from, 1), (to, -1)])
            .collect();
        spans.sort_by_key(|&(t, step)| (t, step));
        let max_concurrent = spans
            .iter()
            .scan(0i32, |open, &(_, step)| {
                *open += step;
                Some(*open)
            })
            .max()
            .unwrap_or(0);
        let sum = |d: &[Download]| -> f64 {
            d.iter()
                .map(|d| ConnectionReport::of(&d.record, cgnat.size, limit))
                .filter_map(|c| c.completion_s)
                .sum()
        };
        ArmReport {
            arm,
            prefix_len,
            downloads: reports.len(),
            presented: reports
                .iter()
                .filter(|c| c.token_presented.is_some())
                .count(),
            engaged: reports.iter().filter(|c| c.cr.engaged).count(),
            retreated: reports
                .iter()
                .filter(|c| c.cr.phases.iter().any(|p| p.to == "safe_retreat"))
                .count(),
            refused,
            median_completion_s: median(&all).map(round_ms),
            mean_completion_s: mean(&all).map(round_ms),
            median_repeat_completion_s: median(&repeat).map(round_ms),
            mean_repeat_completion_s: mean(&repeat).map(round_ms),
            median_engaged_completion_s: median(&engaged).map(round_ms),
            lost_packets: reports.iter().map(|c| c.packets_lost).sum(),
            sent_packets: reports.iter().map(|c| c.packets_sent).sum(),
            max_concurrent: usize::try_from(max_concurrent).unwrap_or(0),
            saved_vs_baseline_s: round_ms(sum(baseline) - sum(downloads)),
        }
    }
}

/// The JSON document of `cr-sim cgnat --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CgnatReport {
    /// Users behind the prefix.
    pub users: usize,
    /// Downloads per user.
    pub downloads_per_user: usize,
    /// The window the downloads start in, seconds.
    pub window_s: f64,
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay, seconds.
    pub rtt_s: f64,
    /// Bytes per download.
    pub size_bytes: u64,
    /// Congestion controller.
    pub cc: &'static str,
    /// Seed.
    pub seed: u64,
    /// One download alone on the path: 2*RTT + size/rate, seconds.
    pub limit_s: f64,
    /// `baseline`, `one-set`, `per-address`.
    pub arms: Vec<ArmReport>,
}

/// Runs the three arms of `cgnat` (on the available cores) and reports
/// them.
pub fn run(cgnat: &Cgnat) -> Result<CgnatReport, SimError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results =
        crate::parallel::run_parallel(ARMS.to_vec(), threads, |(_, prefix)| run_arm(cgnat, prefix));
    let results = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let baseline = results
        .first()
        .ok_or_else(|| SimError::Stalled("no baseline".into()))?;
    Ok(CgnatReport {
        users: cgnat.users,
        downloads_per_user: cgnat.downloads,
        window_s: cgnat.window.as_secs_f64(),
        rate_bps: cgnat.rate.bps(),
        rtt_s: cgnat.rtt.as_secs_f64(),
        size_bytes: cgnat.size,
        cc: cgnat.cc.name(),
        seed: cgnat.seed,
        limit_s: round_ms(Scenario::limit(cgnat.size, cgnat.rate, cgnat.rtt).as_secs_f64()),
        arms: ARMS
            .iter()
            .zip(&results)
            .map(|(&arm, downloads)| ArmReport::of(cgnat, arm, downloads, baseline))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_seeded_sorted_and_complete() {
        let cgnat = Cgnat::default();
        let schedule = cgnat.schedule();
        assert_eq!(schedule, cgnat.schedule());
        assert_eq!(schedule.len(), 60);
        assert!(schedule.windows(2).all(|w| w[0] <= w[1]));
        assert!(schedule.iter().all(|&(at, _)| at <= cgnat.window));
        for user in 0..20 {
            assert_eq!(schedule.iter().filter(|&&(_, u)| u == user).count(), 3);
        }
    }

    #[test]
    fn users_share_one_prefix() {
        let octets = |ip| match ip {
            IpAddr::V4(ip) => ip.octets(),
            IpAddr::V6(_) => [0; 4],
        };
        assert!((0..20).all(|u| octets(user_ip(u))[..3] == [100, 64, 0]));
        assert_ne!(user_ip(0), user_ip(19));
    }
}
