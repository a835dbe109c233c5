//! Stateless resets (RFC 9000, Section 10.3): how a server tells a client
//! that it no longer has the client's connection (after a restart), so the
//! client gives up at once instead of waiting out its idle timeout.
//!
//! This module owns the layout of the connection IDs a server picks, the
//! reset token each announces, and the reset datagram. A connection ID is
//! [`CONNECTION_ID_LEN`] bytes:
//!
//! ```text
//! +--------+-----------+------------+-------------+
//! | key id | server id | epoch (6)  | random (8)  |
//! +--------+-----------+------------+-------------+
//! ```
//!
//! The key id names the token key the ID was made under
//! ([`ex_token::KeyRing::current_id`]); its reset token is
//! [`KeyRing::stateless_reset_token`] of the ID under that key, so a
//! process holding the key ring can compute the token of an ID it never
//! issued. The server id and the epoch say who issued the ID, in the spirit
//! of QUIC-LB's plaintext connection IDs: the server's id in its fleet
//! (configured, distinct per server) and the process's epoch (its start, in
//! unix milliseconds, 48 bits).
//!
//! # Who resets what
//!
//! A server answers a packet for an ID it does not have only when the ID
//! carries **its own server id from an earlier epoch** ([`Issuer::may_reset`]):
//! a connection of a process it replaced. Being able to compute a token is
//! not enough: were every server of a fleet to reset any ID under the
//! shared ring, an attacker that has seen a victim's connection ID could
//! send one packet for it to another server, receive the victim's reset
//! token in the answer, and kill the victim's connection with it (RFC 9000,
//! Section 10.3 and Section 21.11). So:
//!
//! - Give every server of a fleet its own server id. Servers sharing one
//!   reset each other's connections, which brings the attack back.
//! - Route by connection ID (the server id byte, the second of the ID), not
//!   by client address: a client whose address changes (a NAT rebinding)
//!   keeps reaching the server that has its connection. A packet that
//!   reaches another server is dropped without an answer.
//! - A restarted server resets its predecessor's connections only if its
//!   clock has moved on: an epoch is the start time, so a clock stepped
//!   back across a restart leaves those clients to their idle timeout.
//!
//! The server id and epoch travel in clear: an observer learns which server
//! of the fleet holds a connection and when its process started, as with
//! QUIC-LB's plaintext IDs. The eight random bytes keep IDs of one
//! connection unlinkable to one another only as far as those do not.

use std::time::{SystemTime, UNIX_EPOCH};

use ex_token::{KeyRing, Rng, RESET_TOKEN_LEN};

/// Length of the connection IDs [`connection_id`] makes. Fixed, as RFC 9000
/// (Section 10.3.2) requires when reset tokens are derived from the IDs: a
/// server without the connection's state must still read its ID's length
/// from a short header, which does not carry it.
pub const CONNECTION_ID_LEN: usize = 16;

/// Bytes of the epoch in a connection ID.
const EPOCH_LEN: usize = 6;

/// Largest epoch: 48 bits of unix milliseconds (the year 10889).
const MAX_EPOCH: u64 = (1 << (8 * EPOCH_LEN)) - 1;

/// The shortest stateless reset: a short header's first byte, four
/// unpredictable bytes and the 16-byte token (RFC 9000, Section 10.3).
const MIN_RESET_LEN: usize = 21;

/// A reset answering a datagram this long or shorter is one byte shorter
/// than it; a longer datagram gets a reset of this length, as long as a
/// short packet carrying a little data (RFC 9000, Section 10.3's advice).
const PLAIN_RESET_LEN: usize = 43;

/// Who issues a server's connection IDs: its server id in the fleet and
/// the epoch of its process, written into every ID it makes (see the module
/// docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Issuer {
    server: u8,
    epoch: u64,
}

impl Issuer {
    /// Server `server` in a process started at `started` (the epoch is its
    /// unix time in milliseconds, 0 before 1970).
    pub fn new(server: u8, started: SystemTime) -> Issuer {
        let ms = started
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        Issuer {
            server,
            epoch: u64::try_from(ms).map_or(MAX_EPOCH, |ms| ms.min(MAX_EPOCH)),
        }
    }

