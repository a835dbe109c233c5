//! Sweeps: one kind of session run over ranges of rates, RTTs, sizes,
//! random loss, seeds, outages and controllers, as the full grid or a fixed
//! sample of it, one row per run and a summary per controller. A target
//! judged at one point says nothing of that point's neighbours; a sweep
//! judges it over a region.
//!
//! This module owns the grid ([`Grid`]), the sampling design
//! ([`Sweep::points`]), the row of a run ([`SweepRun`]), the summary
//! ([`summarise`], [`render`]) and the guards run over sweeps ([`Guard`],
//! [`Check`]); `cr-sim sweep`, the satellite benchmark and
//! `tests/sweeps.rs` use it.
//!
//! # Sampling design
//!
//! With a sample of N points, rates and RTTs are ranges (from the smallest
//! to the largest value listed) forming a Latin hypercube on log scales:
//! each range is cut into N strata of equal ratio, each stratum holds
//! exactly one point, drawn uniformly (on the log scale) within it, and the
//! strata of the two ranges are paired by a seeded permutation. Sizes,
//! losses, seeds and outages take their listed values in turn, each value
//! as often as another (within one), shuffled. Every point runs with every
//! controller, so controllers are compared on the same paths. The design
//! is fixed by its seed: the same seed draws the same points, another seed
//! draws new ones, and no point is chosen by hand.

use std::time::Duration;

use qlog_cr::Trigger;
use serde::Serialize;

use crate::bottlenecks;
use crate::first_connections::ideal_doubling;
use crate::first_connections::SweepPath;
use crate::parallel::run_parallel;
use crate::report::ConnectionReport;
use crate::report::Report;
use crate::report::ScenarioView;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::session::run_session;
use crate::table;
use crate::units::Outage;
use crate::units::Probability;
use crate::units::QueueLimit;
use crate::units::Rate;
use crate::units::Volume;
use cr_serve::bottleneck::{Discipline, Policer, Schedule};
use cr_serve::CongestionControl;

/// Random stream of the sampling design (see [`Rng::new`]), apart from the
/// links' (1 and 2).
const SAMPLE_STREAM: u64 = 3;

/// The values a sweep ranges over, and what each of its sessions measures.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// Bottleneck rates (a range when sampled).
    pub rates: Vec<Rate>,
    /// Round-trip propagation delays (a range when sampled).
    pub rtts: Vec<Duration>,
    /// Object sizes, fixed or multiples of each path's BDP.
    pub sizes: Vec<Volume>,
    /// Random loss probabilities.
    pub losses: Vec<Probability>,
    /// Seeds of the link's randomness.
    pub seeds: Vec<u64>,
    /// Outages; empty: none.
    pub outages: Vec<Outage>,
    /// The servers' congestion controllers.
    pub ccs: Vec<CongestionControl>,
    /// Drop-tail queue limit, on every path.
    pub queue: QueueLimit,
    /// Largest random extra one-way delay, on every path.
    pub jitter: Duration,
    /// The bottleneck's queue, on every path (see
    /// [`Scenario::discipline`]).
    pub discipline: Discipline,
    /// A policer before the queue, on every path.
    pub policer: Option<Policer>,
    /// The rate and delay over time, on every path (see
    /// [`Scenario::schedule`]).
    pub schedule: Option<Schedule>,
    /// The RTT estimate updated once per round trip, on every path (see
    /// [`Scenario::rtt_once_per_rtt`]).
    pub rtt_once_per_rtt: bool,
    /// Reno and CUBIC pace, on every path (see [`Scenario::pace`]).
    pub pace: bool,
    /// Slow start past the saved capacity after a validated jump, on every
    /// path (see [`Scenario::slow_start_past_saved`]).
    pub slow_start_past_saved: bool,
    /// Whether each point runs a first connection and a second one
    /// presenting its token, beside the same seed's session whose second
    /// connection presents none; otherwise the first connection alone.
    pub resumed: bool,
}

