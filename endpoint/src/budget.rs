//! The jump budget: how much unvalidated data the resuming connections of
//! one server may have in flight together.
//!
//! Each client measured its path alone, and RFC 9959 lets it jump to half
//! of what it saved. A server cannot tell whether its clients share a
//! bottleneck: after a restart, a popular release or a satellite beam
//! coming back, many of them resume at once, and their jumps together can
//! be many times what the path holds (cr-sim's flash crowds: fifty jumps of
//! 242 kB onto a 3.75 MB path lost 9.2x the packets slow start did). So the
//! server assumes they might share one. Within a group of clients
//! ([`JumpBudget::clients`], the whole server by default), while `n` jumps
//! are to come, unvalidated or being validated, each may be at most
//! [`JumpBudget::jumps`] `/ n` of its own full jump: together about what
//! `jumps` of them would send alone. A lone client jumps in full. As a
//! crowd arrives, the jumps already under way are lowered too (a jump is
//! paced over a round trip, so most of it is still to be sent), so every
//! member ends with about the same share, and none races ahead of the
//! others. A jump lowered to no more than twice the window it would jump
//! from is not made (slow start sends as much in that round without a
//! validation): the connection slow-starts, as without a token. Shrinking
//! the jump is within RFC 9959 (a sender may jump to less). A lowered jump
//! that meets a queue (the others' shares fill the path) ends slow start
//! there, at what it validated; without one, slow start goes on to the
//! saved capacity once the jump is validated
//! (`careful_resume::CarefulResume::limit_jump`).
//!
//! A jump holds its place from the grant of its saved set until it is
//! validated or retreats, Careful Resume ends without a jump, or the
//! connection closes. A jump made in full that others join while it is
//! being validated counts as lowered: with a queue, its slow start ends at
//! what it validated. (Released once unvalidated, the first jumps of a
//! crowd arriving over two round trips or more went uncounted by the
//! later ones and, validated before those arrived, each slow-started on to
//! its saved capacity, the whole path: 1,117 packets lost over five seeds
//! of cr-sim's ten-client 2 MiB crowd at 300 ms spread over 3 s, against
//! 154 held.) The place is a [`Share`] that gives itself back when
//! dropped, so a connection its event loop drops early (say, without a
//! last `on_progress`) cannot hold it forever.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ex_token::{AddressPrefixes, RemoteEndpoint, SiteId};

/// How a [`crate::ResumeServer`] shares out jumps among connections that
/// resume at the same time (see the module documentation of why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JumpBudget {
    /// How many full jumps' worth the jumps of a group may send together:
    /// 2 by default (what two clients alone would jump, one saved
    /// capacity), shared equally as soon as more than two jump at once.
    pub jumps: u32,
    /// Which clients share one budget: clients whose addresses share these
    /// prefixes. `/0` (the default) makes the whole server one group; a
    /// server whose clients reach it over many independent paths may give
    /// each network its own (say /16 and /32).
    pub clients: AddressPrefixes,
}

impl Default for JumpBudget {
    fn default() -> Self {
        JumpBudget {
            jumps: 2,
            clients: AddressPrefixes { v4: 0, v6: 0 },
        }
    }
}

/// The jumps held now, per group of clients. Taking and giving back a
/// place lock the map; reading a group's count (every `on_progress` of a
/// connection holding a place) does not.
type Groups = Arc<Mutex<HashMap<RemoteEndpoint, Arc<AtomicUsize>>>>;

/// A connection's place in the budget, held while its jump is to come or
/// unvalidated, and given back when dropped.
#[derive(Debug)]
pub(crate) struct Share {
    group: RemoteEndpoint,
    /// How many places its group holds, itself included.
    held: Arc<AtomicUsize>,
    groups: Groups,
    /// The full jump, as Careful Resume would make it alone.
    full: usize,
}

impl Drop for Share {
    fn drop(&mut self) {
        // Under the lock, so that a place taken meanwhile finds the count
        // it increments still in the map.
        let mut groups = lock(&self.groups);
        if self.held.fetch_sub(1, Ordering::Relaxed) == 1 {
            groups.remove(&self.group);
        }
    }
}

/// The budget and the places held in it.
#[derive(Debug)]
pub(crate) struct JumpShares {
    budget: Option<JumpBudget>,
    groups: Groups,
}

impl JumpShares {
    /// Shares out `budget`; `None` lets every jump go in full.
    pub(crate) fn new(budget: Option<JumpBudget>) -> Self {
        JumpShares {
            budget,
            groups: Groups::default(),
        }
    }

