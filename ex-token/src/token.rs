//! The extensible token container: decoding (zero-copy) and encoding.

use std::fmt;

use octets::Octets;

use crate::bdp::BdpToken;
use crate::{varint, BdpDecodeError, ExtensionId, Rng};

/// Largest token, in bytes, this crate decodes or produces.
///
/// A client echoes the token in its first Initial packet, which must also
/// carry the TLS ClientHello within a datagram of typically 1200 bytes;
/// a bound keeps tokens from crowding it out and bounds decoding work.
pub const MAX_TOKEN_LEN: usize = 512;

/// Largest number of extensions in one token.
///
/// Bounds the duplicate-identifier check (quadratic in the count) and keeps
/// decoding allocation-free.
pub const MAX_EXTENSIONS: usize = 16;

/// Longest data attached to a GREASE extension by [`ExTokenBuilder::grease`].
const MAX_GREASE_DATA: usize = 4;

/// Why a byte string is not a well-formed extensible token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The token is longer than [`MAX_TOKEN_LEN`].
    TooLong(usize),
    /// A varint or a length-prefixed field runs past the end of the token.
    Truncated,
    /// An extension identifier appears more than once.
    DuplicateExtension(ExtensionId),
    /// The token holds more than [`MAX_EXTENSIONS`] extensions.
    TooManyExtensions,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong(len) => write!(f, "token of {len} bytes exceeds {MAX_TOKEN_LEN}"),
            Self::Truncated => f.write_str("token truncated"),
            Self::DuplicateExtension(id) => write!(f, "extension {id} appears twice"),
            Self::TooManyExtensions => write!(f, "more than {MAX_EXTENSIONS} extensions"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a token could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The encoded token would exceed [`MAX_TOKEN_LEN`].
    TooLong(usize),
    /// A numeric field exceeds 2^62 - 1 and has no varint encoding.
    ValueTooLarge(u64),
    /// The extension identifier is already present in the token.
    DuplicateExtension(ExtensionId),
    /// Adding the extension would exceed [`MAX_EXTENSIONS`].
    TooManyExtensions,
    /// The random source failed while choosing GREASE.
    Random,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong(len) => write!(f, "token of {len} bytes exceeds {MAX_TOKEN_LEN}"),
            Self::ValueTooLarge(v) => write!(f, "{v} does not fit in a varint"),
            Self::DuplicateExtension(id) => write!(f, "extension {id} added twice"),
            Self::TooManyExtensions => write!(f, "more than {MAX_EXTENSIONS} extensions"),
            Self::Random => f.write_str("random source failed"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// One extension of a token, borrowed from the token's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extension<'a> {
    /// The extension identifier.
    pub id: ExtensionId,
    /// The extension data, exactly as it appeared on the wire.
    pub data: &'a [u8],
}

/// A decoded extensible token: a view into the original bytes.
///
/// Decoding checks the whole structure up front, so the accessors cannot
/// fail; nothing is copied and nothing is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExToken<'a> {
    address_validation: &'a [u8],
    extensions: &'a [u8],
    /// Offset of the BDP_TOKEN data within the token, and the data.
    bdp: Option<(usize, &'a [u8])>,
}

impl<'a> ExToken<'a> {
    /// Decodes and checks a token without copying it: the size limit,
    /// every length, and that no extension identifier repeats. The BDP_TOKEN
    /// data is only located here; [`ExToken::bdp`] parses it.
    pub fn decode(token: &'a [u8]) -> Result<Self, DecodeError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(DecodeError::TooLong(token.len()));
        }
        let mut r = Octets::with_slice(token);
        let address_validation = r
            .get_bytes_with_varint_length()
            .map_err(|_| DecodeError::Truncated)?
            .buf();
        let extensions = token.get(r.off()..).ok_or(DecodeError::Truncated)?;

        // Identifiers seen so far; only the first `count` slots are filled.
        let mut seen = [ExtensionId::BDP_TOKEN; MAX_EXTENSIONS];
        let mut count = 0;
        let mut bdp = None;
        while r.cap() > 0 {
            let (id, data) = read_extension(&mut r).ok_or(DecodeError::Truncated)?;
            let previous = seen.get(..count).unwrap_or_default();
            if previous.contains(&id) {
                return Err(DecodeError::DuplicateExtension(id));
            }
            *seen.get_mut(count).ok_or(DecodeError::TooManyExtensions)? = id;
            count += 1;
            if id == ExtensionId::BDP_TOKEN {
                bdp = Some((r.off().saturating_sub(data.len()), data));
            }
        }
        Ok(Self {
            address_validation,
            extensions,
            bdp,
        })
    }

    /// The server-private address validation part; empty when the token
    /// serves only to carry extensions.
    pub fn address_validation(&self) -> &'a [u8] {
        self.address_validation
    }

    /// The extensions, in wire order.
    pub fn extensions(&self) -> Extensions<'a> {
        Extensions {
            rest: self.extensions,
        }
    }

    /// The data of extension `id`, if present.
    pub fn extension(&self, id: ExtensionId) -> Option<&'a [u8]> {
        self.extensions().find(|e| e.id == id).map(|e| e.data)
    }

    /// The BDP_TOKEN extension: `None` if absent, an error if malformed.
    pub fn bdp(&self) -> Option<Result<BdpToken<'a>, BdpDecodeError>> {
        self.bdp.map(|(_, data)| BdpToken::decode(data))
    }

    /// Offset of the BDP_TOKEN extension data within the decoded bytes.
    pub(crate) fn bdp_offset(&self) -> Option<usize> {
        self.bdp.map(|(offset, _)| offset)
    }

    /// Re-encodes the token with shortest varints.
    ///
    /// Extension data (including unknown extensions) is carried over
    /// byte-exact. The result never exceeds the decoded input in length.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_TOKEN_LEN);
        // Every value came from a varint and every length from a token of at
        // most MAX_TOKEN_LEN bytes, so none of these writes can fail.
        let _ = varint::put_bytes(&mut out, self.address_validation);
        for e in self.extensions() {
            let _ = varint::put(&mut out, e.id.value());
            let _ = varint::put_bytes(&mut out, e.data);
        }
        out
    }
}

