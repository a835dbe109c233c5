//! The saved-set guard: RFC 9959's rules on who may use a saved set.
//!
//! - **One saved set per Remote Endpoint** ([`crate::RemoteEndpoint`]): the
//!   newest set minted for a client network supersedes every older one, so
//!   that a client holding tokens of two earlier connections cannot jump
//!   twice onto one path.
//! - **One connection per set**: tokens live on the client, so one token
//!   could be presented on many parallel connections, each jumping to half
//!   the saved window, and a connection sends several tokens (siblings) of
//!   one set. A set is claimed by the connection that uses it; a connection
//!   that ends without jumping releases it for the next.
//! - **A retreated set is dead**: a set whose jump met congestion (Safe
//!   Retreat) is revoked and never used again, whichever token carries it.
//!
//! The guard keeps one record per Remote Endpoint: the current set's id and
//! measurement time, and whether it is free, claimed or revoked. Records
//! expire with their set. [`decide`] is the whole rule book, shared by every
//! guard (the Redis guard runs the same rules in one script).
//!
//! A guard may live across the network (one registry for a fleet of
//! servers), so a claim is started without blocking and answered later: a
//! server starts it when the Initial arrives and needs the answer only when
//! the sender would jump, at least a round trip later. A [`Claim`] is that
//! answer to come; whatever cannot answer in time answers
//! [`ClaimOutcome::Unavailable`], and only [`ClaimOutcome::Granted`] lets a
//! connection resume (fail closed).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use crate::once::{FirstUse, OnceId, OnceRecords};
use crate::{NoResume, RemoteEndpoint, SavedSet};

/// The id of a saved set, sealed into every BDP token minted from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SetId(pub u64);

/// What a guard answered to a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClaimOutcome {
    /// No answer yet.
    Pending,
    /// The first claim of the set: the connection may resume from it.
    Granted,
    /// The set is claimed by another connection (with this token or a
    /// sibling), or was used by one that jumped.
    Taken,
    /// A newer set was minted for the same Remote Endpoint.
    Superseded,
    /// The set led to a Safe Retreat: it must never be used again.
    Revoked,
    /// The set was measured later than the guard's own clock by more than
    /// [`crate::MAX_CLOCK_SKEW`] (a guard with a clock of its own, such as
    /// Redis's, answers it): it was minted by a server whose clock is ahead,
    /// and is not used until the guard's clock has caught up.
    ClockSkew,
    /// The guard could not record the claim (full, unreachable, timed out,
    /// an unexpected reply): refusing is the safe answer.
    Unavailable,
}

impl ClaimOutcome {
    /// Whether the connection may resume from the set.
    pub fn is_granted(self) -> bool {
        self == ClaimOutcome::Granted
    }

    /// Why a connection whose claim got this answer does not resume; `None`
    /// when it was granted. No answer counts as the guard being unavailable.
    pub fn refusal(self) -> Option<NoResume> {
        match self {
            ClaimOutcome::Granted => None,
            ClaimOutcome::Taken => Some(NoResume::AlreadyInUse),
            ClaimOutcome::Superseded => Some(NoResume::Superseded),
            ClaimOutcome::Revoked => Some(NoResume::Revoked),
            ClaimOutcome::ClockSkew => Some(NoResume::ClockSkew),
            ClaimOutcome::Pending | ClaimOutcome::Unavailable => Some(NoResume::GuardUnavailable),
        }
    }
}

/// A claim under way: the guard's answer, now or later.
///
/// Cheap to poll ([`Claim::outcome`]) from an event loop; [`Claim::wait`]
/// blocks, for simple servers. Cloning shares the one answer.
#[derive(Clone, Debug)]
pub struct Claim {
    slot: Arc<Slot>,
}

/// The guard's half of a pending [`Claim`]: answers it once. Dropping it
/// unanswered answers [`ClaimOutcome::Unavailable`], so a guard that fails
/// on its way never leaves a connection waiting.
#[derive(Debug)]
pub struct ClaimAnswer {
    slot: Arc<Slot>,
}

