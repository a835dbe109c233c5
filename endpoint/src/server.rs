//! The server side: tokens in, Careful Resume on, tokens out.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use careful_resume::{InitialData, Phase, SavedState, Trigger};
use quiche::BufFactory;

use ex_token::{
    Claim, ClaimOutcome, KeyRing, MemoryGuard, NoResume, OnceId, Rng, SavedParameters, SavedPath,
    SavedSet, SystemRng, TokenGuard, TokenKey, TokenRejected, TokenServer,
};

use crate::budget::{JumpBudget, JumpShares, Share};
use crate::early_data::{EarlyData, OnceCheck, ADDRESS_TOKEN_RECORD, FIRST_FLIGHT_RECORD};
use crate::metrics::ServerMetrics;
use crate::Error;

/// How a [`ResumeServer`] mints tokens and resumes. How long a saved set
/// may be used, and which site and client networks sets belong to, are the
/// token server's settings ([`ex_token::ServerConfig`]), since validating a
/// token needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResumeConfig {
    /// Lifetime of a plain address validation token, sent once the handshake
    /// completes so even short connections leave the client a token.
    pub address_token_lifetime: Duration,
    /// The largest window Careful Resume may jump to, in bytes.
    pub max_jump: Option<usize>,
    /// Which reading of "the initial data was acknowledged" gates the jump.
    pub initial_data: InitialData,
    /// How much unvalidated data the jumps of connections resuming at the
    /// same time may have in flight together (see [`JumpBudget`]); `None`
    /// lets every jump go in full, however many there are.
    pub jump_budget: Option<JumpBudget>,
    /// Whether [`ResumeServer::on_initial`] answers an Initial without a
    /// usable token with a Retry (stateless address validation, before the
    /// server keeps any state for the client). On by default: a server
    /// asks `on_initial` because it does Retry. Initials carrying a current
    /// NEW_TOKEN token of ours never get one.
    pub retry: bool,
    /// How long a Retry token is valid (10 s by default). The client
    /// answers a Retry at once, so the token needs to outlive one round
    /// trip and a few retransmissions of the client's Initial (its probe
    /// timeout starts near 1 s and doubles: 1, 3 and 7 s after the first), on paths up to
    /// geostationary satellite links (600 ms); longer would only widen the
    /// window in which a captured token can be replayed from its address.
    pub retry_token_lifetime: Duration,
    /// Whether clients resuming a TLS session may send early data (0-RTT):
    /// their request arrives a round trip sooner, and the server answers it
    /// at once when the guard has recorded the first flight as new (see
    /// [`EarlyData`]). On by default.
    pub early_data: bool,
    /// Whether slow start may go on past the saved capacity after a
    /// validated jump, once the round trip after it came back whole and
    /// without a queue ([`careful_resume::Config::with_slow_start_past_saved`]:
    /// it pays where the path grew since the set was saved and costs loss
    /// behind short or managed queues). Off by default.
    pub slow_start_past_saved: bool,
}

impl Default for ResumeConfig {
    fn default() -> Self {
        ResumeConfig {
            address_token_lifetime: Duration::from_secs(24 * 3600),
            max_jump: None,
            initial_data: InitialData::default(),
            jump_budget: Some(JumpBudget::default()),
            retry: true,
            retry_token_lifetime: Duration::from_secs(10),
            early_data: true,
            slow_start_past_saved: false,
        }
    }
}

/// A connection a [`ResumeServer`] accepted, and its Careful Resume state.
pub struct Accepted {
    /// The connection, with Careful Resume started when the token allows it.
    pub conn: quiche::Connection,
    /// What its token said, and what Careful Resume does with it.
    pub session: ResumeSession,
}

impl Accepted {
    /// This connection's Careful Resume figures so far.
    pub fn stats(&self) -> crate::ResumeStats {
        self.session.stats(&self.conn)
    }
}

