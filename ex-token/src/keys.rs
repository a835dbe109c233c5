//! Token keys, key rotation and the sealed-box layout.
//!
//! A sealed box is `key_id (1) || nonce (12) || ciphertext || tag (16)`,
//! using ChaCha20-Poly1305. The additional data is
//! `label || key_id || bound`, where the label separates the kinds of boxes
//! (so one can never be replayed as the other) and `bound` carries values
//! that travel in the clear but must not change.
//!
//! # Nonces
//!
//! A ring's nonces for its current key form a 96-bit counter that starts
//! at a random value (the first seal's draw) and goes up by one per seal,
//! so one process never repeats a nonce under a key. Two processes sealing
//! with the same key (a fleet, or one server across restarts) each start at
//! a random point: a nonce repeats only where their ranges overlap, which
//! for `m` sealing processes of at most `n` seals each happens with
//! probability below `m² · n / 2^96` (for a thousand servers each
//! restarted a thousand times, and a trillion seals each, under 2^-16),
//! where independent random nonces reach the usual 2^-32 limit after 2^32
//! seals in total: hours for a large fleet. The bound therefore holds
//! without rotating the key; rotation remains for other reasons (a key
//! that may have leaked).
//!
//! The same key material also yields, through HKDF-SHA256, a separate HMAC
//! key for stateless reset tokens (RFC 9000, Section 10.3.2): the secret a
//! server must keep across restarts to reset connections it no longer has
//! is the one it already keeps for its tokens. So does the TLS session
//! ticket key, so that a restarted server, or any server of a fleet
//! sharing the ring, resumes a client's TLS session and accepts its early
//! data.

use std::collections::VecDeque;
use std::fmt;

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::{hkdf, hmac};

use zeroize::Zeroizing;

use crate::{MintError, Rng};

/// Length of token key material, in bytes.
pub const KEY_LEN: usize = 32;

/// Number of previous keys a [`KeyRing`] keeps for opening after rotation.
pub const MAX_PREVIOUS_KEYS: usize = 3;

/// Length of a stateless reset token (RFC 9000, Section 10.3).
pub const RESET_TOKEN_LEN: usize = 16;

/// HKDF info deriving a key's stateless reset key from its material, so the
/// two uses of the material never share a key.
const RESET_KEY_INFO: &[u8] = b"quiche-cr stateless reset";

/// Length of a TLS session ticket key: BoringSSL's key name, HMAC key and
/// AES key, 16 bytes each (`quiche::Config::set_ticket_key`).
pub const SESSION_TICKET_KEY_LEN: usize = 48;

/// HKDF info deriving a key's session ticket key from its material.
const TICKET_KEY_INFO: &[u8] = b"quiche-cr session tickets";

/// The HKDF output length of the session ticket key.
struct TicketKeyLen;

impl hkdf::KeyType for TicketKeyLen {
    fn len(&self) -> usize {
        SESSION_TICKET_KEY_LEN
    }
}

const TAG_LEN: usize = 16;

/// Bytes a sealed box adds to its plaintext: key id, nonce and tag.
pub(crate) const SEAL_OVERHEAD: usize = 1 + NONCE_LEN + TAG_LEN;

/// Largest plaintext that [`KeyRing::open`] accepts.
pub(crate) const MAX_PLAINTEXT: usize = 96;

/// Size of the scratch buffer [`KeyRing::open`] decrypts into.
pub(crate) const OPEN_BUF: usize = MAX_PLAINTEXT + TAG_LEN;

/// Longest label plus bound data, bounding the additional-data buffer.
const MAX_AAD: usize = 64;

/// Why a key could not be created or installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// Key material must be exactly [`KEY_LEN`] bytes.
    Length(usize),
    /// The random source failed while generating a key.
    Random,
    /// A key with this id is already in the ring.
    DuplicateId(u8),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length(len) => write!(f, "key material is {len} bytes, not {KEY_LEN}"),
            Self::Random => f.write_str("random source failed"),
            Self::DuplicateId(id) => write!(f, "key id {id} already in use"),
        }
    }
}

impl std::error::Error for KeyError {}