#[derive(Debug, Default)]
struct Slot {
    outcome: Mutex<Option<ClaimOutcome>>,
    answered: Condvar,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Option<ClaimOutcome>> {
        self.outcome.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Claim {
    /// A claim answered already (a guard in memory).
    pub fn answered(outcome: ClaimOutcome) -> Claim {
        let slot = Slot::default();
        *slot.lock() = (outcome != ClaimOutcome::Pending).then_some(outcome);
        Claim {
            slot: Arc::new(slot),
        }
    }

    /// A claim to be answered later through the returned [`ClaimAnswer`].
    pub fn pending() -> (Claim, ClaimAnswer) {
        let slot = Arc::new(Slot::default());
        (Claim { slot: slot.clone() }, ClaimAnswer { slot })
    }

    /// The answer so far; never blocks.
    pub fn outcome(&self) -> ClaimOutcome {
        self.slot.lock().unwrap_or(ClaimOutcome::Pending)
    }

    /// Blocks until the guard answers. Guards answer every claim within
    /// their own timeout, so this returns in bounded time.
    pub fn wait(&self) -> ClaimOutcome {
        let slot = &self.slot;
        let mut outcome = slot.lock();
        while outcome.is_none() {
            outcome = slot
                .answered
                .wait(outcome)
                .unwrap_or_else(PoisonError::into_inner);
        }
        outcome.unwrap_or(ClaimOutcome::Unavailable)
    }

    /// Blocks until the guard answers or `timeout` passes, whichever comes
    /// first; [`ClaimOutcome::Pending`] after a timeout.
    pub fn wait_timeout(&self, timeout: Duration) -> ClaimOutcome {
        let slot = &self.slot;
        let outcome = slot.lock();
        let (outcome, _) = slot
            .answered
            .wait_timeout_while(outcome, timeout, |o| o.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        outcome.unwrap_or(ClaimOutcome::Pending)
    }
}

impl ClaimAnswer {
    /// Answers the claim; [`ClaimOutcome::Pending`] counts as
    /// [`ClaimOutcome::Unavailable`].
    pub fn answer(self, outcome: ClaimOutcome) {
        self.set(outcome);
    }

    fn set(&self, outcome: ClaimOutcome) {
        let outcome = match outcome {
            ClaimOutcome::Pending => ClaimOutcome::Unavailable,
            other => other,
        };
        let mut slot = self.slot.lock();
        if slot.is_none() {
            *slot = Some(outcome);
            self.slot.answered.notify_all();
        }
    }
}

impl Drop for ClaimAnswer {
    fn drop(&mut self) {
        self.set(ClaimOutcome::Unavailable);
    }
}

/// What a guard knows of a Remote Endpoint's current saved set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetRecord {
    /// The current set.
    pub id: SetId,
    /// When it was measured (unix milliseconds): a set measured later
    /// supersedes it.
    pub measured_at: u64,
    /// Whether a connection uses it.
    pub state: SetState,
}

/// The state of a Remote Endpoint's current saved set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetState {
    /// Minted, or released by a connection that did not jump: the next
    /// claim is granted.
    Free,
    /// A connection claimed it.
    Claimed,
    /// Its jump met congestion: dead everywhere.
    Revoked,
}

/// What happened to a saved set, as a guard is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetEvent {
    /// A connection minted the set's first token: the newest set of its
    /// Remote Endpoint.
    Minted,
    /// A connection wants to resume from the set.
    Claimed,
    /// The connection that claimed the set ended without jumping: the set
    /// is free for the next connection.
    Released,
    /// The set's jump met congestion (Safe Retreat): the set must never be
    /// used again.
    Revoked,
}