/// Careful Resume's state for one server connection, beside the
/// `quiche::Connection` (which [`ResumeServer::accept`] creates, or a
/// framework such as tokio-quiche owns): what the client's token said, the
/// claim of its saved set, and the tokens sent so far.
pub struct ResumeSession {
    /// The client's address, which tokens are bound to.
    pub peer: SocketAddr,
    /// Whether the token validated the client's address (no Retry needed,
    /// no anti-amplification limit). A token validates once: presented
    /// again within [`ADDRESS_TOKEN_RECORD`], it does not (RFC 9000,
    /// section 8.1.4). With a guard across the network this becomes true
    /// when the guard's answer arrives.
    pub address_validated: bool,
    /// The saved set the connection resumes from, or why it does not.
    /// While the guard's answer is still to come ([`ResumeSession::claim_pending`])
    /// this is `Ok`, and the jump waits.
    pub resume: Result<SavedParameters, NoResume>,
    /// Set under the strict policy when the token was invalid: the
    /// connection is closed with its error code (as soon as the server has
    /// sent its first flight: before that quiche would send nothing).
    pub rejected: Option<TokenRejected>,
    address_token_sent: bool,
    /// What the connection had sent (bytes) when its first address token
    /// was queued: a second one follows once the client acknowledged more
    /// than that, so it arrives after the TLS session ticket.
    address_token_again_after: Option<u64>,
    /// The saved set of this connection's own measurements, drawn (and
    /// recorded in the guard) at the first BDP token that carries one.
    saved_set: Option<SavedSet>,
    /// Where the claim of the presented saved set stands.
    claim: ClaimState,
    /// Whether the end of the connection was seen (the claim released,
    /// when it had to be).
    closed: bool,
    /// What became of the client's early data.
    early_data: EarlyData,
    /// The record of the first flight, when TLS accepted its early data.
    first_flight: OnceCheck,
    /// The record of the token, when it would validate the address.
    address_check: OnceCheck,
    pub(crate) token_presented: bool,
    /// The valid saved set the token carried.
    pub(crate) presented: Option<SavedParameters>,
    /// Capacity of the last BDP token sent.
    pub(crate) saved_for_next: Option<u64>,
    pub(crate) bdp_tokens_sent: u32,
    /// Phase changes already counted in the server's metrics.
    phases_counted: usize,
    /// Whether an unused jump was counted and logged.
    jump_unused_reported: bool,
    /// This connection's place in the server's jump budget, held from the
    /// grant until the jump is validated or retreats.
    share: Option<Share>,
    /// Whether the jump was lowered to its share (counted once).
    jump_limited: bool,
}

impl ResumeSession {
    /// A session for what a token said, before anything was sent.
    fn new(
        peer: SocketAddr,
        token_presented: bool,
        resume: Result<SavedParameters, NoResume>,
    ) -> Self {
        ResumeSession {
            peer,
            address_validated: false,
            presented: resume.ok(),
            resume,
            rejected: None,
            address_token_sent: false,
            address_token_again_after: None,
            saved_set: None,
            claim: ClaimState::NotStarted,
            closed: false,
            early_data: EarlyData::Unknown,
            first_flight: OnceCheck::NotAsked,
            address_check: OnceCheck::NotAsked,
            token_presented,
            saved_for_next: None,
            bdp_tokens_sent: 0,
            phases_counted: 0,
            jump_unused_reported: false,
            share: None,
            jump_limited: false,
        }
    }

    /// Whether the claim of the presented saved set waits for the guard's
    /// answer (the jump waits for it). A server whose guard answers across
    /// the network polls the claim ([`ResumeServer::poll_claim`]) every
    /// millisecond or so while this holds, so that a held jump goes ahead
    /// promptly.
    ///
    /// The same holds while the guard has yet to say whether a 0-RTT first
    /// flight is new, or whether a token validates the address: the early
    /// response, or the whole initial window, waits for it.
    pub fn claim_pending(&self) -> bool {
        matches!(self.claim, ClaimState::Pending(_))
            || self.first_flight.is_pending()
            || self.address_check.is_pending()
    }

    /// What became of the client's early data (0-RTT), as far as known.
    pub fn early_data(&self) -> EarlyData {
        self.early_data
    }

    /// Whether the application may act on the early data now, before the
    /// handshake completes: TLS accepted it and the guard recorded its
    /// first flight as new. Serve idempotent requests only (a GET, not a
    /// POST: RFC 8470); anything else waits for `is_established()`. Until
    /// this holds, and when it never does (a replay, a guard that cannot
    /// tell), the request waits for the handshake, as without 0-RTT.
    pub fn early_data_accepted(&self) -> bool {
        self.early_data.is_accepted()
    }
}