impl Default for Grid {
    /// The default scenario's single point: 1 MiB at 10 Mbit/s and 800 ms,
    /// CUBIC, a 1 x BDP drop-tail queue, first connections only.
    fn default() -> Self {
        let base = Scenario::default();
        Grid {
            rates: vec![base.rate],
            rtts: vec![base.rtt],
            sizes: vec![Volume::Bytes(base.size)],
            losses: vec![base.loss],
            seeds: vec![base.seed],
            outages: Vec::new(),
            ccs: vec![base.cc],
            queue: base.queue,
            jitter: base.jitter,
            rtt_once_per_rtt: base.rtt_once_per_rtt,
            pace: base.pace,
            slow_start_past_saved: base.slow_start_past_saved,
            discipline: base.discipline,
            policer: base.policer,
            schedule: base.schedule,
            resumed: false,
        }
    }
}

/// One point of a grid: a path, an object, a controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Bottleneck rate.
    pub rate: Rate,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Object size.
    pub size: Volume,
    /// Random loss probability.
    pub loss: Probability,
    /// Seed of the link's randomness.
    pub seed: u64,
    /// The outage, if any.
    pub outage: Option<Outage>,
    /// The server's congestion controller.
    pub cc: CongestionControl,
}

impl Grid {
    /// The outage of each point: the listed ones, or none.
    fn outage_levels(&self) -> Vec<Option<Outage>> {
        match self.outages.as_slice() {
            [] => vec![None],
            outages => outages.iter().copied().map(Some).collect(),
        }
    }