/// RFC 9959's rules on saved sets, for one Remote Endpoint: given the
/// guard's record (`None`: it knows of no set) and what happened to `set`,
/// the record to keep and, for a claim, the answer.
///
/// - A set measured later than the record's supersedes it (a mint of a set
///   measured at the same time does too; the later mint wins).
/// - A claim of the current set is granted when it is free; a claim of a
///   set the guard has not heard of (its mint was lost, or the guard
///   restarted) is granted when it is the newest, and recorded.
/// - Only the connection's own set is released; a revocation outlives
///   every later claim of the set.
pub fn decide(
    record: Option<SetRecord>,
    set: &SavedSet,
    event: SetEvent,
) -> (Option<SetRecord>, ClaimOutcome) {
    let at = set.measured_at_ms();
    let with = |state| {
        Some(SetRecord {
            id: set.id,
            measured_at: at,
            state,
        })
    };
    let current = record.filter(|r| r.id == set.id);
    let newer = record.is_none_or(|r| at > r.measured_at);
    match event {
        SetEvent::Minted => match record {
            Some(r) if r.id == set.id || at < r.measured_at => (record, ClaimOutcome::Pending),
            _ => (with(SetState::Free), ClaimOutcome::Pending),
        },
        SetEvent::Claimed => match current {
            Some(r) => match r.state {
                SetState::Free => (
                    Some(SetRecord {
                        state: SetState::Claimed,
                        ..r
                    }),
                    ClaimOutcome::Granted,
                ),
                SetState::Claimed => (record, ClaimOutcome::Taken),
                SetState::Revoked => (record, ClaimOutcome::Revoked),
            },
            None if newer => (with(SetState::Claimed), ClaimOutcome::Granted),
            None => (record, ClaimOutcome::Superseded),
        },
        SetEvent::Released => match current {
            Some(r) if r.state == SetState::Claimed => (
                Some(SetRecord {
                    state: SetState::Free,
                    ..r
                }),
                ClaimOutcome::Pending,
            ),
            _ => (record, ClaimOutcome::Pending),
        },
        SetEvent::Revoked => match current {
            Some(r) => (
                Some(SetRecord {
                    state: SetState::Revoked,
                    ..r
                }),
                ClaimOutcome::Pending,
            ),
            None if newer => (with(SetState::Revoked), ClaimOutcome::Pending),
            None => (record, ClaimOutcome::Pending),
        },
    }
}

/// Where servers record what happens to saved sets, and ask whether a
/// connection may resume from one (see the module's rules).
///
/// Methods take `&self` so one guard can serve every connection of a server
/// (or, behind a network service, a whole fleet); implementations provide
/// their own synchronisation. None of them blocks: a guard across the
/// network queues the request and answers claims later.
pub trait TokenGuard {
    /// Starts claiming `set` for a connection without blocking. The answer
    /// is [`ClaimOutcome::Granted`] only when `set` is its Remote Endpoint's
    /// newest and no other connection uses it; implementations answer every
    /// claim within a bounded time, with [`ClaimOutcome::Unavailable`] when
    /// they cannot tell.
    fn start_claim(&self, set: &SavedSet, now: SystemTime) -> Claim;

    /// A connection minted the first token of `set`: it supersedes the
    /// older sets of its Remote Endpoint. Best effort: a lost record lets an
    /// older set be used once more, never twice at once.
    fn record(&self, set: &SavedSet, now: SystemTime);

    /// The connection that claimed `set` ended without jumping: the next
    /// connection may use it.
    fn release(&self, set: &SavedSet, now: SystemTime);

    /// `set`'s jump met congestion (Safe Retreat): every token carrying it
    /// is refused from now on.
    fn revoke(&self, set: &SavedSet, now: SystemTime);

    /// Claims `set` and waits for the answer: a blocking convenience for
    /// simple servers and tests.
    fn claim(&self, set: &SavedSet, now: SystemTime) -> ClaimOutcome {
        self.start_claim(set, now).wait()
    }