/// Where the claim of a connection's presented saved set stands.
enum ClaimState {
    /// Not claimed yet: a set is claimed only once the client has proved
    /// its address (the handshake is complete), so that a forged Initial
    /// carrying a copied token claims nothing.
    NotStarted,
    /// Claimed; the guard has yet to answer.
    Pending(Claim),
    /// The guard answered.
    Answered(ClaimOutcome),
}

/// Careful Resume for a quiche server: validates tokens, resumes, and mints
/// tokens from the capacity each connection observes.
///
/// One `ResumeServer` serves every connection of a process; the guard that
/// enforces one user per saved set is shared through it.
pub struct ResumeServer<R: Rng = SystemRng, G: TokenGuard = MemoryGuard> {
    pub(crate) tokens: TokenServer<R>,
    guard: G,
    pub(crate) config: ResumeConfig,
    pub(crate) metrics: Arc<ServerMetrics>,
    shares: JumpShares,
}

impl ResumeServer {
    /// The common case in one call: tokens sealed with `keys`, saved sets
    /// kept in this process ([`MemoryGuard`]), default settings. Several
    /// servers that share their clients share a key ring (see
    /// [`ex_token::KeyRing`]) and a guard ([`ResumeServer::new`] with
    /// `cr_guard_redis::RedisGuard`).
    pub fn with_keys(keys: KeyRing) -> Self {
        let tokens = TokenServer::new(keys, SystemRng::new(), Default::default());
        ResumeServer::new(tokens, MemoryGuard::default(), ResumeConfig::default())
    }

    /// [`ResumeServer::with_keys`] with a key drawn now: tokens are valid
    /// until the process ends, which suits one server that restarts rarely.
    pub fn with_generated_key() -> Result<Self, Error> {
        let key = TokenKey::generate(1, &mut SystemRng::new())?;
        Ok(ResumeServer::with_keys(KeyRing::new(key)))
    }
}

impl<R: Rng, G: TokenGuard> ResumeServer<R, G> {
    /// A server minting and validating with `tokens`, checking saved sets
    /// against `guard`.
    pub fn new(tokens: TokenServer<R>, guard: G, config: ResumeConfig) -> Self {
        ResumeServer {
            tokens,
            guard,
            shares: JumpShares::new(config.jump_budget),
            config,
            metrics: Arc::default(),
        }
    }

    /// The server-wide counters, shared: read them with
    /// [`ServerMetrics::snapshot`] from any thread.
    pub fn metrics(&self) -> Arc<ServerMetrics> {
        Arc::clone(&self.metrics)
    }

    /// The token minter and validator, and its keys (which also derive
    /// stateless reset tokens: [`crate::reset`]).
    pub fn tokens(&self) -> &TokenServer<R> {
        &self.tokens
    }

    /// The token minter and validator, for key rotation.
    pub fn tokens_mut(&mut self) -> &mut TokenServer<R> {
        &mut self.tokens
    }

    /// Announces extensible tokens in the server's transport parameters,
    /// seals TLS session tickets with a key derived from the token key ring
    /// (so that any server sharing the ring resumes them), and enables
    /// early data unless [`ResumeConfig::early_data`] is off.
    ///
    /// Call it again after rotating the ring's key: tickets then follow the
    /// new key, and clients holding one sealed under the old key make one
    /// full handshake.
    pub fn configure(&self, config: &mut quiche::Config) -> Result<(), Error> {
        config.set_ex_token(ex_token::TP_EX_TOKEN, ex_token::EX_TOKEN_ENABLED)?;
        config.set_ticket_key(self.tokens.keys().session_ticket_key())?;
        if self.config.early_data {
            config.enable_early_data();
        }
        Ok(())
    }

    /// Whether `token`, from an Initial of a client at `peer`, is one this
    /// server (or one sharing its key ring) sent with NEW_TOKEN and that
    /// still counts: authentic, unexpired, and either validating this
    /// address (RFC 9000, Section 8.1.3) or carrying a saved set of this
    /// client's network (a client whose address changed within its network
    /// resumes, under the anti-amplification limit). Such an Initial needs
    /// no Retry: [`ResumeServer::on_initial`] asks this. That a token
    /// decodes as an extensible token is not enough: anyone can write one;
    /// a Retry token is never one. `now` is wall-clock time.
    pub fn recognizes(&self, token: &[u8], peer: SocketAddr, now: SystemTime) -> bool {
        self.tokens
            .validate_unclaimed(token, peer, now)
            .is_ok_and(|validation| validation.address.is_validated() || validation.resume.is_ok())
    }

