//! Things a server must act on at most once, across every server that
//! shares its guard: a 0-RTT first flight, and an address validation token.
//!
//! - **A 0-RTT first flight** (RFC 8446, section 8; RFC 9001, section 9.2):
//!   anyone who saw a client's first flight can send it again, and TLS
//!   accepts it again as long as its ticket age looks right (BoringSSL
//!   allows 60 s of skew). The flight is known by its ClientHello's random,
//!   which the PSK binder covers: a server that records the random for
//!   longer than that tolerance acts on each first flight's early data once.
//! - **An address validation token** (RFC 9000, section 8.1.4): a token
//!   replayed from the address it was issued to would validate that
//!   address again and let a server send a whole window to a victim; used
//!   once, it validates once.
//!
//! A record is a [`OnceId`] kept until an expiry; [`OnceRecords`] keeps
//! them in memory, bounded, and refuses to record more when full of live
//! records (forgetting one would let it be used twice).

use std::collections::{HashMap, VecDeque};
use std::time::SystemTime;

/// What the value of a [`OnceId`] identifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnceKind {
    /// A 0-RTT first flight, by its ClientHello's random.
    FirstFlight,
    /// An address validation token, by its SHA-256 digest.
    AddressToken,
}

impl OnceKind {
    /// A short name, for keys in a shared registry and for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            OnceKind::FirstFlight => "first-flight",
            OnceKind::AddressToken => "address-token",
        }
    }
}

/// Something to act on at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnceId {
    /// What it is.
    pub kind: OnceKind,
    /// Its 32 bytes: a ClientHello's random, or a token's digest.
    pub value: [u8; 32],
}

impl OnceId {
    /// The 0-RTT first flight whose ClientHello had `random`.
    pub fn first_flight(random: [u8; 32]) -> OnceId {
        OnceId {
            kind: OnceKind::FirstFlight,
            value: random,
        }
    }

    /// The address validation token `token`.
    pub fn address_token(token: &[u8]) -> OnceId {
        let digest = ring::digest::digest(&ring::digest::SHA256, token);
        let mut value = [0; 32];
        value.copy_from_slice(digest.as_ref());
        OnceId {
            kind: OnceKind::AddressToken,
            value,
        }
    }
}

/// The answer to recording a [`OnceId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstUse {
    /// Not seen before: recorded now.
    First,
    /// Recorded already: a replay.
    Again,
    /// Cannot tell (full of live records): treat as a replay.
    Unknown,
}

/// Records kept in memory until they expire, at most `capacity` at a time.
#[derive(Debug)]
pub struct OnceRecords {
    expiries: HashMap<OnceId, SystemTime>,
    /// Records in the order written, to forget the expired ones first.
    order: VecDeque<(OnceId, SystemTime)>,
    capacity: usize,
}

impl OnceRecords {
    /// Room for `capacity` live records.
    pub fn new(capacity: usize) -> OnceRecords {
        OnceRecords {
            expiries: HashMap::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    /// Records `id` until `until`, unless a live record of it exists.
    pub fn record(&mut self, id: OnceId, until: SystemTime, now: SystemTime) -> FirstUse {
        self.sweep(now);
        if self.expiries.contains_key(&id) {
            return FirstUse::Again;
        }
        if self.expiries.len() >= self.capacity {
            return FirstUse::Unknown;
        }
        self.expiries.insert(id, until);
        self.order.push_back((id, until));
        FirstUse::First
    }

    /// Live records (expired ones included until the next call sweeps them).
    pub fn len(&self) -> usize {
        self.expiries.len()
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.expiries.is_empty()
    }

    /// Forgets the records at the front of the queue that have expired.
    /// Records written with one lifetime expire in write order; a longer
    /// one at the front only delays forgetting those behind it.
    fn sweep(&mut self, now: SystemTime) {
        while let Some(&(id, until)) = self.order.front() {
            if until > now {
                break;
            }
            self.order.pop_front();
            self.expiries.remove(&id);
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
    fn a_value_is_first_once_until_its_record_expires() {
        let mut records = OnceRecords::new(10);
        let flight = OnceId::first_flight([1; 32]);
        assert_eq!(records.record(flight, at(160), at(100)), FirstUse::First);
        assert_eq!(records.record(flight, at(170), at(110)), FirstUse::Again);
        assert_eq!(records.record(flight, at(219), at(159)), FirstUse::Again);
        // Past its expiry, TLS would no longer accept the flight anyway.
        assert_eq!(records.record(flight, at(220), at(160)), FirstUse::First);
    }

    #[test]
    fn kinds_do_not_collide() {
        let mut records = OnceRecords::new(10);
        let token = OnceId::address_token(b"a token");
        let flight = OnceId::first_flight(token.value);
        assert_eq!(records.record(token, at(10), at(0)), FirstUse::First);
        assert_eq!(records.record(flight, at(10), at(0)), FirstUse::First);
        assert_eq!(records.record(token, at(10), at(1)), FirstUse::Again);
    }

    #[test]
    fn a_full_set_of_live_records_answers_unknown_and_forgets_nothing() {
        let mut records = OnceRecords::new(2);
        let [a, b, c] = [1, 2, 3].map(|n| OnceId::first_flight([n; 32]));
        assert_eq!(records.record(a, at(60), at(0)), FirstUse::First);
        assert_eq!(records.record(b, at(70), at(10)), FirstUse::First);
        assert_eq!(records.record(c, at(80), at(20)), FirstUse::Unknown);
        assert_eq!(records.record(a, at(80), at(20)), FirstUse::Again);
        // Once a's record expires, there is room for c.
        assert_eq!(records.record(c, at(120), at(60)), FirstUse::First);
        assert_eq!(records.len(), 2);
    }
}
