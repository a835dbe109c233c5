//! A session: connection 1 without a token, then after each gap one more
//! connection presenting the newest token the client holds, over the
//! scenario's link.

use std::time::Duration;

use crate::clock::VirtualClock;
use crate::endpoint::EndpointSettings;
use crate::error::SimError;
use crate::link::Link;
use crate::link::LinkSettings;
use crate::link::SimTime;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::units::Rate;
use cr_serve::bottleneck::Policer;
use cr_serve::bottleneck::Schedule;
use qlog_cr::Phase;

use crate::world::ConnectionRecord;
use crate::world::Flow;
use crate::world::World;

/// Virtual time one download may take before the run is declared failed.
const CONNECTION_TIME_LIMIT: Duration = Duration::from_secs(900);

/// Random streams of the two link directions (see [`Rng::new`]).
const STREAM_TO_SERVER: u64 = 1;
const STREAM_TO_CLIENT: u64 = 2;

/// The competing flow's throughput around the second connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompetingThroughput {
    /// Bits per second over the stretch before the second connection, as
    /// long as the second connection took (or since the competitor started).
    pub before_bps: f64,
    /// Bits per second while the second connection ran.
    pub during_bps: f64,
    /// Bits per second through the second connection's jump: from entering
    /// Unvalidated until Careful Resume ends (Normal), when it jumped.
    pub through_jump_bps: Option<f64>,
}

/// Everything a session produced.
#[derive(Debug)]
pub struct SessionOutcome {
    /// The scenario run.
    pub scenario: Scenario,
    /// Every connection, in order (at least two).
    pub connections: Vec<ConnectionRecord>,
    /// The competing flow's throughput, when there was one.
    pub competing: Option<CompetingThroughput>,
}

/// The settings of one link direction on a path of `rate` and `rtt`,
/// policed by `policer`, its rate and delay following `schedule`.
fn link_settings(
    scenario: &Scenario,
    rate: Rate,
    rtt: Duration,
    policer: Option<Policer>,
    schedule: Option<&Schedule>,
) -> LinkSettings {
    LinkSettings {
        delay: rtt / 2,
        jitter: scenario.jitter,
        queue_bytes: scenario.queue_bytes(rate, rtt),
        loss: scenario.loss.value(),
        loss_windows: scenario.loss_windows.clone(),
        discipline: scenario.discipline,
        policer,
        schedule: schedule.cloned(),
    }
}

/// The world of `scenario`, its links set up for the first connection.
pub(crate) fn build_world(scenario: &Scenario) -> World {
    let settings = link_settings(
        scenario,
        scenario.rate,
        scenario.rtt,
        scenario.policer,
        scenario.schedule.as_ref(),
    );
    let mut to_server = Link::new(
        scenario.rate,
        settings.clone(),
        Rng::new(scenario.seed, STREAM_TO_SERVER),
    );
    let mut to_client = Link::new(
        scenario.rate,
        settings,
        Rng::new(scenario.seed, STREAM_TO_CLIENT),
    );
    for &(at, rate) in &scenario.rate_steps {
        to_server.set_rate_from(at, rate);
        to_client.set_rate_from(at, rate);
    }
    World::new(VirtualClock::new(), to_server, to_client)
}

/// Changes the path for the second connection, starting now.
fn switch_path(world: &mut World, scenario: &Scenario) {
    let now = world.now();
    let policer = scenario.policer2.or(scenario.policer);
    let schedule = scenario.schedule2.as_ref().or(scenario.schedule.as_ref());
    let settings = link_settings(
        scenario,
        scenario.second_rate(),
        scenario.second_rtt(),
        policer,
        schedule,
    );
    for link in world.links() {
        if let Some(rate) = scenario.rate2 {
            link.set_rate_from(now, rate);
        }
        link.reconfigure(settings.clone());
        link.start_epoch(now);
    }
}

/// When the second connection's jump began and when Careful Resume ended
/// (the first change to Normal after it), from its server's qlog.
fn jump_span(record: &ConnectionRecord) -> Option<(SimTime, SimTime)> {
    let trace = record.server_qlog.as_ref()?.trace("server")?;
    let created = record.server_created_at?;
    let at = |ms: f64| created + Duration::from_secs_f64(ms / 1000.0);
    let changes = &trace.phase_changes;
    let jump = changes
        .iter()
        .position(|c| c.update.new == Phase::Unvalidated)?;
    let end = changes[jump..]
        .iter()
        .find(|c| c.update.new == Phase::Normal)?;
    Some((at(changes[jump].time_ms), at(end.time_ms)))
}