    /// Records `id` (see [`OnceId`]: a 0-RTT first flight, an address
    /// token) as used, until `until`, without blocking. The answer is
    /// [`ClaimOutcome::Granted`] for the first record only and
    /// [`ClaimOutcome::Taken`] for a replay; a guard that cannot tell
    /// answers [`ClaimOutcome::Unavailable`], and the server then acts as
    /// for a replay (no early data, no address validation): fail closed.
    ///
    /// The default keeps no records and answers `Unavailable`: a guard
    /// written before these records existed refuses early data rather than
    /// let it be replayed.
    fn start_once(&self, id: &OnceId, until: SystemTime, now: SystemTime) -> Claim {
        let _ = (id, until, now);
        Claim::answered(ClaimOutcome::Unavailable)
    }
}

impl<G: TokenGuard + ?Sized> TokenGuard for Arc<G> {
    fn start_claim(&self, set: &SavedSet, now: SystemTime) -> Claim {
        (**self).start_claim(set, now)
    }

    fn record(&self, set: &SavedSet, now: SystemTime) {
        (**self).record(set, now)
    }

    fn release(&self, set: &SavedSet, now: SystemTime) {
        (**self).release(set, now)
    }

    fn revoke(&self, set: &SavedSet, now: SystemTime) {
        (**self).revoke(set, now)
    }

    fn start_once(&self, id: &OnceId, until: SystemTime, now: SystemTime) -> Claim {
        (**self).start_once(id, until, now)
    }
}

/// A bounded in-memory [`TokenGuard`] for a single server process.
///
/// Records are kept until their set expires. Each call costs amortised
/// constant time: one hash lookup plus the removal of records that have
/// expired, oldest first. Memory is fixed at creation: when `capacity`
/// Remote Endpoints have live records, a claim for another is refused (no
/// Careful Resume) rather than forgetting a live record, which would let a
/// set be used twice; a revocation then makes room by forgetting the
/// record that expires first. Shareable between threads (`Sync`); one
/// uncontended lock per call.
#[derive(Debug)]
pub struct MemoryGuard {
    inner: Mutex<Records>,
    /// First flights and address tokens used, as many as saved sets.
    once: Mutex<OnceRecords>,
}

#[derive(Debug)]
struct Records {
    records: HashMap<RemoteEndpoint, (SetRecord, SystemTime)>,
    /// Records in the order they were written, with the expiry written; a
    /// record rewritten since has a later entry.
    order: VecDeque<(RemoteEndpoint, SystemTime)>,
    capacity: usize,
}

impl MemoryGuard {
    /// Creates a guard remembering at most `capacity` Remote Endpoints.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Records {
                records: HashMap::with_capacity(capacity),
                order: VecDeque::with_capacity(capacity),
                capacity,
            }),
            once: Mutex::new(OnceRecords::new(capacity)),
        }
    }

    /// Number of Remote Endpoints with a record (expired ones included
    /// until the next call sweeps them).
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record of `endpoint`'s current set, if any.
    pub fn record_of(&self, endpoint: &RemoteEndpoint) -> Option<SetRecord> {
        self.lock().records.get(endpoint).map(|&(record, _)| record)
    }

    fn lock(&self) -> MutexGuard<'_, Records> {
        // The registry stays consistent even if a holder panicked.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn apply(&self, set: &SavedSet, event: SetEvent, now: SystemTime) -> ClaimOutcome {
        let mut records = self.lock();
        records.sweep(now);
        if set.expiry <= now {
            return ClaimOutcome::Unavailable;
        }
        let record = records.records.get(&set.endpoint).map(|&(r, _)| r);
        if record.is_none() && records.records.len() >= records.capacity {
            match event {
                SetEvent::Revoked if records.capacity > 0 => records.evict_one(),
                SetEvent::Claimed => return ClaimOutcome::Unavailable,
                _ => return ClaimOutcome::Pending,
            }
        }
        let (next, outcome) = decide(record, set, event);
        // Every record written is `set`'s, and expires with it.
        if let Some(next) = next.filter(|&next| Some(next) != record) {
            records.records.insert(set.endpoint, (next, set.expiry));
            records.order.push_back((set.endpoint, set.expiry));
        }
        outcome
    }
}