    /// Accepts a connection whose Initial carried `token` (empty when none),
    /// the same way [`quiche::accept()`] does, then acts on the token.
    ///
    /// Pass the Initial's token as it came, whatever it is. A connection
    /// accepted after a Retry (`odcid` given, or a Retry token of ours) was
    /// validated by the Retry: its token is a Retry token, not one from
    /// NEW_TOKEN, so it is neither judged nor counted as a presented token
    /// (no refusal, no close under the strict policy). The client's
    /// NEW_TOKEN token, if it had one, stayed in the Initial the Retry
    /// answered ([`crate::MetricsSnapshot::resuming_initials_retried`]).
    #[allow(clippy::too_many_arguments)]
    pub fn accept(
        &mut self,
        scid: &quiche::ConnectionId,
        odcid: Option<&quiche::ConnectionId>,
        local: SocketAddr,
        peer: SocketAddr,
        token: &[u8],
        config: &mut quiche::Config,
        now: SystemTime,
    ) -> Result<Accepted, Error> {
        let mut conn = quiche::accept(scid, odcid, local, peer, config)?;
        let token = if odcid.is_some() { &[] } else { token };
        let session = self.resume_connection(&mut conn, peer, token, now)?;
        Ok(Accepted { conn, session })
    }

    /// Acts on `token`, the token of the client's first Initial (empty when
    /// none), for a connection accepted elsewhere (by
    /// [`ResumeServer::accept`], or by a framework that hands the
    /// connection over once the handshake is complete: then the token
    /// cannot validate the address any more, and Careful Resume starts from
    /// the RTT the handshake measured). Call it before the connection sends
    /// application data. A Retry token of ours counts as no token (see
    /// [`ResumeServer::accept`]).
    pub fn resume_connection<F: BufFactory>(
        &mut self,
        conn: &mut quiche::Connection<F>,
        peer: SocketAddr,
        token: &[u8],
        now: SystemTime,
    ) -> Result<ResumeSession, Error> {
        let token = if ex_token::is_retry_token(token) {
            &[]
        } else {
            token
        };
        let token_presented = !token.is_empty();
        let validation = match self.tokens.validate_unclaimed(token, peer, now) {
            Ok(validation) => validation,
            Err(rejected) => {
                log::debug!("{peer}: token rejected, connection closed: {rejected}");
                close_rejected(conn, &rejected)?;
                let why = NoResume::Invalid(rejected.reason);
                self.metrics.on_accept(token_presented);
                self.metrics.on_refusal(&why);
                let mut session = ResumeSession::new(peer, token_presented, Err(why));
                session.rejected = Some(rejected);
                // A closed connection gets no tokens.
                session.address_token_sent = true;
                return Ok(session);
            }
        };

        self.metrics.on_accept(token_presented);
        let validates = validation.address.is_validated() && !conn.is_established();
        let mut session = ResumeSession::new(peer, token_presented, validation.resume);
        if validates {
            session.address_check = OnceCheck::ask(
                &self.guard,
                &OnceId::address_token(token),
                ADDRESS_TOKEN_RECORD,
                now,
            );
            self.poll_address_check(conn, &mut session);
        }
        if !self.config.early_data {
            session.early_data = EarlyData::Disabled;
        }

        match &session.resume {
            Ok(saved) => self.resume(conn, saved)?,
            Err(why) if token_presented => {
                log::debug!("{peer}: no Careful Resume: {why}");
                self.metrics.on_refusal(why);
            }
            Err(_) => {}
        }

        conn.observe_careful_resume()?;
        // Set up after the handshake (tokio-quiche), Careful Resume takes in
        // the handshake's RTT at once, and may already have ended: an RTT of
        // at most half the saved one (`rtt_not_validated`) leaves no jump to
        // hold and the saved set unused, so nothing is claimed.
        let holds_a_jump = conn
            .careful_resume()
            .is_some_and(|resume| resume.is_active() && resume.phase() == Phase::Reconnaissance);
        if session.resume.is_ok() && holds_a_jump {
            // The jump waits for the claim, which starts once the client
            // has proved its address: now, if the handshake is complete.
            conn.await_careful_resume_claim()?;
            self.start_claim(conn, &mut session, now);
        }
        Ok(session)
    }