/// Runs until flow `flow`'s current download is complete.
fn download(world: &mut World, flow: usize) -> Result<(), SimError> {
    let deadline = world.now() + CONNECTION_TIME_LIMIT;
    world.run_until(deadline, |w| w.flow(flow).is_some_and(Flow::is_done))
}

/// Bits per second a flow received between `from` and `to`.
fn throughput(record_bytes: impl Fn(SimTime) -> u64, from: SimTime, to: SimTime) -> f64 {
    let seconds = to.saturating_sub(from).as_secs_f64();
    if seconds <= 0.0 {
        return 0.0;
    }
    record_bytes(to).saturating_sub(record_bytes(from)) as f64 * 8.0 / seconds
}

/// Runs the session of `scenario`. With `full_traces` both endpoints of the
/// main flow keep complete qlog traces (for writing them out); without, the
/// servers keep only their Careful Resume events, all a report reads, which
/// saves about a fifth of a long session's CPU time.
///
/// The whole session runs on this thread, on its own virtual clock.
pub fn run_session(scenario: &Scenario, full_traces: bool) -> Result<SessionOutcome, SimError> {
    scenario.check()?;
    // quiche's own random draws (the skipped packet number) change packet
    // sizes: seed them too, so a seed fixes every byte and every time.
    quiche::seeded_random::seed(scenario.seed);
    let mut world = build_world(scenario);
    let outcome = run_in(&mut world, scenario, full_traces);
    quiche::clock::unset();
    quiche::seeded_random::unseed();
    outcome
}

fn run_in(
    world: &mut World,
    scenario: &Scenario,
    full_traces: bool,
) -> Result<SessionOutcome, SimError> {
    let endpoints = EndpointSettings {
        cc: scenario.cc,
        slow_start: scenario.slow_start,
        app: scenario.app,
        resume: scenario.resume,
        seed: scenario.seed,
        close_when_done: scenario.close_when_done,
        small_packets: scenario.small_packets,
        requested_capacity: None,
        jump_budget: Some(Default::default()),
        early_data: scenario.early_data,
        rtt_once_per_rtt: scenario.rtt_once_per_rtt,
        pace: scenario.pace,
        slow_start_past_saved: scenario.slow_start_past_saved,
    };
    let main = world.add_flow(endpoints, full_traces)?;
    let competitor = match scenario.competing {
        Some(_) => Some(world.add_flow(endpoints, false)?),
        None => None,
    };

    let sizes = scenario.sizes();
    world.start_connection(main, sizes[0], false)?;
    download(world, main)?;
    let first_done = world.now();
    if let (Some(flow), Some(c)) = (competitor, scenario.competing) {
        world.start_connection(flow, c.size, true)?;
    }

    let vanished = || SimError::Stalled("a connection vanished".into());
    let mut connections = Vec::with_capacity(sizes.len());
    let (mut second_start, mut second_done) = (first_done, first_done);
    for (index, &size) in sizes.iter().enumerate().skip(1) {
        let previous_done = world.now();
        world.advance_to(previous_done + scenario.gap)?;
        if index == 1 {
            switch_path(world, scenario);
            second_start = world.now();
        }
        let previous = world
            .start_connection(main, size, false)?
            .ok_or_else(vanished)?;
        connections.push(previous);
        download(world, main)?;
        if index == 1 {
            second_done = world.now();
        }
    }
    // The last connection, too, keeps the tokens that arrive after its last
    // byte (unless the client closes at once), so its report says what a
    // next connection would start from.
    let last_done = world.now();
    world.advance_to(last_done + scenario.gap)?;
    connections.push(world.retire_connection(main).ok_or_else(vanished)?);
    let second = &connections[1];

    let competing = competitor
        .and_then(|flow| world.flow(flow))
        .and_then(Flow::pair)
        .map(|pair| {
            let progress = pair.client_app().progress();
            let span = second_done - second_start;
            let before_from = second_start.saturating_sub(span).max(first_done);
            let bytes = |t| progress.received_by(t);
            CompetingThroughput {
                before_bps: throughput(bytes, before_from, second_start),
                during_bps: throughput(bytes, second_start, second_done),
                through_jump_bps: jump_span(second).map(|(from, to)| throughput(bytes, from, to)),
            }
        });
    Ok(SessionOutcome {
        scenario: scenario.clone(),
        connections,
        competing,
    })
}
