//! The client side: adjusting a token from a server that announced
//! `ex_token` before echoing it.
//!
//! Reading Capacity and RTT needs nothing beyond [`ExToken::decode`] and
//! [`ExToken::bdp`]; this module adds lowering Requested Capacity in place.

use std::fmt;

use octets::OctetsMut;

use crate::{BdpDecodeError, BdpToken, DecodeError, ExToken};

/// Why a token's Requested Capacity could not be lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LowerError {
    /// The token is not a well-formed extensible token.
    Malformed(DecodeError),
    /// The token has no BDP_TOKEN extension.
    NoBdpToken,
    /// The BDP_TOKEN extension is malformed.
    MalformedBdp(BdpDecodeError),
}

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(e) => write!(f, "malformed token: {e}"),
            Self::NoBdpToken => f.write_str("no BDP_TOKEN extension"),
            Self::MalformedBdp(e) => write!(f, "malformed BDP_TOKEN: {e}"),
        }
    }
}

impl std::error::Error for LowerError {}

/// Lowers the Requested Capacity of `token` to `requested` bytes, never
/// raising it; 0 asks the server not to resume.
///
/// The token keeps its length: the new value is written with the varint
/// width of the old one, so the edit is in place. Returns the Requested
/// Capacity now in the token.
///
/// ```
/// # use ex_token::{ExToken, ExTokenBuilder, BdpToken, lower_requested_capacity};
/// # let mut b = ExTokenBuilder::new(b"")?;
/// # b.bdp(&BdpToken { private_data: b"x", capacity: 90_000, rtt_us: 1, requested_capacity: 90_000 })?;
/// # let mut token = b.finish()?;
/// assert_eq!(lower_requested_capacity(&mut token, 30_000)?, 30_000);
/// assert_eq!(lower_requested_capacity(&mut token, 50_000)?, 30_000);
/// let bdp = ExToken::decode(&token)?.bdp().unwrap()?;
/// assert_eq!((bdp.capacity, bdp.requested_capacity), (90_000, 30_000));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn lower_requested_capacity(token: &mut [u8], requested: u64) -> Result<u64, LowerError> {
    let decoded = ExToken::decode(token).map_err(LowerError::Malformed)?;
    let bdp = decoded
        .bdp()
        .ok_or(LowerError::NoBdpToken)?
        .map_err(LowerError::MalformedBdp)?;
    let lowered = bdp.requested_capacity.min(requested);
    let data_offset = decoded.bdp_offset().ok_or(LowerError::NoBdpToken)?;
    let data = token.get(data_offset..).unwrap_or_default();
    let (field_offset, width) = BdpToken::requested_capacity_field(data)
        .ok_or(LowerError::MalformedBdp(BdpDecodeError::Truncated))?;
    let field = token
        .get_mut(data_offset + field_offset..)
        .ok_or(LowerError::MalformedBdp(BdpDecodeError::Truncated))?;
    // `lowered` is at most the old value, so it fits the old width.
    OctetsMut::with_slice(field)
        .put_varint_with_len(lowered, width)
        .map_err(|_| LowerError::MalformedBdp(BdpDecodeError::Truncated))?;
    Ok(lowered)
}