    /// A place in the budget for a client at `client` whose Careful Resume
    /// would jump to `full` bytes alone; `None` without a budget.
    pub(crate) fn take(&self, client: IpAddr, full: usize) -> Option<Share> {
        let budget = self.budget?;
        let group = RemoteEndpoint::new(SiteId(0), client, budget.clients);
        let held = Arc::clone(lock(&self.groups).entry(group).or_default());
        held.fetch_add(1, Ordering::Relaxed);
        Some(Share {
            group,
            held,
            groups: Arc::clone(&self.groups),
            full,
        })
    }

    /// How far the jump of `share` may go now: all of it while no more
    /// than [`JumpBudget::jumps`] jumps are held in its group, `jumps / n`
    /// of it when `n` are.
    pub(crate) fn allowance(&self, share: &Share) -> usize {
        let Some(budget) = self.budget else {
            return share.full;
        };
        let held = share.held.load(Ordering::Relaxed).max(1);
        let jumps = budget.jumps as usize;
        if held <= jumps {
            return share.full;
        }
        let allowance = share.full as u128 * jumps as u128 / held as u128;
        usize::try_from(allowance).unwrap_or(share.full)
    }
}

fn lock(groups: &Groups) -> MutexGuard<'_, HashMap<RemoteEndpoint, Arc<AtomicUsize>>> {
    // The map stays consistent whatever panicked while it was held.
    groups.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn two_jump_in_full_and_a_crowd_shares_two_jumps_worth() {
        let shares = JumpShares::new(Some(JumpBudget::default()));
        let a = shares.take(ip("192.0.2.1"), 100_000).unwrap();
        assert_eq!(shares.allowance(&a), 100_000);
        let b = shares.take(ip("198.51.100.1"), 300_000).unwrap();
        assert_eq!(
            (shares.allowance(&a), shares.allowance(&b)),
            (100_000, 300_000)
        );
        let crowd: Vec<_> = (0..8)
            .map(|i| shares.take(ip(&format!("203.0.113.{i}")), 100_000).unwrap())
            .collect();
        // Ten held: each may send a fifth of its own jump.
        assert_eq!(shares.allowance(&a), 20_000);
        assert_eq!(shares.allowance(&b), 60_000);
        assert_eq!(shares.allowance(&crowd[7]), 20_000);
        drop(crowd);
        assert_eq!(shares.allowance(&a), 100_000);
        drop((a, b));
        assert!(lock(&shares.groups).is_empty());
    }

    #[test]
    fn groups_by_prefix_share_nothing() {
        let shares = JumpShares::new(Some(JumpBudget {
            jumps: 1,
            clients: AddressPrefixes { v4: 16, v6: 32 },
        }));
        let a = shares.take(ip("10.1.0.1"), 100_000).unwrap();
        let b = shares.take(ip("10.1.200.1"), 100_000).unwrap();
        let c = shares.take(ip("10.2.0.1"), 100_000).unwrap();
        let v6 = shares.take(ip("2001:db8::1"), 100_000).unwrap();
        assert_eq!(shares.allowance(&a), 50_000);
        assert_eq!(shares.allowance(&b), 50_000);
        assert_eq!(shares.allowance(&c), 100_000);
        assert_eq!(shares.allowance(&v6), 100_000);
    }

    #[test]
    fn without_a_budget_nothing_is_held() {
        let shares = JumpShares::new(None);
        assert!(shares.take(ip("192.0.2.1"), 100_000).is_none());
        assert!(lock(&shares.groups).is_empty());
    }

    #[test]
    fn a_place_is_given_back_when_its_holder_is_dropped_and_taken_anew() {
        let shares = JumpShares::new(Some(JumpBudget {
            jumps: 1,
            clients: AddressPrefixes { v4: 0, v6: 0 },
        }));
        let a = shares.take(ip("192.0.2.1"), 100_000).unwrap();
        let b = shares.take(ip("192.0.2.2"), 100_000).unwrap();
        assert_eq!(shares.allowance(&a), 50_000);
        drop(b);
        assert_eq!(shares.allowance(&a), 100_000);
        drop(a);
        assert!(lock(&shares.groups).is_empty());
        // A group emptied and taken again counts from one.
        let c = shares.take(ip("192.0.2.3"), 100_000).unwrap();
        assert_eq!(shares.allowance(&c), 100_000);
        let d = shares.take(ip("192.0.2.4"), 100_000).unwrap();
        assert_eq!(shares.allowance(&c), 50_000);
        drop(d);
    }
}
