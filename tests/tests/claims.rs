//! The jump waits for the saved-set guard: a set is claimed once the
//! handshake is complete, a guard across the network answers a little
//! later, and only a grant lets the sender jump; until the answer the
//! sender keeps its initial window (RFC 9959: one connection per saved set;
//! fail closed).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cr_endpoint::ex_token::{
    Claim, ClaimAnswer, ClaimOutcome, MemoryGuard, NoResume, SavedSet, TokenGuard,
};
use quiche::careful_resume::Phase;
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{newest_token, opaque_client, Harness};

const RTT: Duration = Duration::from_millis(600);
const SIZE: usize = 2 * 1024 * 1024;
/// quiche's initial window: ten datagrams of 1200 bytes.
const INITIAL_WINDOW: usize = 12_000;

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

    /// Lets the held answers reach their claims.
    fn answer_now(&self) {
        for (answer, outcome) in self.held.lock().unwrap().drain(..) {
            answer.answer(outcome);
        }
    }
}

impl TokenGuard for LateGuard {
    fn start_claim(&self, set: &SavedSet, now: SystemTime) -> Claim {
        let outcome = self.registry.claim(set, now);
        let (claim, answer) = Claim::pending();
        self.held.lock().unwrap().push((answer, outcome));
        claim
    }

    fn record(&self, set: &SavedSet, now: SystemTime) {
        self.registry.record(set, now);
    }

    fn release(&self, set: &SavedSet, now: SystemTime) {
        self.registry.release(set, now);
    }

    fn revoke(&self, set: &SavedSet, now: SystemTime) {
        self.registry.revoke(set, now);
    }
}

/// A first download with a guard that answers at once (nothing to wait
/// for without a token), and its newest token.
fn token(harness: &mut Harness<Arc<LateGuard>>) -> Vec<u8> {
    let mut first = harness.download(opaque_client(None, 1), SIZE, |_| false);
    newest_token(&mut first.client)
}

fn triggers(trace: &qlog_cr::Trace) -> Vec<&'static str> {
    trace
        .phase_changes
        .iter()
        .filter_map(|c| c.update.trigger.map(|t| t.as_str()))
        .collect()
}