impl Default for MemoryGuard {
    /// Room for 100,000 Remote Endpoints: a server resuming 30 connections
    /// a second with one-hour sets (a few MB of memory).
    fn default() -> Self {
        MemoryGuard::new(100_000)
    }
}

impl TokenGuard for MemoryGuard {
    /// Answers at once.
    fn start_claim(&self, set: &SavedSet, now: SystemTime) -> Claim {
        Claim::answered(self.apply(set, SetEvent::Claimed, now))
    }

    fn record(&self, set: &SavedSet, now: SystemTime) {
        self.apply(set, SetEvent::Minted, now);
    }

    fn release(&self, set: &SavedSet, now: SystemTime) {
        self.apply(set, SetEvent::Released, now);
    }

    fn revoke(&self, set: &SavedSet, now: SystemTime) {
        self.apply(set, SetEvent::Revoked, now);
    }

    /// Answers at once.
    fn start_once(&self, id: &OnceId, until: SystemTime, now: SystemTime) -> Claim {
        let mut once = self.once.lock().unwrap_or_else(PoisonError::into_inner);
        Claim::answered(match once.record(*id, until, now) {
            FirstUse::First => ClaimOutcome::Granted,
            FirstUse::Again => ClaimOutcome::Taken,
            FirstUse::Unknown => ClaimOutcome::Unavailable,
        })
    }
}

impl Records {
    /// Forgets records at the front of the queue whose sets have expired.
    ///
    /// Sets minted with one lifetime expire in write order; a longer-lived
    /// entry at the front only delays forgetting the ones behind it.
    fn sweep(&mut self, now: SystemTime) {
        while let Some(&(endpoint, expiry)) = self.order.front() {
            if expiry > now {
                break;
            }
            self.order.pop_front();
            // A record rewritten since carries a later expiry.
            if self
                .records
                .get(&endpoint)
                .is_some_and(|&(_, current)| current <= now)
            {
                self.records.remove(&endpoint);
            }
        }
    }