    /// Claims the presented saved set once the handshake is complete: a
    /// client that finished it receives at its address, whereas anyone can
    /// send an Initial carrying a copied token. A guard in memory answers
    /// at once; one across the network a little later, and the jump waits
    /// for it.
    fn start_claim<F: BufFactory>(
        &self,
        conn: &mut quiche::Connection<F>,
        session: &mut ResumeSession,
        now: SystemTime,
    ) {
        let (ClaimState::NotStarted, Ok(saved)) = (&session.claim, &session.resume) else {
            return;
        };
        if !conn.is_established() {
            return;
        }
        let claim = self.guard.start_claim(&saved.set, now);
        session.claim = ClaimState::Pending(claim);
        self.poll_claim(conn, session);
    }

    /// Validates the client's address once the guard has recorded the
    /// token's first use; a token used before validates nothing.
    fn poll_address_check<F: BufFactory>(
        &self,
        conn: &mut quiche::Connection<F>,
        session: &mut ResumeSession,
    ) {
        match session.address_check.poll() {
            None => {}
            // Once the handshake completes, the address is validated anyway.
            Some(ClaimOutcome::Granted)
                if !conn.is_established() && conn.set_peer_address_verified().is_ok() =>
            {
                session.address_validated = true;
                self.metrics.on_address_validated();
            }
            Some(ClaimOutcome::Granted) => {}
            Some(outcome) => {
                log::debug!(
                    "{}: address token not validating ({outcome:?}): presented before",
                    session.peer
                );
                self.metrics.on_address_token_replayed();
            }
        }
    }

    /// Learns what became of the client's early data once TLS has read the
    /// first flight, and asks the guard whether an accepted flight is new.
    fn check_early_data<F: BufFactory>(
        &self,
        conn: &quiche::Connection<F>,
        session: &mut ResumeSession,
        now: SystemTime,
    ) {
        if session.early_data == EarlyData::Unknown {
            let mut early_data = EarlyData::from_tls_reason(conn.early_data_reason());
            if early_data == EarlyData::Checking {
                match conn.client_random() {
                    Some(random) => {
                        let flight = OnceId::first_flight(random);
                        session.first_flight =
                            OnceCheck::ask(&self.guard, &flight, FIRST_FLIGHT_RECORD, now);
                    }
                    // Nothing to record it by: as if the guard could not tell.
                    None => early_data = EarlyData::GuardUnavailable,
                }
            }
            session.early_data = early_data;
            self.metrics.on_early_data(early_data);
        }
        self.poll_first_flight(session);
    }

    /// Takes in the guard's answer on an accepted first flight.
    fn poll_first_flight(&self, session: &mut ResumeSession) {
        if session.early_data != EarlyData::Checking {
            return;
        }
        let Some(outcome) = session.first_flight.poll() else {
            return;
        };
        session.early_data = EarlyData::from_guard(outcome);
        self.metrics.on_early_data(session.early_data);
        if !session.early_data.is_accepted() {
            log::debug!(
                "{}: early data waits for the handshake: {}",
                session.peer,
                session.early_data.as_str()
            );
        }
    }

    /// Hands the guard's answers to the connection once they have arrived:
    /// the claim of the saved set, and the records of the token and of a
    /// 0-RTT first flight. A jump held for the claim goes ahead as soon as
    /// this sees a grant: while [`ResumeSession::claim_pending`], call it
    /// before each `recv()` and whenever the event loop wakes
    /// ([`ResumeServer::on_progress`] calls it too).
    pub fn poll_claim<F: BufFactory>(
        &self,
        conn: &mut quiche::Connection<F>,
        session: &mut ResumeSession,
    ) {
        self.poll_address_check(conn, session);
        self.poll_first_flight(session);
        let ClaimState::Pending(claim) = &session.claim else {
            return;
        };
        // Still on its way. Should Careful Resume end meanwhile (congestion,
        // nothing left to gain), the answer still matters: a grant is
        // released when the connection ends.
        let outcome = claim.outcome();
        if outcome == ClaimOutcome::Pending {
            return;
        }
        session.claim = ClaimState::Answered(outcome);
        if outcome.is_granted() {
            self.take_share(conn, session);
            self.share_jump(conn, session);
        }
        conn.careful_resume_claim_answered(outcome.is_granted())
            .ok();
        if outcome.is_granted() {
            // What was measured before the set was this connection's is
            // below the set it now hands on (the observer does so at its
            // next sample): minted, it would supersede that set.
            while conn.careful_resume_observation_next().is_some() {}
        }
        self.on_claim_answered(session, outcome);
    }