/// Why a sealed box did not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Shorter than the key id, nonce and tag, or longer than any box the
    /// server seals.
    BadLength(usize),
    /// No key in the ring has this id (e.g. retired by rotation).
    UnknownKey(u8),
    /// Authentication failed: forged, altered or sealed for another use.
    Forged,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadLength(len) => write!(f, "sealed box of impossible length {len}"),
            Self::UnknownKey(id) => write!(f, "unknown key id {id}"),
            Self::Forged => f.write_str("authentication failed"),
        }
    }
}

impl std::error::Error for OpenError {}

/// A ChaCha20-Poly1305 key with its one-byte id, and the keys derived from
/// the same material: the HMAC key of stateless reset tokens and the TLS
/// session ticket key.
pub struct TokenKey {
    id: u8,
    key: LessSafeKey,
    reset: hmac::Key,
    ticket: Zeroizing<[u8; SESSION_TICKET_KEY_LEN]>,
}

impl TokenKey {
    /// Creates a key from raw material, e.g. read from a server's key file.
    pub fn from_bytes(id: u8, material: &[u8]) -> Result<Self, KeyError> {
        if material.len() != KEY_LEN {
            return Err(KeyError::Length(material.len()));
        }
        let key = UnboundKey::new(&CHACHA20_POLY1305, material)
            .map_err(|_| KeyError::Length(material.len()))?;
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(material);
        let reset = prk
            .expand(&[RESET_KEY_INFO], hmac::HMAC_SHA256)
            .map(hmac::Key::from)
            .map_err(|_| KeyError::Length(material.len()))?;
        let mut ticket = Zeroizing::new([0; SESSION_TICKET_KEY_LEN]);
        prk.expand(&[TICKET_KEY_INFO], TicketKeyLen)
            .and_then(|okm| okm.fill(ticket.as_mut_slice()))
            .map_err(|_| KeyError::Length(material.len()))?;
        Ok(Self {
            id,
            key: LessSafeKey::new(key),
            reset,
            ticket,
        })
    }

    /// Generates fresh key material from `rng`.
    pub fn generate(id: u8, rng: &mut dyn Rng) -> Result<Self, KeyError> {
        let mut material = [0u8; KEY_LEN];
        rng.fill(&mut material).map_err(|_| KeyError::Random)?;
        Self::from_bytes(id, &material)
    }

    /// The key id written in clear in front of every box it seals.
    pub fn id(&self) -> u8 {
        self.id
    }
}

impl fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenKey").field("id", &self.id).finish()
    }
}

/// The current sealing key and the previous keys that still open.
///
/// Rotation keeps the last [`MAX_PREVIOUS_KEYS`] keys, so tokens minted
/// before a rotation stay valid until they expire, provided rotations are
/// spaced by at least the token lifetime divided by that number.
#[derive(Debug)]
pub struct KeyRing {
    current: TokenKey,
    previous: VecDeque<TokenKey>,
    /// The nonce of the current key's next seal (96 bits), once the first
    /// seal has drawn where the sequence starts (see the module docs).
    next_nonce: Option<u128>,
}

/// Nonces are 96-bit numbers.
const NONCE_MASK: u128 = (1 << (8 * NONCE_LEN)) - 1;

impl KeyRing {
    /// Creates a ring whose only key is `current`.
    pub fn new(current: TokenKey) -> Self {
        Self {
            current,
            previous: VecDeque::with_capacity(MAX_PREVIOUS_KEYS + 1),
            next_nonce: None,
        }
    }

    /// Makes `next` the sealing key; the old one keeps opening.
    ///
    /// The oldest previous key is dropped beyond [`MAX_PREVIOUS_KEYS`]. The
    /// new id must differ from every key the ring still holds, as the id is
    /// all that selects the key when opening.
    pub fn rotate(&mut self, next: TokenKey) -> Result<(), KeyError> {
        if self.find(next.id).is_some() {
            return Err(KeyError::DuplicateId(next.id));
        }
        let old = std::mem::replace(&mut self.current, next);
        self.previous.push_front(old);
        self.previous.truncate(MAX_PREVIOUS_KEYS);
        // The new key's sequence starts at a random point of its own.
        self.next_nonce = None;
        Ok(())
    }

    /// Id of the key that seals new tokens.
    pub fn current_id(&self) -> u8 {
        self.current.id
    }

    /// The TLS session ticket key of the current key, derived from its
    /// material (`quiche::Config::set_ticket_key`): every holder of the
    /// ring derives the same, so a client's ticket resumes on any of them.
    /// Tickets sealed under an older key are not opened after a rotation:
    /// those clients make a full handshake once, and get a new ticket.
    pub fn session_ticket_key(&self) -> &[u8; SESSION_TICKET_KEY_LEN] {
        &self.current.ticket
    }

