//! Stateless resets (RFC 9000, Section 10.3): how a server tells a client
//! that it no longer has the client's connection (after a restart, or on
//! another machine of the fleet), so the client gives up at once instead of
//! waiting out its idle timeout.
//!
//! This module owns the layout of the connection IDs a server picks, the
//! reset token each announces, and the reset datagram. A connection ID is
//! [`CONNECTION_ID_LEN`] bytes whose first names the token key it was made
//! under ([`ex_token::KeyRing::current_id`]); the rest are random. Its reset
//! token is [`KeyRing::stateless_reset_token`] of the ID under that key, so
//! any process holding the key ring (the one that restarted, or any server
//! of a fleet sharing the ring) can reset a connection it never saw, for as
//! long as the ring keeps that key.

use ex_token::{KeyRing, Rng, RESET_TOKEN_LEN};

/// Length of the connection IDs [`connection_id`] makes. Fixed, as RFC 9000
/// (Section 10.3.2) requires when reset tokens are derived from the IDs: a
/// server without the connection's state must still read its ID's length
/// from a short header, which does not carry it.
pub const CONNECTION_ID_LEN: usize = 16;

/// The shortest stateless reset: a short header's first byte, four
/// unpredictable bytes and the 16-byte token (RFC 9000, Section 10.3).
const MIN_RESET_LEN: usize = 21;

/// A reset answering a datagram this long or shorter is one byte shorter
/// than it; a longer datagram gets a reset of this length, as long as a
/// short packet carrying a little data (RFC 9000, Section 10.3's advice).
const PLAIN_RESET_LEN: usize = 43;

/// A new connection ID under `keys`' current key.
pub fn connection_id(keys: &KeyRing, rng: &mut dyn Rng) -> Option<[u8; CONNECTION_ID_LEN]> {
    let mut id = [0u8; CONNECTION_ID_LEN];
    rng.fill(&mut id[1..]).ok()?;
    id[0] = keys.current_id();
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

/// Writes into `out` the stateless reset answering a short-header datagram
/// of `received` bytes addressed to connection ID `dcid` that the server
/// does not know, and returns its length; `None` when no reset may be sent:
/// the ID is not one of ours under a key still held, or the datagram is too
/// short for a reset shorter than it (the rule that ends any loop of resets
/// between two endpoints that both lost their state).
pub fn stateless_reset(
    keys: &KeyRing,
    dcid: &[u8],
    received: usize,
    rng: &mut dyn Rng,
    out: &mut [u8],
) -> Option<usize> {
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

    fn ring(id: u8) -> KeyRing {
        KeyRing::new(TokenKey::from_bytes(id, &[id; ex_token::KEY_LEN]).expect("key"))
    }

    #[test]
    fn a_connection_id_names_its_key_and_announces_that_keys_token() {
        let keys = ring(7);
        let cid = connection_id(&keys, &mut SimRng::new(1)).expect("id");
        assert_eq!(cid[0], 7);
        assert_ne!(cid, connection_id(&keys, &mut SimRng::new(2)).expect("id"));
        let token = keys.stateless_reset_token(7, &cid).expect("token");
        assert_eq!(reset_token(&keys, &cid), Some(u128::from_be_bytes(token)));
        // Not an ID of this layout: another length, or a key the ring lacks.
        assert_eq!(reset_token(&keys, &cid[..8]), None);
        assert_eq!(reset_token(&ring(8), &cid), None);
    }

    #[test]
    fn a_reset_is_shorter_than_what_it_answers_and_ends_in_the_token() {
        let keys = ring(7);
        let cid = connection_id(&keys, &mut SimRng::new(1)).expect("id");
        let token = keys.stateless_reset_token(7, &cid).expect("token");
        let mut out = [0u8; 1500];
        for (received, expected) in [(22, 21), (40, 39), (44, 43), (1200, 43)] {
            let len = stateless_reset(&keys, &cid, received, &mut SimRng::new(3), &mut out);
            assert_eq!(len, Some(expected), "answering {received} bytes");
            assert_eq!(out[0] & 0b1100_0000, 0b0100_0000, "a short header's form");
            assert_eq!(out[expected - RESET_TOKEN_LEN..expected], token);
        }
        // Too short to answer with anything shorter, and not ours.
        assert_eq!(
            stateless_reset(&keys, &cid, 21, &mut SimRng::new(3), &mut out),
            None
        );
        assert_eq!(
            stateless_reset(&ring(8), &cid, 1200, &mut SimRng::new(3), &mut out),
            None
        );
        assert_eq!(
            stateless_reset(&keys, &cid, 1200, &mut SimRng::new(3), &mut out[..20]),
            None
        );
    }
}