    /// Takes the granted connection's place in the jump budget.
    fn take_share<F: BufFactory>(&self, conn: &quiche::Connection<F>, session: &mut ResumeSession) {
        let Some(jump) = conn
            .careful_resume()
            .and_then(|resume| resume.queue_window())
        else {
            return;
        };
        session.share = self.shares.take(session.peer.ip(), jump);
    }

    /// Lowers the connection's jump, to come or unvalidated, to what the
    /// jump budget allows now (more connections may have jumped since the
    /// last look); while the jump is validated, tells Careful Resume when
    /// the budget would have lowered it (it then shares the path as a
    /// lowered jump does); and gives its place back once Careful Resume no
    /// longer holds a jump to come or to validate (validated, retreated,
    /// never made) or the connection is closing.
    fn share_jump<F: BufFactory>(
        &self,
        conn: &mut quiche::Connection<F>,
        session: &mut ResumeSession,
    ) {
        let Some(share) = &session.share else {
            return;
        };
        let jump_held = conn.careful_resume().is_some_and(|resume| {
            resume.is_active()
                && matches!(
                    resume.phase(),
                    Phase::Reconnaissance | Phase::Unvalidated | Phase::Validating
                )
        });
        if !jump_held || session.closed {
            session.share = None;
            return;
        }
        let allowance = self.shares.allowance(share);
        let before = conn
            .careful_resume()
            .map_or(0, |resume| resume.jump_window());
        if allowance < before && conn.limit_careful_resume_jump(allowance).is_ok() {
            if !std::mem::replace(&mut session.jump_limited, true) {
                self.metrics.on_jump_limited();
            }
            log::debug!(
                "{}: Careful Resume jump lowered from {before} to {} B: other jumps are \
                 unvalidated",
                session.peer,
                conn.careful_resume()
                    .map_or(0, |resume| resume.jump_window()),
            );
        }
    }

    /// Counts a claim's answer; a refusal stops the session resuming.
    fn on_claim_answered(&self, session: &mut ResumeSession, outcome: ClaimOutcome) {
        match outcome.refusal() {
            None => self.metrics.on_granted(),
            Some(why) => {
                log::debug!("{}: no Careful Resume: {why}", session.peer);
                self.metrics.on_refusal(&why);
                session.resume = Err(why);
            }
        }
    }

    /// The end of a connection, once: a connection that claimed its saved
    /// set and never jumped releases it for the next connection (it hands
    /// that same set on). [`ResumeServer::on_progress`] calls this when it
    /// sees the connection closing (draining or closed); call it yourself
    /// if your loop drops connections without a last `on_progress`.
    pub fn on_closed<F: BufFactory>(
        &self,
        conn: &mut quiche::Connection<F>,
        session: &mut ResumeSession,
        now: SystemTime,
    ) {
        if std::mem::replace(&mut session.closed, true) {
            return;
        }
        if !conn.is_established() {
            self.metrics.on_handshake_incomplete();
        }
        // The answer may have come meanwhile; without one the set stays
        // claimed until it expires (never used twice).
        self.poll_claim(conn, session);
        self.share_jump(conn, session);
        let jumped = conn.careful_resume().is_some_and(|r| r.jumped());
        if let (ClaimState::Answered(ClaimOutcome::Granted), Some(presented)) =
            (&session.claim, &session.presented)
        {
            if !jumped {
                self.guard.release(&presented.set, now);
            }
        }
    }

    /// RFC 9959: a set whose jump retreated must not be used again, by any
    /// connection, whichever token carries it.
    fn revoke_presented(&self, session: &ResumeSession, now: SystemTime) {
        if let Some(presented) = &session.presented {
            self.guard.revoke(&presented.set, now);
        }
    }

