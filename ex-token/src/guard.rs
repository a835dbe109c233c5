//! The one-user-per-set guard (RFC 9959): a saved set of path parameters
//! may seed Careful Resume on one connection only.
//!
//! Tokens live on the client, so one token could be presented on many
//! parallel connections, each jumping to half the saved window; and one
//! connection sends several tokens (siblings) carrying the same
//! observations. Every BDP token a connection mints therefore carries one
//! saved-set id ([`crate::SavedSet`]); the server remembers the set ids it
//! has accepted until the set expires and resumes at most one connection
//! per set, whichever sibling it presents.
//!
//! A guard may live across the network (one registry for a fleet of
//! servers), so a claim is started without blocking and answered later: a
//! server starts it when the Initial arrives and needs the answer only when
//! the sender would jump, at least a round trip later. A [`Claim`] is that
//! answer to come; whatever cannot answer in time answers
//! [`ClaimOutcome::Unavailable`], and only [`ClaimOutcome::Granted`] lets a
//! connection resume (fail closed).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use crate::time::unix_secs;
use crate::NoResume;

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
    /// The set was claimed before (by this token or a sibling).
    Taken,
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

/// A registry of saved-set ids already used to resume.
///
/// Methods take `&self` so one guard can serve every connection of a server
/// (or, behind a network service, a whole fleet); implementations provide
/// their own synchronisation.
pub trait TokenGuard {
    /// Starts claiming set `id` until `expiry` (the set's, which every
    /// sibling token shares) without blocking. The answer is
    /// [`ClaimOutcome::Granted`] for the first claim of a set only;
    /// implementations answer every claim within a bounded time, with
    /// [`ClaimOutcome::Unavailable`] when they cannot tell.
    fn start_claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> Claim;

    /// Claims set `id` and waits for the answer: a blocking convenience
    /// for simple servers and tests.
    fn claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> ClaimOutcome {
        self.start_claim(id, expiry, now).wait()
    }
}

impl<G: TokenGuard + ?Sized> TokenGuard for Arc<G> {
    fn start_claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> Claim {
        (**self).start_claim(id, expiry, now)
    }
}

/// A bounded in-memory [`TokenGuard`] for a single server process.
///
/// Claims are remembered until their set expires. Each `claim` costs
/// amortised constant time: one hash lookup plus the removal of entries that
/// have expired, oldest first. Memory is fixed at creation: when `capacity`
/// live claims exist, new claims are refused (no Careful Resume) rather
/// than forgetting a live one, which would let that token be replayed.
/// Shareable between threads (`Sync`); one uncontended lock per claim.
#[derive(Debug)]
pub struct MemoryGuard {
    inner: Mutex<Claims>,
}

#[derive(Debug)]
struct Claims {
    ids: HashSet<u64>,
    /// Claims in the order they were made, with their expiry (unix secs).
    order: VecDeque<(u64, u64)>,
    capacity: usize,
}

impl MemoryGuard {
    /// Creates a guard remembering at most `capacity` live claims.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Claims {
                ids: HashSet::with_capacity(capacity),
                order: VecDeque::with_capacity(capacity),
                capacity,
            }),
        }
    }

    /// Number of claims currently remembered (expired ones included until
    /// the next `claim` sweeps them).
    pub fn len(&self) -> usize {
        self.lock().ids.len()
    }

    /// Whether no claim is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Claims> {
        // The registry stays consistent even if a holder panicked.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for MemoryGuard {
    /// Room for 100,000 live claims: a server resuming 30 connections a
    /// second with one-hour sets (a few MB of memory).
    fn default() -> Self {
        MemoryGuard::new(100_000)
    }
}

impl TokenGuard for MemoryGuard {
    /// Answers at once.
    fn start_claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> Claim {
        let mut claims = self.lock();
        claims.sweep(unix_secs(now));
        let outcome = if claims.ids.contains(&id.0) {
            ClaimOutcome::Taken
        } else if claims.ids.len() >= claims.capacity {
            ClaimOutcome::Unavailable
        } else {
            claims.ids.insert(id.0);
            claims.order.push_back((id.0, unix_secs(expiry)));
            ClaimOutcome::Granted
        };
        Claim::answered(outcome)
    }
}

impl Claims {
    /// Forgets claims at the front of the queue whose sets have expired.
    ///
    /// Sets minted with one lifetime expire in claim order; a longer-lived
    /// claim at the front only delays forgetting the ones behind it.
    fn sweep(&mut self, now: u64) {
        while let Some(&(id, expiry)) = self.order.front() {
            if expiry > now {
                break;
            }
            self.order.pop_front();
            self.ids.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    use ClaimOutcome::{Granted, Pending, Taken, Unavailable};

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn second_claim_of_an_id_is_refused_until_expiry() {
        let guard = MemoryGuard::new(4);
        assert_eq!(Granted, guard.claim(SetId(7), at(100), at(10)));
        assert_eq!(Taken, guard.claim(SetId(7), at(100), at(11)));
        assert_eq!(Taken, guard.claim(SetId(7), at(100), at(99)));
        assert_eq!(Granted, guard.claim(SetId(8), at(100), at(99)));
        // At the expiry second the token is expired and its claim forgotten.
        assert_eq!(Granted, guard.claim(SetId(7), at(200), at(100)));
    }

    #[test]
    fn a_full_guard_refuses_rather_than_forgets() {
        let guard = MemoryGuard::new(2);
        assert_eq!(Granted, guard.claim(SetId(1), at(50), at(0)));
        assert_eq!(Granted, guard.claim(SetId(2), at(60), at(0)));
        assert_eq!(Unavailable, guard.claim(SetId(3), at(60), at(1)));
        assert_eq!(Taken, guard.claim(SetId(1), at(50), at(1)));
        assert_eq!(guard.len(), 2);
        assert_eq!(Granted, guard.claim(SetId(3), at(70), at(50)));
        assert_eq!(guard.len(), 2);
        assert_eq!(Taken, guard.claim(SetId(2), at(60), at(50)));
    }

    #[test]
    fn zero_capacity_refuses_everything() {
        let guard = MemoryGuard::new(0);
        assert_eq!(Unavailable, guard.claim(SetId(1), at(50), at(0)));
        assert!(guard.is_empty());
    }

    #[test]
    fn parallel_claims_of_one_id_admit_exactly_one() {
        let guard = MemoryGuard::new(16);
        let admitted = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| guard.claim(SetId(42), at(100), at(1))))
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
}