    /// The issuer a connection ID of this module's layout names; `None` for
    /// an ID of another length.
    pub fn of(cid: &[u8]) -> Option<Issuer> {
        let cid: &[u8; CONNECTION_ID_LEN] = cid.try_into().ok()?;
        let [_, server, rest @ ..] = cid;
        let (epoch, _) = rest.split_first_chunk::<EPOCH_LEN>()?;
        let epoch = epoch
            .iter()
            .fold(0u64, |value, &byte| (value << 8) | u64::from(byte));
        Some(Issuer {
            server: *server,
            epoch,
        })
    }

    /// The server id.
    pub fn server(&self) -> u8 {
        self.server
    }

    /// The epoch: the process's start in unix milliseconds (48 bits).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The same process as server `server`, for a server told its id after
    /// it started.
    pub fn with_server(self, server: u8) -> Issuer {
        Issuer { server, ..self }
    }

    /// Whether this process may reset connection ID `cid`: an ID of its own
    /// server id from an earlier epoch, a connection of a process it
    /// replaced. Never an ID of another server (which may hold the
    /// connection), nor one of this process.
    pub fn may_reset(&self, cid: &[u8]) -> bool {
        Issuer::of(cid)
            .is_some_and(|issuer| issuer.server == self.server && issuer.epoch < self.epoch)
    }
}

/// A new connection ID of `issuer` under `keys`' current key.
pub fn connection_id(
    keys: &KeyRing,
    issuer: &Issuer,
    rng: &mut dyn Rng,
) -> Option<[u8; CONNECTION_ID_LEN]> {
    let mut id = [0u8; CONNECTION_ID_LEN];
    let (head, random) = id.split_at_mut(2 + EPOCH_LEN);
    rng.fill(random).ok()?;
    let epoch = issuer.epoch.to_be_bytes();
    let (_, epoch) = epoch.split_last_chunk::<EPOCH_LEN>()?;
    head[0] = keys.current_id();
    head[1] = issuer.server;
    head[2..].copy_from_slice(epoch);
    Some(id)
}

/// The reset token a connection with ID `cid` announces in its transport
/// parameters (`quiche::Config::set_stateless_reset_token`), or `None` for an
/// ID not made by [`connection_id`] under a key `keys` still holds.
pub fn reset_token(keys: &KeyRing, cid: &[u8]) -> Option<u128> {
    if cid.len() != CONNECTION_ID_LEN {
        return None;
    }
    let token = keys.stateless_reset_token(*cid.first()?, cid)?;
    Some(u128::from_be_bytes(token))
}