    fn find(&self, id: u8) -> Option<&TokenKey> {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|key| key.id == id)
    }

    /// The stateless reset token (RFC 9000, Section 10.3.2) of connection
    /// ID `cid` under the key with id `key_id`: the first
    /// [`RESET_TOKEN_LEN`] bytes of HMAC-SHA256 of the ID, under a key
    /// derived from that key's material. Only the key's holders can compute
    /// it, and they all compute the same, so a restarted server, or another
    /// of a fleet sharing the ring, can reset a connection it never saw.
    /// `None` once the ring no longer holds that key.
    pub fn stateless_reset_token(&self, key_id: u8, cid: &[u8]) -> Option<[u8; RESET_TOKEN_LEN]> {
        let tag = hmac::sign(&self.find(key_id)?.reset, cid);
        tag.as_ref().first_chunk().copied()
    }

    /// Seals `plaintext` with the current key, appending the box to `out`.
    ///
    /// The nonce is the key's next in sequence (see the module docs). Every
    /// seal draws [`NONCE_LEN`] bytes from `rng`, the first of a key to
    /// start the sequence and the others unused, so that a seeded
    /// generator's stream, which also sizes the GREASE extension, is the
    /// same whatever the nonces are.
    pub(crate) fn seal(
        &mut self,
        label: &[u8],
        bound: &[u8],
        plaintext: &[u8],
        rng: &mut dyn Rng,
        out: &mut Vec<u8>,
    ) -> Result<(), MintError> {
        let mut drawn = [0u8; NONCE_LEN];
        rng.fill(&mut drawn).map_err(|_| MintError::Random)?;
        let counter = self.next_nonce.unwrap_or_else(|| nonce_value(&drawn));
        self.next_nonce = Some(counter.wrapping_add(1) & NONCE_MASK);
        let nonce = nonce_bytes(counter);
        let mut aad = [0u8; MAX_AAD];
        let aad = additional_data(&mut aad, label, self.current.id, bound);

        out.push(self.current.id);
        out.extend_from_slice(&nonce);
        let start = out.len();
        out.extend_from_slice(plaintext);
        let in_out = out.get_mut(start..).unwrap_or_default();
        let tag = self
            .current
            .key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad), in_out)
            .map_err(|_| MintError::Seal)?;
        out.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// Opens a sealed box into `buf`, returning the plaintext.
    pub(crate) fn open<'b>(
        &self,
        label: &[u8],
        bound: &[u8],
        sealed: &[u8],
        buf: &'b mut [u8; OPEN_BUF],
    ) -> Result<&'b [u8], OpenError> {
        let bad_length = OpenError::BadLength(sealed.len());
        let (&id, rest) = sealed.split_first().ok_or(bad_length)?;
        let (nonce, ciphertext) = rest.split_first_chunk::<NONCE_LEN>().ok_or(bad_length)?;
        if ciphertext.len() < TAG_LEN {
            return Err(bad_length);
        }
        let in_out = buf.get_mut(..ciphertext.len()).ok_or(bad_length)?;
        in_out.copy_from_slice(ciphertext);

        let key = self.find(id).ok_or(OpenError::UnknownKey(id))?;
        let mut aad = [0u8; MAX_AAD];
        let aad = additional_data(&mut aad, label, id, bound);
        let plaintext = key
            .key
            .open_in_place(Nonce::assume_unique_for_key(*nonce), Aad::from(aad), in_out)
            .map_err(|_| OpenError::Forged)?;
        Ok(plaintext)
    }
}

/// A nonce as a 96-bit number (big-endian).
fn nonce_value(nonce: &[u8; NONCE_LEN]) -> u128 {
    nonce
        .iter()
        .fold(0u128, |value, &byte| (value << 8) | u128::from(byte))
}

/// The nonce of a 96-bit number (big-endian).
fn nonce_bytes(value: u128) -> [u8; NONCE_LEN] {
    let wide = value.to_be_bytes();
    wide.last_chunk().copied().unwrap_or_default()
}

