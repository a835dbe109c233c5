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

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use crate::time::unix_secs;

/// The id of a saved set, sealed into every BDP token minted from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SetId(pub u64);

/// A registry of saved-set ids already used to resume.
///
/// Methods take `&self` so one guard can serve every connection of a server
/// (or, behind a network service, a whole fleet); implementations provide
/// their own synchronisation.
pub trait TokenGuard {
    /// Records set `id` as used until `expiry` (the set's, which every
    /// sibling token shares), returning `true` if this is the first claim,
    /// or `false` if it is already taken (or cannot be recorded, in which
    /// case refusing is the safe answer).
    fn claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> bool;
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Claims> {
        // The registry stays consistent even if a holder panicked.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl TokenGuard for MemoryGuard {
    fn claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> bool {
        let mut claims = self.lock();
        claims.sweep(unix_secs(now));
        if claims.ids.contains(&id.0) || claims.ids.len() >= claims.capacity {
            return false;
        }
        claims.ids.insert(id.0);
        claims.order.push_back((id.0, unix_secs(expiry)));
        true
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

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn second_claim_of_an_id_is_refused_until_expiry() {
        let guard = MemoryGuard::new(4);
        assert!(guard.claim(SetId(7), at(100), at(10)));
        assert!(!guard.claim(SetId(7), at(100), at(11)));
        assert!(!guard.claim(SetId(7), at(100), at(99)));
        assert!(guard.claim(SetId(8), at(100), at(99)));
        // At the expiry second the token is expired and its claim forgotten.
        assert!(guard.claim(SetId(7), at(200), at(100)));
    }

    #[test]
    fn a_full_guard_refuses_rather_than_forgets() {
        let guard = MemoryGuard::new(2);
        assert!(guard.claim(SetId(1), at(50), at(0)));
        assert!(guard.claim(SetId(2), at(60), at(0)));
        assert!(!guard.claim(SetId(3), at(60), at(1)));
        assert!(!guard.claim(SetId(1), at(50), at(1)));
        assert_eq!(guard.len(), 2);
        assert!(guard.claim(SetId(3), at(70), at(50)));
        assert_eq!(guard.len(), 2);
        assert!(!guard.claim(SetId(2), at(60), at(50)));
    }

    #[test]
    fn zero_capacity_refuses_everything() {
        let guard = MemoryGuard::new(0);
        assert!(!guard.claim(SetId(1), at(50), at(0)));
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
                .filter(|&won| won)
                .count()
        });
        assert_eq!(admitted, 1);
    }
}
