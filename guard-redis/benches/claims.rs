//! Claims per second and claim latency through one redis-server on
//! loopback, from one process: `cargo bench -p cr-guard-redis` (or
//! `make bench`).
//!
//! Closed loop: one thread keeps `window` claims in flight (the worker
//! pipelines whatever is queued) and measures each from `start_claim` to
//! the moment its answer is seen. Open loop: claims started at a fixed rate
//! (in bursts of a millisecond's worth) by one thread, their answers timed
//! by another. Every claim is of a fresh
//! set, so each is a real `SET NX` that Redis records. `CR_BENCH_SCALE`
//! (default 1) multiplies the number of claims.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use cr_guard_redis::testing::RedisServer;
use cr_guard_redis::{RedisGuard, RedisGuardConfig};
use ex_token::{
    AddressPrefixes, Claim, ClaimOutcome, RemoteEndpoint, SavedSet, SetId, SiteId, TokenGuard,
};

fn main() {
    let scale: f64 = std::env::var("CR_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let count = |n: f64| ((n * scale) as usize).max(1);

    let redis = RedisServer::start();
    let guard =
        RedisGuard::connect(&redis.url(), RedisGuardConfig::default()).expect("connect the guard");
    let expiry = SystemTime::now() + Duration::from_secs(3600);
    let mut next_id = 0u64;
    // Each claim is of a set of a client network of its own (a /24 of
    // 10.0.0.0/8, then of 11.0.0.0/8, ...), as a crowd of clients makes.
    let mut fresh = || {
        next_id += 1;
        let ip = std::net::IpAddr::from(((10 << 24) + (next_id << 8) as u32).to_be_bytes());
        SavedSet {
            id: SetId(next_id),
            endpoint: RemoteEndpoint::new(SiteId(0), ip, AddressPrefixes::SAME_NETWORK),
            measured_at: expiry - Duration::from_secs(3600),
            expiry,
        }
    };
    println!(
        "cr-guard-redis: claims through one redis-server on loopback (claim timeout {:?})",
        guard.claim_timeout()
    );

    // Warm up the connection and Redis's allocator.
    closed_loop(&guard, &mut fresh, 64, count(20_000.0));

    for (window, claims) in [
        (1, 20_000.0),
        (16, 100_000.0),
        (64, 200_000.0),
        (256, 200_000.0),
    ] {
        let report = closed_loop(&guard, &mut fresh, window, count(claims));
        println!("closed loop, {window:>3} in flight: {report}");
    }
    for (rate, seconds) in [(20_000.0, 2.0), (50_000.0, 2.0)] {
        let report = open_loop(&guard, &mut fresh, rate, count(rate * seconds));
        println!("open loop, {rate:>6} claims/s:   {report}");
    }
}

/// What a run measured.
struct Report {
    claims: usize,
    elapsed: Duration,
    granted: usize,
    latencies: Vec<Duration>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let at = |q: f64| {
            let i = ((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1));
            sorted.get(i).copied().unwrap_or_default()
        };
        write!(
            f,
            "{:>7} claims in {:>6.2?}: {:>7.0} claims/s, latency p50 {:>8.1?} p99 {:>8.1?} \
             max {:>8.1?}, {} not granted",
            self.claims,
            self.elapsed,
            self.claims as f64 / self.elapsed.as_secs_f64(),
            at(0.50),
            at(0.99),
            at(1.0),
            self.claims - self.granted,
        )
    }
}

fn closed_loop(
    guard: &RedisGuard,
    fresh: &mut impl FnMut() -> SavedSet,
    window: usize,
    claims: usize,
) -> Report {
    let mut in_flight: VecDeque<(Claim, Instant)> = VecDeque::with_capacity(window);
    let mut latencies = Vec::with_capacity(claims);
    let mut granted = 0;
    let mut started = 0;
    let begin = Instant::now();
    while latencies.len() < claims {
        while started < claims && in_flight.len() < window {
            let at = Instant::now();
            in_flight.push_back((guard.start_claim(&fresh(), SystemTime::now()), at));
            started += 1;
        }
        // The worker answers in the order claims were queued.
        if let Some((claim, at)) = in_flight.pop_front() {
            let outcome = claim.wait();
            latencies.push(at.elapsed());
            granted += usize::from(outcome == ClaimOutcome::Granted);
        }
    }
    Report {
        claims,
        elapsed: begin.elapsed(),
        granted,
        latencies,
    }
}

const TICK: Duration = Duration::from_millis(1);

fn open_loop(
    guard: &RedisGuard,
    fresh: &mut impl FnMut() -> SavedSet,
    rate: f64,
    claims: usize,
) -> Report {
    let interval = Duration::from_secs_f64(1.0 / rate);
    let (to_timer, from_starter) = mpsc::channel::<(Claim, Instant)>();
    let timer = thread::spawn(move || {
        let mut latencies = Vec::with_capacity(claims);
        let mut granted = 0;
        for (claim, at) in from_starter {
            let outcome = claim.wait();
            latencies.push(at.elapsed());
            granted += usize::from(outcome == ClaimOutcome::Granted);
        }
        (latencies, granted)
    });
    let begin = Instant::now();
    for i in 0..claims {
        // Start each claim on its schedule, sleeping in ticks of a
        // millisecond (a spinning starter would take a core from Redis):
        // the claims due within a tick start together; late ones go at once.
        let due = begin + interval.mul_f64(i as f64);
        let now = Instant::now();
        if due > now + TICK {
            thread::sleep(due - now - TICK);
        }
        let at = Instant::now();
        let claim = guard.start_claim(&fresh(), SystemTime::now());
        if to_timer.send((claim, at)).is_err() {
            break;
        }
    }
    drop(to_timer);
    let (latencies, granted) = timer.join().expect("timer thread");
    Report {
        claims,
        elapsed: begin.elapsed(),
        granted,
        latencies,
    }
}