/// Lays out `label || key_id || bound` in `buf`.
///
/// Labels and bound data are crate constants and fixed-width integers whose
/// total stays well under [`MAX_AAD`]; anything longer is truncated, which
/// would only make every open fail rather than read out of bounds.
fn additional_data<'b>(buf: &'b mut [u8; MAX_AAD], label: &[u8], id: u8, bound: &[u8]) -> &'b [u8] {
    let mut len = 0;
    for &byte in label.iter().chain(&[id]).chain(bound) {
        if let Some(slot) = buf.get_mut(len) {
            *slot = byte;
            len += 1;
        }
    }
    buf.get(..len).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimRng;

    const LABEL: &[u8] = b"test";

    fn key(id: u8) -> TokenKey {
        TokenKey::from_bytes(id, &[id; KEY_LEN]).unwrap()
    }

    fn seal(ring: &mut KeyRing, bound: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        ring.seal(LABEL, bound, plaintext, &mut SimRng::new(1), &mut out)
            .unwrap();
        out
    }

    fn open(ring: &KeyRing, bound: &[u8], sealed: &[u8]) -> Result<Vec<u8>, OpenError> {
        let mut buf = [0u8; OPEN_BUF];
        ring.open(LABEL, bound, sealed, &mut buf)
            .map(<[u8]>::to_vec)
    }

    #[test]
    fn a_reset_token_depends_on_the_key_material_and_the_connection_id() {
        let ring = KeyRing::new(key(9));
        let token = ring.stateless_reset_token(9, b"connection one").unwrap();
        // A process that reads the same key again (a restart) agrees.
        let restarted = KeyRing::new(key(9));
        assert_eq!(
            restarted.stateless_reset_token(9, b"connection one"),
            Some(token)
        );
        assert_ne!(
            ring.stateless_reset_token(9, b"connection two"),
            Some(token)
        );
        // Another key, even under the same id, gives another token.
        let other = KeyRing::new(TokenKey::from_bytes(9, &[1; KEY_LEN]).unwrap());
        assert_ne!(
            other.stateless_reset_token(9, b"connection one"),
            Some(token)
        );
        assert_eq!(ring.stateless_reset_token(8, b"connection one"), None);
    }

    #[test]
    fn the_session_ticket_key_is_the_current_keys_own() {
        let mut ring = KeyRing::new(key(9));
        let ticket = *ring.session_ticket_key();
        // Every holder of the key derives it; it is neither the key nor
        // its reset key.
        assert_eq!(KeyRing::new(key(9)).session_ticket_key(), &ticket);
        assert_ne!(ticket[..KEY_LEN], [9; KEY_LEN]);
        let reset = ring.stateless_reset_token(9, b"").unwrap();
        assert!(!ticket.windows(RESET_TOKEN_LEN).any(|w| w == reset));
        // Rotation moves it to the new key's.
        ring.rotate(TokenKey::from_bytes(10, &[1; KEY_LEN]).unwrap())
            .unwrap();
        assert_ne!(ring.session_ticket_key(), &ticket);
    }

    #[test]
    fn reset_tokens_outlive_rotation_as_long_as_the_key_is_kept() {
        let mut ring = KeyRing::new(key(1));
        let token = ring.stateless_reset_token(1, b"cid").unwrap();
        for id in 2..=(MAX_PREVIOUS_KEYS as u8 + 1) {
            ring.rotate(key(id)).unwrap();
            assert_eq!(ring.stateless_reset_token(1, b"cid"), Some(token));
        }
        ring.rotate(key(MAX_PREVIOUS_KEYS as u8 + 2)).unwrap();
        assert_eq!(ring.stateless_reset_token(1, b"cid"), None);
    }

    #[test]
    fn sealed_box_layout_is_id_nonce_ciphertext_tag() {
        let mut ring = KeyRing::new(key(9));
        let sealed = seal(&mut ring, b"", b"hello");
        assert_eq!(sealed.len(), 5 + SEAL_OVERHEAD);
        assert_eq!(sealed[0], 9);
        let mut nonce = [0u8; NONCE_LEN];
        SimRng::new(1).fill(&mut nonce).unwrap();
        assert_eq!(&sealed[1..13], &nonce);
        assert_eq!(open(&ring, b"", &sealed).unwrap(), b"hello");
    }

    /// A random source that repeats itself, as a broken or badly seeded
    /// one would.
    struct Stuck;

    impl Rng for Stuck {
        fn fill(&mut self, dest: &mut [u8]) -> Result<(), crate::RandomError> {
            dest.fill(0xff);
            Ok(())
        }
    }

    fn nonce_of(sealed: &[u8]) -> [u8; NONCE_LEN] {
        *sealed[1..].first_chunk().unwrap()
    }

    #[test]
    fn nonces_follow_in_sequence_and_never_repeat_under_a_key() {
        let mut ring = KeyRing::new(key(1));
        let mut out = Vec::new();
        let mut nonces = Vec::new();
        for _ in 0..3 {
            out.clear();
            ring.seal(LABEL, b"", b"x", &mut Stuck, &mut out).unwrap();
            nonces.push(nonce_of(&out));
            assert_eq!(open(&ring, b"", &out).unwrap(), b"x");
        }
        // From the first draw, one up per seal, wrapping at 96 bits: the
        // random source repeating itself repeats no nonce.
        let mut second = [0u8; NONCE_LEN];
        second[NONCE_LEN - 1] = 1;
        assert_eq!(nonces, [[0xff; NONCE_LEN], [0; NONCE_LEN], second]);

        // A new key starts a sequence of its own from a fresh draw.
        ring.rotate(key(2)).unwrap();
        out.clear();
        ring.seal(LABEL, b"", b"y", &mut SimRng::new(4), &mut out)
            .unwrap();
        let mut drawn = [0u8; NONCE_LEN];
        SimRng::new(4).fill(&mut drawn).unwrap();
        assert_eq!(nonce_of(&out), drawn);
    }

    #[test]
    fn label_and_bound_data_are_authenticated() {
        let mut ring = KeyRing::new(key(1));
        let sealed = seal(&mut ring, b"bound", b"x");
        assert_eq!(open(&ring, b"bound", &sealed).unwrap(), b"x");
        assert_eq!(open(&ring, b"bounD", &sealed), Err(OpenError::Forged));
        let mut buf = [0u8; OPEN_BUF];
        assert_eq!(
            ring.open(b"other", b"bound", &sealed, &mut buf),
            Err(OpenError::Forged)
        );
    }

    #[test]
    fn rotation_keeps_previous_keys_opening_then_retires_them() {
        let mut ring = KeyRing::new(key(1));
        let by_key_1 = seal(&mut ring, b"", b"one");
        ring.rotate(key(2)).unwrap();
        assert_eq!(ring.current_id(), 2);
        assert_eq!(seal(&mut ring, b"", b"two")[0], 2);
        assert_eq!(open(&ring, b"", &by_key_1).unwrap(), b"one");
        for id in 3..=(2 + MAX_PREVIOUS_KEYS as u8 - 1) {
            ring.rotate(key(id)).unwrap();
        }
        assert_eq!(open(&ring, b"", &by_key_1).unwrap(), b"one");
        ring.rotate(key(10)).unwrap();
        assert_eq!(open(&ring, b"", &by_key_1), Err(OpenError::UnknownKey(1)));
    }

    #[test]
    fn rotation_refuses_an_id_still_held() {
        let mut ring = KeyRing::new(key(1));
        ring.rotate(key(2)).unwrap();
        assert_eq!(ring.rotate(key(1)).unwrap_err(), KeyError::DuplicateId(1));
        assert_eq!(ring.current_id(), 2);
    }

    #[test]
    fn key_material_must_be_32_bytes() {
        assert_eq!(
            TokenKey::from_bytes(0, &[0; 31]).unwrap_err(),
            KeyError::Length(31)
        );
        let generated = TokenKey::generate(4, &mut SimRng::new(3)).unwrap();
        assert_eq!(generated.id(), 4);
        assert_eq!(format!("{generated:?}"), "TokenKey { id: 4 }");
    }

    #[test]
    fn short_and_oversized_boxes_are_refused_before_decryption() {
        let ring = KeyRing::new(key(1));
        assert_eq!(open(&ring, b"", &[]), Err(OpenError::BadLength(0)));
        assert_eq!(
            open(&ring, b"", &[1; SEAL_OVERHEAD - 1]),
            Err(OpenError::BadLength(SEAL_OVERHEAD - 1))
        );
        let long = vec![1; SEAL_OVERHEAD + MAX_PLAINTEXT + 1];
        assert_eq!(
            open(&ring, b"", &long),
            Err(OpenError::BadLength(long.len()))
        );
    }
}