/// Writes into `out` the stateless reset `issuer` answers a short-header
/// datagram of `received` bytes with, addressed to connection ID `dcid`
/// that it does not have, and returns its length; `None` when no reset may
/// be sent: `issuer` may not reset the ID ([`Issuer::may_reset`]: it is
/// another server's, or this process's own), the ID is not one of ours
/// under a key still held, or the datagram is too short for a reset
/// shorter than it (the rule that ends any loop of resets between two
/// endpoints that both lost their state).
pub fn stateless_reset(
    keys: &KeyRing,
    issuer: &Issuer,
    dcid: &[u8],
    received: usize,
    rng: &mut dyn Rng,
    out: &mut [u8],
) -> Option<usize> {
    if !issuer.may_reset(dcid) {
        return None;
    }
    let len = received.checked_sub(1)?.min(PLAIN_RESET_LEN);
    if len < MIN_RESET_LEN {
        return None;
    }
    let token = reset_token(keys, dcid)?.to_be_bytes();
    let out = out.get_mut(..len)?;
    let (unpredictable, token_bytes) = out.split_at_mut(len - RESET_TOKEN_LEN);
    rng.fill(unpredictable).ok()?;
    // A short header's form: long-header bit clear, fixed bit set.
    unpredictable[0] = 0b0100_0000 | (unpredictable[0] & 0b0011_1111);
    token_bytes.copy_from_slice(&token);
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ex_token::{SimRng, TokenKey};
    use std::time::Duration;

    fn ring(id: u8) -> KeyRing {
        KeyRing::new(TokenKey::from_bytes(id, &[id; ex_token::KEY_LEN]).expect("key"))
    }

    /// Server `server` started `ms` milliseconds after 2026-01-01.
    fn issuer(server: u8, ms: u64) -> Issuer {
        Issuer::new(
            server,
            UNIX_EPOCH + Duration::from_millis(1_767_225_600_000 + ms),
        )
    }

    #[test]
    fn a_connection_id_names_its_key_server_and_epoch() {
        let keys = ring(7);
        let issued_by = issuer(3, 0);
        let cid = connection_id(&keys, &issued_by, &mut SimRng::new(1)).expect("id");
        assert_eq!(cid[..8], [7, 3, 0x01, 0x9b, 0x76, 0xda, 0xa8, 0x00]);
        assert_eq!(Issuer::of(&cid), Some(issued_by));
        assert_eq!(issued_by.epoch(), 1_767_225_600_000);
        assert_ne!(
            cid,
            connection_id(&keys, &issued_by, &mut SimRng::new(2)).expect("id")
        );
        let token = keys.stateless_reset_token(7, &cid).expect("token");
        assert_eq!(reset_token(&keys, &cid), Some(u128::from_be_bytes(token)));
        // Not an ID of this layout: another length, or a key the ring lacks.
        assert_eq!(reset_token(&keys, &cid[..8]), None);
        assert_eq!(Issuer::of(&cid[..8]), None);
        assert_eq!(reset_token(&ring(8), &cid), None);
        // Times out of range are clamped, never a panic.
        assert_eq!(
            Issuer::new(1, UNIX_EPOCH - Duration::from_secs(1)).epoch(),
            0
        );
        assert_eq!(
            Issuer::new(1, UNIX_EPOCH + Duration::from_secs(1 << 40)).epoch(),
            MAX_EPOCH
        );
    }

    #[test]
    fn a_server_resets_only_its_own_ids_of_earlier_epochs() {
        let keys = ring(7);
        let id = |server, ms| connection_id(&keys, &issuer(server, ms), &mut SimRng::new(1));
        let restarted = issuer(3, 1_000);
        let mut out = [0u8; 1500];
        // (server id, epoch) of the ID, and whether server 3 started at
        // 1000 resets it.
        let cases = [
            ((3, 999), true),
            ((3, 0), true),
            ((3, 1_000), false),
            ((3, 1_001), false),
            ((4, 999), false),
            ((2, 0), false),
        ];
        for ((server, ms), resets) in cases {
            let cid = id(server, ms).expect("id");
            assert_eq!(restarted.may_reset(&cid), resets, "{server} at {ms}");
            let reset =
                stateless_reset(&keys, &restarted, &cid, 1200, &mut SimRng::new(3), &mut out);
            assert_eq!(reset.is_some(), resets, "{server} at {ms}");
        }
    }

    #[test]
    fn a_reset_is_shorter_than_what_it_answers_and_ends_in_the_token() {
        let keys = ring(7);
        let cid = connection_id(&keys, &issuer(1, 0), &mut SimRng::new(1)).expect("id");
        let restarted = issuer(1, 1);
        let token = keys.stateless_reset_token(7, &cid).expect("token");
        let mut out = [0u8; 1500];
        for (received, expected) in [(22, 21), (40, 39), (44, 43), (1200, 43)] {
            let len = stateless_reset(
                &keys,
                &restarted,
                &cid,
                received,
                &mut SimRng::new(3),
                &mut out,
            );
            assert_eq!(len, Some(expected), "answering {received} bytes");
            assert_eq!(out[0] & 0b1100_0000, 0b0100_0000, "a short header's form");
            assert_eq!(out[expected - RESET_TOKEN_LEN..expected], token);
        }
        // Too short to answer with anything shorter, and not ours.
        assert_eq!(
            stateless_reset(&keys, &restarted, &cid, 21, &mut SimRng::new(3), &mut out),
            None
        );
        assert_eq!(
            stateless_reset(
                &ring(8),
                &restarted,
                &cid,
                1200,
                &mut SimRng::new(3),
                &mut out
            ),
            None
        );
        assert_eq!(
            stateless_reset(
                &keys,
                &restarted,
                &cid,
                1200,
                &mut SimRng::new(3),
                &mut out[..20]
            ),
            None
        );
    }
}