    /// Counts the phase changes the connection made since the last look,
    /// and logs the ones an operator wants to see.
    fn count_phases<F: BufFactory>(
        &self,
        conn: &quiche::Connection<F>,
        session: &mut ResumeSession,
        now: SystemTime,
    ) {
        let Some(resume) = conn.careful_resume() else {
            return;
        };
        let history = resume.history();
        for &(phase, trigger) in &history[session.phases_counted.min(history.len())..] {
            match (phase, trigger) {
                (Phase::Unvalidated, _) => {
                    self.metrics.on_jump();
                    log::debug!(
                        "{}: Careful Resume jumped to {} B",
                        session.peer,
                        resume.jump_window()
                    );
                }
                (Phase::Normal, Trigger::LastUnvalidatedPacketAcknowledged) => {
                    self.metrics.on_jump_validated();
                    log::debug!("{}: Careful Resume jump validated", session.peer);
                }
                (Phase::SafeRetreat, trigger) => {
                    self.metrics.on_retreat();
                    self.revoke_presented(session, now);
                    log::info!(
                        "{}: Careful Resume retreated ({}): the saved set is revoked",
                        session.peer,
                        trigger.as_str()
                    );
                }
                (Phase::Normal, Trigger::PersistentCongestion) if resume.saved_set_consumed() => {
                    // A jump that met persistent congestion discredits the
                    // set as a Safe Retreat does.
                    self.revoke_presented(session, now);
                    log::info!(
                        "{}: Careful Resume ended by persistent congestion: the saved set is revoked",
                        session.peer
                    );
                }
                _ => {}
            }
        }
        session.phases_counted = history.len();
        if resume.jump_unused() && !session.jump_unused_reported {
            session.jump_unused_reported = true;
            self.metrics.on_jump_unused();
            log::info!(
                "{}: Careful Resume jump went unused: {} of the {} B it opened were sent \
                 while unvalidated (a response smaller than the jump, or stream data \
                 written too late: see the server loop in cr_endpoint's docs)",
                session.peer,
                resume.unvalidated_sent(),
                resume.jump_window(),
            );
        }
    }

    fn resume<F: BufFactory>(
        &self,
        conn: &mut quiche::Connection<F>,
        saved: &SavedParameters,
    ) -> Result<(), Error> {
        let stats = conn
            .path_stats()
            .next()
            .ok_or(quiche::Error::InvalidState)?;
        let mut resume_config = careful_resume::Config::new(stats.cwnd, stats.pmtu)
            .map_err(|_| quiche::Error::InvalidState)?
            .with_initial_data(self.config.initial_data)
            .with_slow_start_past_saved(self.config.slow_start_past_saved);
        if let Some(max_jump) = self.config.max_jump {
            resume_config = resume_config.with_max_jump(max_jump);
        }

        let saved = SavedState {
            cwnd: usize::try_from(saved.saved_cwnd).unwrap_or(usize::MAX),
            rtt: saved.saved_rtt,
        };
        conn.setup_careful_resume_with(resume_config, saved)?;
        Ok(())
    }