/// Reads one extension; `None` if the bytes run out.
fn read_extension<'a>(r: &mut Octets<'a>) -> Option<(ExtensionId, &'a [u8])> {
    let id = ExtensionId::new(r.get_varint().ok()?)?;
    let data = r.get_bytes_with_varint_length().ok()?.buf();
    Some((id, data))
}

/// Iterator over the extensions of an [`ExToken`].
#[derive(Clone, Debug)]
pub struct Extensions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Extensions<'a> {
    type Item = Extension<'a>;

    fn next(&mut self) -> Option<Extension<'a>> {
        let mut r = Octets::with_slice(self.rest);
        let (id, data) = read_extension(&mut r)?;
        self.rest = self.rest.get(r.off()..)?;
        Some(Extension { id, data })
    }
}

/// Builds an extensible token.
///
/// ```
/// use ex_token::{ExToken, ExTokenBuilder, ExtensionId};
///
/// let site = ExtensionId::private_use(0).unwrap();
/// let mut builder = ExTokenBuilder::new(b"opaque")?;
/// builder.extension(site, &[7])?;
/// let bytes = builder.finish()?;
/// assert_eq!(bytes, [6, b'o', b'p', b'a', b'q', b'u', b'e', 26, 1, 7]);
/// assert_eq!(ExToken::decode(&bytes)?.extension(site), Some(&[7][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ExTokenBuilder {
    out: Vec<u8>,
    ids: Vec<ExtensionId>,
}

impl ExTokenBuilder {
    /// Starts a token with the given address validation part (may be empty).
    pub fn new(address_validation: &[u8]) -> Result<Self, EncodeError> {
        if address_validation.len() >= MAX_TOKEN_LEN {
            return Err(EncodeError::TooLong(address_validation.len() + 1));
        }
        let mut out = Vec::with_capacity(MAX_TOKEN_LEN);
        varint::put_bytes(&mut out, address_validation)?;
        Ok(Self {
            out,
            ids: Vec::new(),
        })
    }

    /// Appends an extension, refusing an identifier already present.
    pub fn extension(&mut self, id: ExtensionId, data: &[u8]) -> Result<&mut Self, EncodeError> {
        if self.ids.contains(&id) {
            return Err(EncodeError::DuplicateExtension(id));
        }
        if self.ids.len() == MAX_EXTENSIONS {
            return Err(EncodeError::TooManyExtensions);
        }
        varint::put(&mut self.out, id.value())?;
        varint::put_bytes(&mut self.out, data)?;
        self.ids.push(id);
        Ok(self)
    }

    /// Appends a BDP_TOKEN extension.
    pub fn bdp(&mut self, bdp: &BdpToken<'_>) -> Result<&mut Self, EncodeError> {
        let mut data = Vec::with_capacity(bdp.private_data.len() + 24);
        bdp.encode(&mut data)?;
        self.extension(ExtensionId::BDP_TOKEN, &data)
    }

    /// Appends an extension with a random reserved identifier (31N+27) and
    /// up to four random data bytes, so that clients learn to skip unknown
    /// extensions.
    pub fn grease(&mut self, rng: &mut dyn Rng) -> Result<&mut Self, EncodeError> {
        let mut random = [0u8; 3 + MAX_GREASE_DATA];
        rng.fill(&mut random).map_err(|_| EncodeError::Random)?;
        let [a, b, c, data @ ..] = random;
        // 31 * 527 + 27 < 2^14: the identifier takes at most two bytes.
        let n = u64::from(u16::from_be_bytes([a, b]) % 528);
        let id = ExtensionId::reserved(n).ok_or(EncodeError::ValueTooLarge(n))?;
        if self.ids.contains(&id) {
            return Ok(self);
        }
        let len = usize::from(c) % (MAX_GREASE_DATA + 1);
        self.extension(id, data.get(..len).unwrap_or_default())
    }

    /// Finishes the token, enforcing [`MAX_TOKEN_LEN`].
    pub fn finish(self) -> Result<Vec<u8>, EncodeError> {
        if self.out.len() > MAX_TOKEN_LEN {
            return Err(EncodeError::TooLong(self.out.len()));
        }
        Ok(self.out)
    }
}