    /// Every combination of the listed values.
    pub fn product(&self) -> Vec<Point> {
        let mut points = Vec::new();
        for &rate in &self.rates {
            for &rtt in &self.rtts {
                for &size in &self.sizes {
                    for &loss in &self.losses {
                        for &seed in &self.seeds {
                            for outage in self.outage_levels() {
                                for &cc in &self.ccs {
                                    points.push(Point {
                                        rate,
                                        rtt,
                                        size,
                                        loss,
                                        seed,
                                        outage,
                                        cc,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        points
    }

    /// `count` points of the sampling design drawn with `seed` (see the
    /// module documentation), each with every controller.
    pub fn sample(&self, count: usize, seed: u64) -> Vec<Point> {
        let mut rng = Rng::new(seed, SAMPLE_STREAM);
        let (Some((rate_lo, rate_hi)), Some((rtt_lo, rtt_hi))) = (
            range(self.rates.iter().map(|r| r.bps() as f64)),
            range(self.rtts.iter().map(Duration::as_secs_f64)),
        ) else {
            return Vec::new();
        };
        let rate_draws = latin_strata(count, &mut rng);
        let rtt_draws = latin_strata(count, &mut rng);
        let sizes = in_turn(&self.sizes, count, &mut rng);
        let losses = in_turn(&self.losses, count, &mut rng);
        let seeds = in_turn(&self.seeds, count, &mut rng);
        let outages = in_turn(&self.outage_levels(), count, &mut rng);
        if sizes.is_empty() || losses.is_empty() || seeds.is_empty() {
            return Vec::new();
        }
        let mut points = Vec::with_capacity(count * self.ccs.len());
        for i in 0..count {
            let bps = three_digits(log_between(rate_lo, rate_hi, rate_draws[i]));
            let rtt = three_digits(log_between(rtt_lo, rtt_hi, rtt_draws[i]) * 1e9);
            for &cc in &self.ccs {
                points.push(Point {
                    rate: Rate::from_bps(bps.clamp(rate_lo, rate_hi) as u64)
                        .unwrap_or(Rate::mbit(1)),
                    rtt: Duration::from_nanos(rtt.clamp(rtt_lo * 1e9, rtt_hi * 1e9) as u64),
                    size: sizes[i],
                    loss: losses[i],
                    seed: seeds[i],
                    outage: outages[i],
                    cc,
                });
            }
        }
        points
    }

    /// The session measuring `point`, presenting a token or not.
    pub fn scenario(&self, point: &Point, resume: bool) -> Scenario {
        let scenario = Scenario {
            rate: point.rate,
            rtt: point.rtt,
            size: point.size.bytes(point.rate, point.rtt).max(1),
            cc: point.cc,
            loss: point.loss,
            loss_windows: point.outage.iter().map(|o| o.window()).collect(),
            queue: self.queue,
            seed: point.seed,
            jitter: self.jitter,
            rtt_once_per_rtt: self.rtt_once_per_rtt,
            pace: self.pace,
            slow_start_past_saved: self.slow_start_past_saved,
            discipline: self.discipline,
            policer: self.policer,
            schedule: self.schedule.clone(),
            resume,
            ..Scenario::default()
        };
        if self.resumed {
            scenario
        } else {
            scenario.first_only()
        }
    }
}

/// The smallest and largest of `values`, if any.
fn range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// `count` numbers in [0, 1), one in each of `count` equal strata, in a
/// random order.
fn latin_strata(count: usize, rng: &mut Rng) -> Vec<f64> {
    let mut strata: Vec<usize> = (0..count).collect();
    shuffle(&mut strata, rng);
    strata
        .into_iter()
        .map(|k| (k as f64 + rng.next_f64()) / count as f64)
        .collect()
}

/// `count` values taking `levels` in turn (each as often as another,
/// within one), in a random order.
fn in_turn<T: Copy>(levels: &[T], count: usize, rng: &mut Rng) -> Vec<T> {
    if levels.is_empty() {
        return Vec::new();
    }
    let mut values: Vec<T> = (0..count).map(|i| levels[i % levels.len()]).collect();
    shuffle(&mut values, rng);
    values
}

/// Fisher-Yates.
fn shuffle<T>(items: &mut [T], rng: &mut Rng) {
    for i in (1..items.len()).rev() {
        let j = rng.below_inclusive(i as u64) as usize;
        items.swap(i, j);
    }
}

/// The point a fraction `u` of the way from `lo` to `hi` on a log scale.
fn log_between(lo: f64, hi: f64, u: f64) -> f64 {
    lo * (hi / lo).powf(u)
}

/// `value` rounded to three significant digits, so that sampled rates and
/// RTTs read as a person would write them.
fn three_digits(value: f64) -> f64 {
    if value <= 0.0 {
        return value;
    }
    let scale = 10f64.powi(value.log10().floor() as i32 - 2);
    (value / scale).round() * scale
}

/// A sampled sweep's size and the seed of its design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Points drawn (each runs with every controller).
    pub points: usize,
    /// Seed of the design.
    pub seed: u64,
}

/// A grid and which of its points to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The values ranged over.
    pub grid: Grid,
    /// A sample of the grid; `None`: every combination.
    pub sample: Option<Sample>,
}

impl Sweep {
    /// The points to run, in order.
    pub fn points(&self) -> Vec<Point> {
        match self.sample {
            Some(sample) => self.grid.sample(sample.points, sample.seed),
            None => self.grid.product(),
        }
    }

    /// Runs every point on up to `threads` threads; one row per point, in
    /// the order of [`Sweep::points`].
    pub fn run(&self, threads: usize) -> Vec<SweepRun> {
        let points = self.points();
        let arms: &[bool] = if self.grid.resumed {
            &[true, false]
        } else {
            &[false]
        };
        let jobs: Vec<Scenario> = points
            .iter()
            .flat_map(|point| arms.iter().map(|&resume| self.grid.scenario(point, resume)))
            .collect();
        let mut sessions = run_parallel(jobs, threads, |scenario| {
            run_session(&scenario, false)
                .map(|outcome| Report::of(&outcome))
                .map_err(|e| e.to_string())
        })
        .into_iter();
        points
            .iter()
            .map(|point| {
                let session = sessions.next().unwrap_or_else(|| Err("not run".into()));
                let without_token = match self.grid.resumed {
                    true => Some(sessions.next().unwrap_or_else(|| Err("not run".into()))),
                    false => None,
                };
                SweepRun::of(&self.grid, point, session, without_token)
            })
            .collect()
    }
}

/// One point's results: the JSON line of `cr-sim sweep --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepRun {
    /// The session's parameters (of the session presenting the token, when
    /// the sweep resumes).
    pub scenario: ScenarioView,
    /// The path's bandwidth-delay product, bytes.
    pub bdp_bytes: u64,
    /// The first connection's completion under ideal doubling slow start
    /// ([`ideal_doubling`]), seconds; `null` with random loss or an outage,
    /// where it is no bound.
    pub ideal_s: Option<f64>,
    /// The first connection (`null`: the session failed).
    pub first: Option<ConnectionReport>,
    /// The second connection, presenting the first's token (`null`: first
    /// connections only, or the session failed).
    pub resumed: Option<ConnectionReport>,
    /// The second connection of the same seed's session, presenting no
    /// token.
    pub without_token: Option<ConnectionReport>,
    /// Why sessions failed.
    pub errors: Vec<String>,
}

impl SweepRun {
    /// The run's connections: first, resumed and without a token, those it
    /// has.
    fn connections(&self) -> impl Iterator<Item = &ConnectionReport> {
        [&self.first, &self.resumed, &self.without_token]
            .into_iter()
            .flatten()
    }

    /// The row of `point`, from its session and, when the sweep resumes,
    /// the same seed's session without a token.
    fn of(
        grid: &Grid,
        point: &Point,
        session: Result<Report, String>,
        without_token: Option<Result<Report, String>>,
    ) -> SweepRun {
        let scenario = grid.scenario(point, grid.resumed);
        let path = SweepPath {
            rate: point.rate,
            rtt: point.rtt,
            size: scenario.size,
        };
        let clean = point.loss.value() == 0.0 && point.outage.is_none();
        let mut errors = Vec::new();
        let mut ok = |result: Result<Report, String>| result.map_err(|e| errors.push(e)).ok();
        let session = ok(session);
        let without_token = without_token.and_then(&mut ok);
        let second = |report: &Report| report.connections.get(1).filter(|_| grid.resumed).cloned();
        SweepRun {
            scenario: ScenarioView::of(&scenario),
            bdp_bytes: point.rate.bytes_in(point.rtt),
            ideal_s: clean.then(|| ideal_doubling(path).as_secs_f64()),
            first: session.as_ref().map(|r| r.first().clone()),
            resumed: session.as_ref().and_then(second),
            without_token: without_token.as_ref().and_then(second),
            errors,
        }
    }

    /// Whether every session ran and every connection measured completed
    /// (the resumed ones too, when the sweep resumes).
    pub fn completed(&self) -> bool {
        let done =
            |c: &Option<ConnectionReport>| c.as_ref().is_some_and(|c| c.completion_s.is_some());
        let resumed = self.scenario.resume;
        self.errors.is_empty()
            && done(&self.first)
            && (!resumed || (done(&self.resumed) && done(&self.without_token)))
    }

    /// How long the link was dark (the longest window that drops
    /// everything), zero without an outage.
    pub fn outage_duration(&self) -> Duration {
        self.scenario
            .loss_windows
            .iter()
            .filter(|w| w.loss.value() >= 1.0)
            .map(|w| w.to.saturating_sub(w.from))
            .max()
            .unwrap_or_default()
    }

    /// The first connection's completion over ideal doubling slow start's.
    pub fn first_versus_ideal(&self) -> Option<f64> {
        let completion = self.first.as_ref()?.completion_s?;
        Some(completion / self.ideal_s?)
    }

    /// The resumed connection's completion over that of the same seed's
    /// connection without a token.
    pub fn resumed_versus_without_token(&self) -> Option<f64> {
        let resumed = self.resumed.as_ref()?.completion_s?;
        let without = self.without_token.as_ref()?.completion_s?;
        (without > 0.0).then(|| resumed / without)
    }

    /// The point in a few words, e.g. `cubic 37.2 Mbit/s 412 ms 9.31 MB
    /// (2.0 x BDP) seed 3`.
    pub fn label(&self) -> String {
        let s = &self.scenario;
        let mut label = format!(
            "{} {} Mbit/s {} ms {:.2} MB ({:.1} x BDP)",
            s.cc,
            s.rate_bps as f64 / 1e6,
            (s.rtt_s * 1000.0).round(),
            s.size_bytes as f64 / 1e6,
            s.size_bytes as f64 / self.bdp_bytes.max(1) as f64,
        );
        if s.loss > 0.0 {
            label += &format!(" loss {}%", s.loss * 100.0);
        }
        for outage in s.loss_windows.iter().filter(|w| w.loss.value() >= 1.0) {
            label += &format!(
                " outage {}-{} s",
                outage.from.as_secs_f64(),
                outage.to.as_secs_f64()
            );
        }
        label + &format!(" seed {}", s.seed)
    }
}

/// A property every run of a sweep must have.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// Every download completes.
    Completes,
    /// The first connection loses at most this share of the packets it
    /// sends.
    FirstLossAtMost(f64),
    /// The resumed connection completes no later than the same seed's
    /// connection without a token.
    ResumedNoSlower,
    /// Every connection through an outage at least this long finds
    /// persistent congestion (RFC 9002, 7.6).
    PersistentCongestionFound(Duration),
    /// A resumed connection through an outage at least this long finds
    /// persistent congestion and leaves Careful Resume on it, unless its
    /// whole jump had arrived before the outage (the ACK that ends the
    /// outage acknowledges its last unvalidated packet).
    JumpEndsOnPersistentCongestion(Duration),
    /// No connection through an outage at most this long finds persistent
    /// congestion: its losses span less than RFC 9002's period of three
    /// probe timeouts, and a stack that declared it (after two probe
    /// timeouts, say) would collapse windows the RFC keeps.
    NoPersistentCongestionWithin(Duration),
}

impl Check {
    /// What breaks the check in `runs`, one line per run that does.
    pub fn violations(&self, runs: &[SweepRun]) -> Vec<String> {
        runs.iter()
            .filter_map(|run| {
                if !run.completed() {
                    return Some(format!(
                        "{}: did not complete {:?}",
                        run.label(),
                        run.errors
                    ));
                }
                match *self {
                    Check::Completes => None,
                    Check::FirstLossAtMost(most) => {
                        let first = run.first.as_ref()?;
                        (first.loss_ratio() > most).then(|| {
                            format!(
                                "{}: lost {:.2}% ({} of {})",
                                run.label(),
                                first.loss_ratio() * 100.0,
                                first.packets_lost,
                                first.packets_sent
                            )
                        })
                    }
                    Check::ResumedNoSlower => {
                        let ratio = run.resumed_versus_without_token()?;
                        (ratio > 1.0)
                            .then(|| format!("{}: resumed took {ratio:.3} x as long", run.label()))
                    }
                    Check::PersistentCongestionFound(at_least) => {
                        if run.outage_duration() < at_least {
                            return None;
                        }
                        let missed = run.connections().any(|c| c.persistent_congestion == 0);
                        missed.then(|| format!("{}: no persistent congestion found", run.label()))
                    }
                    Check::NoPersistentCongestionWithin(at_most) => {
                        if run.outage_duration() > at_most {
                            return None;
                        }
                        let declared = run.connections().any(|c| c.persistent_congestion > 0);
                        declared.then(|| {
                            format!("{}: persistent congestion declared too soon", run.label())
                        })
                    }
                    Check::JumpEndsOnPersistentCongestion(at_least) => {
                        if run.outage_duration() < at_least {
                            return None;
                        }
                        let resumed = run.resumed.as_ref()?;
                        let exit = resumed.cr.exit_trigger();
                        let ends_right = [
                            Trigger::PersistentCongestion,
                            Trigger::LastUnvalidatedPacketAcknowledged,
                        ]
                        .iter()
                        .any(|t| exit == Some(t.as_str()));
                        (resumed.persistent_congestion == 0 || !ends_right).then(|| {
                            format!(
                                "{}: persistent congestion found {} time(s), Careful Resume left on {exit:?}",
                                run.label(),
                                resumed.persistent_congestion
                            )
                        })
                    }
                }
            })
            .collect()
    }
}

/// A named sweep and the checks its runs must pass.
#[derive(Clone, Debug)]
pub struct Guard {
    /// Short name, stable (`cr-sim sweep --guard NAME`, the tests).
    pub name: &'static str,
    /// What it guards.
    pub about: &'static str,
    /// The sweep.
    pub sweep: Sweep,
    /// The checks.
    pub checks: Vec<Check>,
}

impl Guard {
    /// What breaks the guard's checks in `runs`.
    pub fn violations(&self, runs: &[SweepRun]) -> Vec<String> {
        self.checks
            .iter()
            .flat_map(|check| check.violations(runs))
            .collect()
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The guards run over sweeps:
///
/// - `first-loss`: first connections of CUBIC and Reno over 5-300 Mbit/s
///   and 100-1000 ms, objects of 0.5, 2 and 8 x BDP, a 1 x BDP drop-tail
///   queue (24 sampled points): each loses at most 2 % of what it sends.
/// - `random-loss`: 10 MB at 20 Mbit/s and 600 ms with 0.1 % random loss,
///   ten seeds, each controller: the resumed connection is no slower than
///   the same seed's connection without a token.
/// - `outage`: 10 MB at 20 Mbit/s and 600 ms, first and resumed, the link
///   dark for 2, 5 or 10 s from 1.2 s (while the resumed connection's jump
///   is in flight) or 3 s, each controller: every download completes; an
///   outage of 10 s is persistent congestion for every connection (more
///   than three probe timeouts even for a connection with one RTT sample,
///   whose rttvar is half its RTT); one of 5 s or more is for the resumed
///   connection, and ends its Careful Resume unless its whole jump had
///   arrived. An outage of 2 s is persistent congestion for none, and
///   cannot be at 600 ms: the sender falls silent within a round trip and
///   then only probes, one probe timeout and then twice that apart, so the
///   packets it loses span less than the three probe timeouts (at least
///   1.88 s) RFC 9002 requires.
/// - `leo` and `rain-fade`: 10 MiB over the LEO schedule (100 Mbit/s and
///   40 ms to begin with) and the GEO rain fade (50 Mbit/s and 600 ms), 2 ms
///   of jitter, ten seeds, each controller: the resumed connection is no
///   slower than the same seed's connection without a token. The jitter
///   moves every first connection's slow start, and with it the capacity
///   the resumed one starts from.
pub fn guards() -> Vec<Guard> {
    let satellite = Grid {
        rates: vec![Rate::mbit(20)],
        rtts: vec![ms(600)],
        sizes: vec![Volume::Bytes(10_000_000)],
        ccs: vec![
            CongestionControl::Cubic,
            CongestionControl::Reno,
            CongestionControl::Bbr2,
        ],
        resumed: true,
        ..Grid::default()
    };
    // Resumed no slower than without a token over a schedule with 2 ms of
    // jitter, ten seeds.
    let scheduled = |name, about, rate: Rate, rtt: Duration, schedule: &str| Guard {
        name,
        about,
        sweep: Sweep {
            grid: Grid {
                rates: vec![rate],
                rtts: vec![rtt],
                sizes: vec![Volume::Bytes(10 << 20)],
                seeds: (1..=10).collect(),
                jitter: ms(2),
                schedule: Some(bottlenecks::schedule(schedule)),
                ..satellite.clone()
            },
            sample: None,
        },
        checks: vec![Check::ResumedNoSlower],
    };
    vec![
        Guard {
            name: "first-loss",
            about: "first connections lose at most 2 % of what they send",
            sweep: Sweep {
                grid: Grid {
                    rates: vec![Rate::mbit(5), Rate::mbit(300)],
                    rtts: vec![ms(100), ms(1000)],
                    sizes: [0.5, 2.0, 8.0].map(Volume::Bdp).to_vec(),
                    ccs: vec![CongestionControl::Cubic, CongestionControl::Reno],
                    ..Grid::default()
                },
                sample: Some(Sample {
                    points: 24,
                    seed: 1,
                }),
            },
            checks: vec![Check::FirstLossAtMost(0.02)],
        },
        Guard {
            name: "random-loss",
            about: "with 0.1 % random loss, resuming is no slower than not",
            sweep: Sweep {
                grid: Grid {
                    losses: vec![Probability::new(0.001).unwrap_or_default()],
                    seeds: (1..=10).collect(),
                    ..satellite.clone()
                },
                sample: None,
            },
            checks: vec![Check::ResumedNoSlower],
        },
        Guard {
            name: "outage",
            about:
                "downloads complete through outages of 2 to 10 s; 10 s is persistent congestion, 2 s is not",
            sweep: Sweep {
                grid: Grid {
                    outages: [1200, 3000]
                        .into_iter()
                        .flat_map(|start| {
                            [2, 5, 10].map(|secs| Outage {
                                start: ms(start),
                                duration: Duration::from_secs(secs),
                            })
                        })
                        .collect(),
                    ..satellite.clone()
                },
                sample: None,
            },
            checks: vec![
                Check::Completes,
                Check::PersistentCongestionFound(Duration::from_secs(10)),
                Check::JumpEndsOnPersistentCongestion(Duration::from_secs(5)),
                Check::NoPersistentCongestionWithin(Duration::from_secs(2)),
            ],
        },
        scheduled(
            "leo",
            "over the LEO schedule with jitter, resuming is no slower than not",
            Rate::mbit(100),
            ms(40),
            bottlenecks::LEO,
        ),
        scheduled(
            "rain-fade",
            "through a GEO rain fade with jitter, resuming is no slower than not",
            Rate::mbit(50),
            ms(600),
            bottlenecks::RAIN_FADE,
        ),
    ]
}

/// The guard called `name`.
pub fn guard(name: &str) -> Option<Guard> {
    guards().into_iter().find(|g| g.name == name)
}

/// A controller's runs, summed up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The controller.
    pub cc: &'static str,
    /// Points run.
    pub runs: usize,
    /// Points whose sessions failed or whose downloads did not complete.
    pub failed: usize,
    /// The largest share of its packets a first connection lost.
    pub worst_first_loss: Option<f64>,
    /// Median of the first connections' completion over ideal doubling
    /// slow start's (runs without random loss or outage).
    pub median_versus_ideal: Option<f64>,
    /// The largest of those.
    pub worst_versus_ideal: Option<f64>,
    /// The largest share of its packets a resumed connection lost.
    pub worst_resumed_loss: Option<f64>,
    /// Median of the resumed connections' completion over that of the same
    /// seed's connection without a token.
    pub median_resumed_versus_without: Option<f64>,
    /// The largest of those.
    pub worst_resumed_versus_without: Option<f64>,
    /// The point of the largest first-connection loss.
    pub worst_first_loss_at: Option<String>,
}

/// The median of `values` (of the middle two, for an even count).
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 0 => Some((values[middle - 1] + values[middle]) / 2.0),
        _ => Some(values[middle]),
    }
}

fn largest(values: &[f64]) -> Option<f64> {
    values.iter().copied().max_by(f64::total_cmp)
}

/// One summary per controller, in the order they first appear in `runs`.
pub fn summarise(runs: &[SweepRun]) -> Vec<Summary> {
    let mut ccs: Vec<&'static str> = Vec::new();
    for run in runs {
        if !ccs.contains(&run.scenario.cc) {
            ccs.push(run.scenario.cc);
        }
    }
    ccs.into_iter()
        .map(|cc| {
            let mine: Vec<&SweepRun> = runs.iter().filter(|r| r.scenario.cc == cc).collect();
            let first_losses: Vec<(f64, &SweepRun)> = mine
                .iter()
                .filter_map(|r| Some((r.first.as_ref()?.loss_ratio(), *r)))
                .collect();
            let worst_first = first_losses
                .iter()
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .copied();
            let versus_ideal: Vec<f64> =
                mine.iter().filter_map(|r| r.first_versus_ideal()).collect();
            let resumed_losses: Vec<f64> = mine
                .iter()
                .filter_map(|r| Some(r.resumed.as_ref()?.loss_ratio()))
                .collect();
            let versus_without: Vec<f64> = mine
                .iter()
                .filter_map(|r| r.resumed_versus_without_token())
                .collect();
            Summary {
                cc,
                runs: mine.len(),
                failed: mine.iter().filter(|r| !r.completed()).count(),
                worst_first_loss: worst_first.map(|(loss, _)| loss),
                median_versus_ideal: median(versus_ideal.clone()),
                worst_versus_ideal: largest(&versus_ideal),
                worst_resumed_loss: largest(&resumed_losses),
                median_resumed_versus_without: median(versus_without.clone()),
                worst_resumed_versus_without: largest(&versus_without),
                worst_first_loss_at: worst_first.map(|(_, run)| run.label()),
            }
        })
        .collect()
}

/// The summaries as a table, then the point of each controller's worst
/// first-connection loss.
pub fn render(summaries: &[Summary]) -> String {
    let percent = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.2}%", v * 100.0));
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| {
            vec![
                s.cc.to_string(),
                s.runs.to_string(),
                s.failed.to_string(),
                percent(s.worst_first_loss),
                table::times(s.median_versus_ideal),
                table::times(s.worst_versus_ideal),
                percent(s.worst_resumed_loss),
                format_ratio(s.median_resumed_versus_without),
                format_ratio(s.worst_resumed_versus_without),
            ]
        })
        .collect();
    let mut text = table::render(
        &[
            "cc",
            "runs",
            "failed",
            "worst loss",
            "median vs ideal",
            "worst vs ideal",
            "resumed: worst loss",
            "vs no token: median",
            "worst",
        ],
        &rows,
    );
    for s in summaries {
        if let (Some(loss), Some(at)) = (s.worst_first_loss, &s.worst_first_loss_at) {
            text += &format!("worst first-connection loss, {:.2}%: {at}\n", loss * 100.0);
        }
    }
    text
}

/// A ratio with three decimals and an x, or "-".
fn format_ratio(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.3}x"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid {
            rates: vec![Rate::mbit(5), Rate::mbit(300)],
            rtts: vec![ms(100), ms(1000)],
            sizes: [0.5, 2.0, 8.0].map(Volume::Bdp).to_vec(),
            ccs: vec![CongestionControl::Cubic, CongestionControl::Reno],
            ..Grid::default()
        }
    }

    #[test]
    fn the_product_crosses_every_list() {
        let points = grid().product();
        assert_eq!(points.len(), 2 * 2 * 3 * 2);
        assert_eq!(points[0].cc, CongestionControl::Cubic);
        assert_eq!(points[1].cc, CongestionControl::Reno);
        assert_eq!(points[1].rate, points[0].rate);
    }

    #[test]
    fn a_sample_is_a_latin_hypercube_on_log_scales() {
        let count = 12;
        let points = grid().sample(count, 7);
        assert_eq!(points.len(), count * 2);
        assert_eq!(points, grid().sample(count, 7), "fixed by its seed");
        assert_ne!(points, grid().sample(count, 8));
        let cubic: Vec<&Point> = points
            .iter()
            .filter(|p| p.cc == CongestionControl::Cubic)
            .collect();
        // One point in each of the twelve strata of equal ratio, on both
        // axes: sorted, the i-th lies in the i-th stratum (give or take the
        // 0.5 % that rounding to three digits can move it).
        let in_strata = |mut values: Vec<f64>, lo: f64, hi: f64| {
            values.sort_by(f64::total_cmp);
            values.iter().enumerate().all(|(i, &v)| {
                let border = |k: usize| log_between(lo, hi, k as f64 / count as f64);
                border(i) * 0.995 <= v && v <= border(i + 1) * 1.005
            })
        };
        let rates = cubic.iter().map(|p| p.rate.bps() as f64).collect();
        assert!(in_strata(rates, 5e6, 300e6), "{cubic:?}");
        let rtts = cubic.iter().map(|p| p.rtt.as_secs_f64()).collect();
        assert!(in_strata(rtts, 0.1, 1.0), "{cubic:?}");
        // Each size four times.
        for size in [0.5, 2.0, 8.0] {
            let n = cubic.iter().filter(|p| p.size == Volume::Bdp(size)).count();
            assert_eq!(n, 4, "{size}");
        }
        // Every controller on the same paths.
        for pair in points.chunks(2) {
            assert_eq!((pair[0].rate, pair[0].rtt), (pair[1].rate, pair[1].rtt));
        }
    }

    #[test]
    fn sizes_scale_with_the_path_and_outages_become_loss_windows() {
        let grid = Grid {
            outages: vec!["3s,5s".parse().unwrap()],
            ..grid()
        };
        let point = grid.product()[2];
        let scenario = grid.scenario(&point, false);
        // 5 Mbit/s x 100 ms = 62.5 kB; 2 x BDP.
        assert_eq!(scenario.size, 125_000);
        assert_eq!(scenario.later_sizes, vec![1024], "first connection only");
        assert_eq!(scenario.loss_windows[0].to, Duration::from_secs(8));
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(three_digits(37_246_000.0), 37_200_000.0);
        assert!((three_digits(0.41249) - 0.412).abs() < 1e-12);
    }

    #[test]
    fn the_guards_are_named_uniquely() {
        let names: Vec<&str> = guards().iter().map(|g| g.name).collect();
        for name in &names {
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1);
            assert!(guard(name).is_some());
        }
    }
}