#[test]
fn the_claim_starts_with_the_handshake_and_a_grant_lets_the_connection_resume() {
    let guard = LateGuard::new();
    let mut harness = Harness::with_guard(Cc::CUBIC, RTT, guard.clone());
    let token = token(&mut harness);

    // Nothing is claimed while the handshake is under way; the answer
    // arrives as the server sends its first flight after it.
    let mut released = false;
    let second = harness.download(opaque_client(Some(&token), 2), SIZE, |conn| {
        if !conn.is_established() {
            assert_eq!(guard.held(), 0, "claimed before the handshake completed");
        } else if !released {
            assert_eq!(guard.held(), 1, "the claim started with the handshake");
            guard.answer_now();
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
fn without_an_answer_the_jump_is_held_and_the_set_never_handed_on() {
    let guard = LateGuard::new();
    let mut harness = Harness::with_guard(Cc::CUBIC, RTT, guard.clone());
    let token = token(&mut harness);
    let presented = harness.metrics().bdp_tokens_minted;

    // The server's window after each packet it sent in Reconnaissance.
    let mut reconnaissance = Vec::new();
    let mut second = harness.download(opaque_client(Some(&token), 2), SIZE, |conn| {
        if conn.careful_resume().map(|r| r.phase()) == Some(Phase::Reconnaissance) {
            reconnaissance.push(conn.path_stats().next().expect("a path").cwnd);
        }
        false
    });

    // Held in Reconnaissance, whose window grows by slow start until the
    // jump has nothing to offer: no jump; the set it never had is not
    // handed on, and what it measured waits for the answer (a set of its
    // own would supersede the presented one).
    assert_eq!(reconnaissance.first(), Some(&INITIAL_WINDOW));
    let largest = reconnaissance.iter().max().copied().unwrap_or_default();
    assert!(largest > 4 * INITIAL_WINDOW, "{largest}");
    assert!(second.server.session.claim_pending());
    assert_eq!(triggers(&second.trace), ["congestion_window_limited"]);
    let resume = second.server.conn.careful_resume().expect("set up");
    assert_eq!((resume.phase(), resume.pipesize()), (Phase::Normal, 0));
    assert!(!resume.jumped());
    assert_eq!(second.server.stats().saved_for_next, None);
    assert_eq!(harness.metrics().bdp_tokens_minted, presented);
    // The grant arriving now changes nothing.
    guard.answer_now();
    harness.poll_claim(&mut second.server);
    assert_eq!(triggers(&second.trace).len(), 1);
}

#[test]
fn a_taken_set_answered_late_ends_careful_resume_before_the_jump() {
    let guard = LateGuard::new();
    let mut harness = Harness::with_guard(Cc::CUBIC, RTT, guard.clone());
    let token = token(&mut harness);
    // Another server of the fleet claimed the set first.
    let mut replay = harness.download(opaque_client(Some(&token), 2), 4_000, |_| false);
    assert_eq!(guard.held(), 1);
    guard.answer_now();
    harness.poll_claim(&mut replay.server);
    assert!(replay.server.session.resume.is_ok());

    let mut released = false;
    let third = harness.download(opaque_client(Some(&token), 3), SIZE, |conn| {
        if conn.is_established() && !released {
            guard.answer_now();
            released = true;
        }
        false
    });

    assert_eq!(third.server.session.resume, Err(NoResume::AlreadyInUse));
    assert_eq!(triggers(&third.trace), ["saved_set_not_granted"]);
}

/// Set up once the handshake is complete (tokio-quiche hands a connection
/// over only then), Careful Resume takes in the handshake's RTT at once.
/// An RTT of at most half the saved one ends it there (`rtt_not_validated`)
/// with no jump to hold: the set is left unclaimed, and the connection goes
/// on and ends like any other. Here the handshake takes no time at all on
/// the virtual clock, as it takes next to none over loopback in a release
/// build.
#[test]
fn careful_resume_set_up_after_a_handshake_faster_than_half_the_saved_rtt_claims_nothing() {
    use cr_endpoint::ex_token::{KeyRing, SavedPath, SimRng, TokenKey, TokenServer};
    use cr_endpoint::{ResumeConfig, ResumeServer};
    use quiche::careful_resume::Trigger;
    use quiche::test_utils::Pipe;

    quiche::clock::set(std::time::Instant::now() + Duration::from_secs(86_400));
    let wall = quiche_cr_tests::wall_start();
    let mut rng = SimRng::new(3);
    let key = TokenKey::generate(1, &mut rng).expect("key");
    let mut tokens = TokenServer::new(KeyRing::new(key), rng, Default::default());
    let client = Pipe::client_addr();
    let set = tokens.new_saved_set(client, wall).expect("set");
    let saved = SavedPath {
        capacity: 500_000,
        rtt: Duration::from_millis(100),
        extras: &[],
    };
    let token = tokens.mint_bdp_token(client, &saved, &set).expect("token");

    let guard = LateGuard::new();
    let mut server = ResumeServer::new(tokens, Arc::clone(&guard), ResumeConfig::default());
    let mut client_config = quiche_cr_tests::config(false, Cc::CUBIC);
    let mut server_config = quiche_cr_tests::config(true, Cc::CUBIC);
    let mut pipe = Pipe::with_client_and_server_config(&mut client_config, &mut server_config)
        .expect("a pipe");
    pipe.client.set_token(&token).expect("token");
    pipe.handshake().expect("handshake");

    let mut session = server
        .resume_connection(&mut pipe.server, client, &token, wall)
        .expect("Careful Resume is set up");
    assert_eq!(
        session.resume.as_ref().map(|set| set.saved_cwnd),
        Ok(500_000)
    );
    let resume = pipe.server.careful_resume().expect("set up");
    assert_eq!(
        resume.history(),
        [(Phase::Normal, Trigger::RttNotValidated)]
    );
    assert!(!session.claim_pending());
    assert_eq!(guard.held(), 0, "nothing claimed");

    server.on_closed(&mut pipe.server, &mut session, wall);
    quiche::clock::unset();
}