    /// Housekeeping after each `recv()`, `send()` or `on_timeout()` of an
    /// accepted connection: once the handshake is complete, claims the
    /// presented saved set and sends the client an address validation
    /// token (twice: with the handshake, and once the client has the TLS
    /// session ticket, for clients that keep tokens only beside one), then
    /// a BDP token whenever the observing policy saves new
    /// capacity (see [`careful_resume::Observer`]: a few per connection,
    /// each better than the last). Tokens of what this connection measured
    /// belong to its own saved set, the newest of the client's Remote
    /// Endpoint; a connection that measured less than the set it presented
    /// and has not jumped hands that same set on. A retreat revokes the
    /// presented set; the end of the connection releases it when unused
    /// ([`ResumeServer::on_closed`]). `now` is wall-clock time.
    pub fn on_progress<F: BufFactory>(
        &mut self,
        conn: &mut quiche::Connection<F>,
        session: &mut ResumeSession,
        now: SystemTime,
    ) {
        if let Some(rejected) = &session.rejected {
            // Tokens and Careful Resume are over for it; only the close
            // held until the server's first flight is left.
            close_rejected(conn, rejected).ok();
            return;
        }
        self.start_claim(conn, session, now);
        self.poll_claim(conn, session);
        self.check_early_data(conn, session, now);
        self.count_phases(conn, session, now);
        self.share_jump(conn, session);
        // A connection that is closing sends no more data: it can no
        // longer jump.
        if conn.is_closed() || conn.is_draining() {
            self.on_closed(conn, session, now);
            return;
        }
        if !conn.is_established() {
            return;
        }

        // An address token goes out with HANDSHAKE_DONE, ahead of the TLS
        // session ticket (quiche writes NEW_TOKEN frames before CRYPTO
        // frames). Clients that keep a token only for a server whose ticket
        // they already hold (Chromium, which over HTTP/3 also waits for the
        // server's SETTINGS) drop it. A second follows once the client has
        // acknowledged a packet sent after the first, so the flight that
        // carried the ticket has arrived; never after a BDP token, which
        // clients that keep only the newest token must present.
        if !session.address_token_sent {
            session.address_token_sent = true;
            session.address_token_again_after = Some(conn.stats().sent_bytes);
            self.send_address_token(conn, session.peer, now);
        } else if let Some(sent) = session.address_token_again_after {
            if conn.stats().acked_bytes > sent {
                session.address_token_again_after = None;
                if session.bdp_tokens_sent == 0 {
                    self.send_address_token(conn, session.peer, now);
                }
            }
        }

        // Until the guard has answered, what the connection measured waits:
        // a set of its own would supersede the one it presented.
        if session.resume.is_ok() && !matches!(session.claim, ClaimState::Answered(_)) {
            return;
        }
        let jumped = conn.careful_resume().is_some_and(|r| r.jumped());
        while let Some(observation) = conn.careful_resume_observation_next() {
            let path = SavedPath {
                capacity: observation.saved_cwnd as u64,
                rtt: observation.saved_rtt,
                extras: &[],
            };
            let handed_on = session
                .presented
                .filter(|_| observation.handed_on && !jumped && session.resume.is_ok())
                .map(|presented| presented.set);
            let Some(set) =
                handed_on.or_else(|| self.own_set(session.peer, &mut session.saved_set, now))
            else {
                continue;
            };
            // Clients cache tokens differently: quic-go and aioquic present
            // the newest, quinn the older of its two newest. A settled
            // estimate (the end of a burst, a set handed on) goes out as two
            // sibling tokens, so that every client presents it (the guard
            // admits one of them).
            let copies = if observation.settled { 2 } else { 1 };
            for _ in 0..copies {
                if let Ok(token) = self.tokens.mint_bdp_token(session.peer, &path, &set) {
                    if conn.send_new_token(&token).is_ok() {
                        self.metrics.on_bdp_token();
                        session.bdp_tokens_sent += 1;
                        session.saved_for_next = Some(path.capacity);
                    }
                }
            }
        }
    }

    /// Mints and queues an address validation token. Tokens that cannot be
    /// minted or queued only cost the next connection its head start; they
    /// never fail this one.
    fn send_address_token<F: BufFactory>(
        &mut self,
        conn: &mut quiche::Connection<F>,
        peer: SocketAddr,
        now: SystemTime,
    ) {
        let lifetime = self.config.address_token_lifetime;
        if let Ok(token) = self.tokens.mint_address_token(peer, now, lifetime) {
            if conn.send_new_token(&token).is_ok() {
                self.metrics.on_address_token();
            }
        }
    }

    /// The connection's own saved set, drawn anew (and recorded in the
    /// guard as its Remote Endpoint's newest) when there is none yet or
    /// when less than half its lifetime is left.
    fn own_set(
        &mut self,
        peer: SocketAddr,
        current: &mut Option<SavedSet>,
        now: SystemTime,
    ) -> Option<SavedSet> {
        let lifetime = self.tokens.config().saved_set_lifetime;
        let fresh_enough = |set: &SavedSet| {
            set.expiry
                .duration_since(now)
                .is_ok_and(|left| left >= lifetime / 2)
        };
        match current {
            Some(set) if fresh_enough(set) => Some(*set),
            _ => {
                let set = self.tokens.new_saved_set(peer, now).ok()?;
                self.guard.record(&set, now);
                *current = Some(set);
                *current
            }
        }
    }
}

/// Closes a connection whose token the strict policy rejected, with the
/// token's error code. quiche sends a close only once the server has sent
/// its first flight (a close before that leaves nothing on the wire), so
/// until then the close is held: [`ResumeServer::on_progress`] calls this
/// again after each send.
fn close_rejected<F: BufFactory>(
    conn: &mut quiche::Connection<F>,
    rejected: &TokenRejected,
) -> Result<(), quiche::Error> {
    if conn.stats().sent == 0 || conn.local_error().is_some() {
        return Ok(());
    }
    let reason = rejected.reason.to_string();
    conn.close(false, rejected.error_code, reason.as_bytes())
        .or_else(ignore_done)
}

fn ignore_done(e: quiche::Error) -> Result<(), quiche::Error> {
    match e {
        quiche::Error::Done => Ok(()),
        e => Err(e),
    }
}