    /// Forgets the live record written longest ago.
    fn evict_one(&mut self) {
        while let Some((endpoint, expiry)) = self.order.pop_front() {
            if self
                .records
                .get(&endpoint)
                .is_some_and(|&(_, current)| current == expiry)
            {
                self.records.remove(&endpoint);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::{AddressPrefixes, SiteId};

    use ClaimOutcome::{Granted, Pending, Revoked, Superseded, Taken, Unavailable};

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// Set `id` of client network `net` (192.0.2.0/24 style), measured at
    /// `measured` seconds, living 100 s.
    fn set(net: u8, id: u64, measured: u64) -> SavedSet {
        let ip = IpAddr::from([192, 0, net, 1]);
        SavedSet {
            id: SetId(id),
            endpoint: RemoteEndpoint::new(SiteId(0), ip, AddressPrefixes::SAME_NETWORK),
            measured_at: at(measured),
            expiry: at(measured + 100),
        }
    }

    #[test]
    fn a_set_is_granted_to_one_connection_at_a_time() {
        let guard = MemoryGuard::new(4);
        let s = set(2, 7, 10);
        assert_eq!(Granted, guard.claim(&s, at(10)));
        assert_eq!(Taken, guard.claim(&s, at(11)));
        assert_eq!(Taken, guard.claim(&s, at(109)));
        // At the expiry second the set and its record are gone.
        assert_eq!(Unavailable, guard.claim(&s, at(110)));
        assert!(guard.is_empty());
    }

    #[test]
    fn the_newest_set_of_a_remote_endpoint_supersedes_the_older() {
        let guard = MemoryGuard::new(4);
        let (older, newer) = (set(2, 1, 10), set(2, 2, 20));
        guard.record(&older, at(10));
        guard.record(&newer, at(20));
        assert_eq!(Superseded, guard.claim(&older, at(30)));
        assert_eq!(Granted, guard.claim(&newer, at(30)));
        assert_eq!(Superseded, guard.claim(&older, at(31)));
        // Another network is another Remote Endpoint.
        assert_eq!(Granted, guard.claim(&set(3, 1, 10), at(31)));
        // A record arriving late for an older set changes nothing.
        guard.record(&older, at(32));
        assert_eq!(
            guard.record_of(&newer.endpoint).map(|r| (r.id, r.state)),
            Some((SetId(2), SetState::Claimed))
        );
    }

    #[test]
    fn an_unrecorded_set_is_granted_only_when_newer_than_the_record() {
        let guard = MemoryGuard::new(4);
        guard.record(&set(2, 5, 50), at(50));
        assert_eq!(Superseded, guard.claim(&set(2, 4, 40), at(60)));
        // Same measurement time, another set: the recorded one stands.
        assert_eq!(Superseded, guard.claim(&set(2, 6, 50), at(60)));
        assert_eq!(Granted, guard.claim(&set(2, 7, 55), at(60)));
        assert_eq!(Superseded, guard.claim(&set(2, 5, 50), at(60)));
    }

    #[test]
    fn a_released_set_is_granted_again_and_only_its_own_claim_releases() {
        let guard = MemoryGuard::new(4);
        let s = set(2, 7, 10);
        assert_eq!(Granted, guard.claim(&s, at(10)));
        guard.release(&set(2, 8, 5), at(11));
        assert_eq!(Taken, guard.claim(&s, at(12)));
        guard.release(&s, at(13));
        assert_eq!(Granted, guard.claim(&s, at(14)));
    }

    #[test]
    fn a_revoked_set_is_never_granted_but_a_newer_one_is() {
        let guard = MemoryGuard::new(4);
        let s = set(2, 7, 10);
        assert_eq!(Granted, guard.claim(&s, at(10)));
        guard.revoke(&s, at(11));
        guard.release(&s, at(12));
        assert_eq!(Revoked, guard.claim(&s, at(13)));
        // Revoked before any claim or record (a fleet member that never
        // saw it).
        let unknown = set(3, 9, 10);
        guard.revoke(&unknown, at(13));
        assert_eq!(Revoked, guard.claim(&unknown, at(14)));
        // What the retreated connection measures afterwards is a new set.
        let after = set(2, 8, 20);
        guard.record(&after, at(20));
        assert_eq!(Granted, guard.claim(&after, at(21)));
    }

    #[test]
    fn the_rules_as_a_table() {
        use SetEvent as E;
        use SetState as S;
        let s = set(2, 7, 10);
        let rec = |id, measured: u64, state| {
            Some(SetRecord {
                id: SetId(id),
                measured_at: measured * 1000,
                state,
            })
        };
        // (record before, event, record after, answer)
        #[rustfmt::skip]
        let cases = [
            (None,                   E::Claimed,  rec(7, 10, S::Claimed), Granted),
            (rec(7, 10, S::Free),    E::Claimed,  rec(7, 10, S::Claimed), Granted),
            (rec(7, 10, S::Claimed), E::Claimed,  rec(7, 10, S::Claimed), Taken),
            (rec(7, 10, S::Revoked), E::Claimed,  rec(7, 10, S::Revoked), Revoked),
            (rec(6, 9, S::Claimed),  E::Claimed,  rec(7, 10, S::Claimed), Granted),
            (rec(6, 10, S::Free),    E::Claimed,  rec(6, 10, S::Free),    Superseded),
            (rec(6, 11, S::Free),    E::Claimed,  rec(6, 11, S::Free),    Superseded),
            (None,                   E::Minted,   rec(7, 10, S::Free),    Pending),
            (rec(6, 10, S::Claimed), E::Minted,   rec(7, 10, S::Free),    Pending),
            (rec(6, 11, S::Free),    E::Minted,   rec(6, 11, S::Free),    Pending),
            (rec(7, 10, S::Claimed), E::Minted,   rec(7, 10, S::Claimed), Pending),
            (rec(7, 10, S::Claimed), E::Released, rec(7, 10, S::Free),    Pending),
            (rec(7, 10, S::Revoked), E::Released, rec(7, 10, S::Revoked), Pending),
            (rec(6, 9, S::Claimed),  E::Released, rec(6, 9, S::Claimed),  Pending),
            (None,                   E::Released, None,                   Pending),
            (None,                   E::Revoked,  rec(7, 10, S::Revoked), Pending),
            (rec(7, 10, S::Claimed), E::Revoked,  rec(7, 10, S::Revoked), Pending),
            (rec(6, 11, S::Free),    E::Revoked,  rec(6, 11, S::Free),    Pending),
            (rec(6, 9, S::Free),     E::Revoked,  rec(7, 10, S::Revoked), Pending),
        ];
        for (record, event, next, outcome) in cases {
            let decided = decide(record, &s, event);
            assert_eq!(decided, (next, outcome), "{record:?} {event:?}");
        }
    }

    #[test]
    fn a_full_guard_refuses_new_networks_rather_than_forgets() {
        let guard = MemoryGuard::new(2);
        assert_eq!(Granted, guard.claim(&set(1, 1, 0), at(0)));
        assert_eq!(Granted, guard.claim(&set(2, 2, 0), at(0)));
        assert_eq!(Unavailable, guard.claim(&set(3, 3, 0), at(1)));
        guard.record(&set(3, 3, 0), at(1));
        assert_eq!(guard.len(), 2);
        assert_eq!(Taken, guard.claim(&set(1, 1, 0), at(1)));
        // A revocation makes room: it must not be lost.
        guard.revoke(&set(3, 3, 0), at(2));
        assert_eq!(Revoked, guard.claim(&set(3, 3, 0), at(2)));
        assert_eq!(guard.len(), 2);
        // Records expire with their sets.
        assert_eq!(Granted, guard.claim(&set(4, 4, 100), at(100)));
    }

    #[test]
    fn zero_capacity_refuses_everything() {
        let guard = MemoryGuard::new(0);
        guard.revoke(&set(1, 1, 0), at(0));
        assert_eq!(Unavailable, guard.claim(&set(1, 1, 0), at(0)));
        assert!(guard.is_empty());
    }

    #[test]
    fn parallel_claims_of_one_set_admit_exactly_one() {
        let guard = MemoryGuard::new(16);
        let s = set(2, 42, 1);
        let admitted = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| guard.claim(&s, at(1))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .filter(|outcome| outcome.is_granted())
                .count()
        });
        assert_eq!(admitted, 1);
    }

    #[test]
    fn a_pending_claim_is_answered_once_and_a_dropped_answer_refuses() {
        let (claim, answer) = Claim::pending();
        assert_eq!(claim.outcome(), Pending);
        assert_eq!(claim.wait_timeout(Duration::ZERO), Pending);
        answer.answer(Granted);
        assert_eq!(claim.outcome(), Granted);
        assert_eq!(claim.clone().wait(), Granted);

        let (claim, answer) = Claim::pending();
        drop(answer);
        assert_eq!(claim.wait(), Unavailable);

        let (claim, answer) = Claim::pending();
        answer.answer(Pending);
        assert_eq!(claim.outcome(), Unavailable);
    }

    #[test]
    fn wait_returns_an_answer_given_on_another_thread() {
        let (claim, answer) = Claim::pending();
        let outcome = std::thread::scope(|s| {
            s.spawn(move || answer.answer(Taken));
            claim.wait()
        });
        assert_eq!(outcome, Taken);
    }

    #[test]
    fn refusals_name_their_reason() {
        assert_eq!(Superseded.refusal(), Some(NoResume::Superseded));
        assert_eq!(Revoked.refusal(), Some(NoResume::Revoked));
        assert_eq!(Taken.refusal(), Some(NoResume::AlreadyInUse));
        assert_eq!(Pending.refusal(), Some(NoResume::GuardUnavailable));
        assert_eq!(Granted.refusal(), None);
    }
}
