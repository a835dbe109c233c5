//! The jump waits for the one-user-per-set guard: a guard across the
//! network answers a claim after the connection has started, and only a
//! grant that arrives before the sender would jump lets it jump (RFC 9959:
//! one connection per saved set; fail closed).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cr_endpoint::ex_token::{
    Claim, ClaimAnswer, ClaimOutcome, MemoryGuard, NoResume, SetId, TokenGuard,
};
use quiche::careful_resume::Phase;
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{opaque_client, Harness};

const RTT: Duration = Duration::from_millis(600);
const SIZE: usize = 2 * 1024 * 1024;

/// A guard whose answers (a [`MemoryGuard`]'s) are held back until the
/// test releases them, as a guard across the network would be late.
struct LateGuard {
    registry: MemoryGuard,
    held: Mutex<Vec<(ClaimAnswer, ClaimOutcome)>>,
}

impl LateGuard {
    fn new() -> Arc<LateGuard> {
        Arc::new(LateGuard {
            registry: MemoryGuard::new(64),
            held: Mutex::default(),
        })
    }

    fn held(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    fn release(&self) {
        for (answer, outcome) in self.held.lock().unwrap().drain(..) {
            answer.answer(outcome);
        }
    }
}

impl TokenGuard for LateGuard {
    fn start_claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> Claim {
        let outcome = self.registry.claim(id, expiry, now);
        let (claim, answer) = Claim::pending();
        self.held.lock().unwrap().push((answer, outcome));
        claim
    }
}

/// A first download with a guard that answers at once (nothing to wait
/// for without a token), and its newest token.
fn token(harness: &mut Harness<Arc<LateGuard>>) -> Vec<u8> {
    let mut first = harness.download(opaque_client(None, 1), SIZE, |_| false);
    std::iter::from_fn(|| first.client.new_token_next())
        .last()
        .expect("a token")
}

fn triggers(trace: &qlog_cr::Trace) -> Vec<&'static str> {
    trace
        .phase_changes
        .iter()
        .filter_map(|c| c.update.trigger.map(|t| t.as_str()))
        .collect()
}

#[test]
fn a_grant_before_the_jump_lets_the_connection_resume() {
    let guard = LateGuard::new();
    let mut harness = Harness::with_guard(Cc::CUBIC, RTT, guard.clone());
    let token = token(&mut harness);

    // The answer arrives as the server sends its first flight, a round
    // trip before it could jump.
    let mut released = false;
    let second = harness.download(opaque_client(Some(&token), 2), SIZE, |_| {
        if !released {
            assert_eq!(guard.held(), 1, "the claim started at accept");
            guard.release();
            released = true;
        }
        false
    });

    assert!(second.server.session.resume.is_ok());
    assert!(!second.server.session.claim_pending());
    let t = triggers(&second.trace);
    assert_eq!(t.first(), Some(&"congestion_window_limited"), "{t:?}");
    assert!(t.contains(&"last_unvalidated_packet_acknowledged"), "{t:?}");
}

#[test]
fn no_answer_by_the_jump_means_no_careful_resume() {
    let guard = LateGuard::new();
    let mut harness = Harness::with_guard(Cc::CUBIC, RTT, guard.clone());
    let token = token(&mut harness);

    let second = harness.download(opaque_client(Some(&token), 2), SIZE, |_| false);

    assert_eq!(
        second.server.session.resume,
        Err(NoResume::GuardUnavailable)
    );
    assert_eq!(triggers(&second.trace), ["saved_set_not_granted"]);
    let resume = second.server.conn.careful_resume().expect("set up");
    assert_eq!((resume.phase(), resume.pipesize()), (Phase::Normal, 0));
    // The grant arriving now changes nothing.
    guard.release();
    assert_eq!(triggers(&second.trace).len(), 1);
}

#[test]
fn a_taken_set_answered_late_ends_careful_resume_before_the_jump() {
    let guard = LateGuard::new();
    let mut harness = Harness::with_guard(Cc::CUBIC, RTT, guard.clone());
    let token = token(&mut harness);
    // Another server of the fleet claimed the set first.
    let mut replay = harness.download(opaque_client(Some(&token), 2), 4_000, |_| false);
    guard.release();
    harness.poll_claim(&mut replay.server);
    assert!(replay.server.session.resume.is_ok());

    let mut released = false;
    let third = harness.download(opaque_client(Some(&token), 3), SIZE, |_| {
        if !released {
            guard.release();
            released = true;
        }
        false
    });

    assert_eq!(third.server.session.resume, Err(NoResume::AlreadyInUse));
    assert_eq!(triggers(&third.trace), ["saved_set_not_granted"]);
}
