//! What validating a token tells the server.

use std::fmt;
use std::time::Duration;

use crate::{BdpDecodeError, DecodeError, Extras, OpenError, SavedSet};

/// The result of validating a token presented in a client's Initial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validation {
    /// Whether the token proves the client owns its address (RFC 9000,
    /// Section 8.1), lifting the anti-amplification limit.
    pub address: AddressStatus,
    /// The saved path parameters to resume with, or why not to resume.
    pub resume: Result<SavedParameters, NoResume>,
}

/// Outcome of the address validation part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressStatus {
    /// The token was minted for this client address and has not expired.
    Validated,
    /// No token, or a token without an address validation part.
    Absent,
    /// The address validation part has expired.
    Expired,
    /// The token was minted for another address.
    Mismatch,
    /// The address validation part is not ours or was altered.
    Invalid(InvalidToken),
}

impl AddressStatus {
    /// Whether the client's address counts as validated.
    pub fn is_validated(&self) -> bool {
        matches!(self, Self::Validated)
    }
}

/// Saved path parameters recovered from a valid BDP token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedParameters {
    /// The congestion window to resume from, in bytes:
    /// `min(Capacity, Requested Capacity)`.
    pub saved_cwnd: u64,
    /// The saved minimum round-trip time.
    pub saved_rtt: Duration,
    /// Capacity as sealed by the server, in bytes.
    pub capacity: u64,
    /// Requested Capacity as presented by the client, in bytes.
    pub requested_capacity: u64,
    /// The saved set the token carries: what the guard claims, and what a
    /// connection that measures nothing better hands on.
    pub set: SavedSet,
    /// Server extras sealed at minting.
    pub extras: Extras,
}

/// Why a connection must not use Careful Resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoResume {
    /// No token, or a token without a BDP_TOKEN extension.
    Absent,
    /// The BDP_TOKEN extension has no private data: its Capacity and RTT
    /// are informative only and cannot be trusted.
    Unprotected,
    /// The saved parameters have expired.
    Expired,
    /// The set was measured later than now by more than
    /// [`crate::MAX_CLOCK_SKEW`]: the server that minted it has a clock
    /// ahead of this one's (or of the guard's:
    /// [`crate::ClaimOutcome::ClockSkew`]).
    ClockSkew,
    /// The client is outside the network the parameters were saved for.
    AddressMismatch,
    /// The set was measured by another site (see
    /// [`crate::ServerConfig::site`]).
    OtherSite,
    /// The client set Requested Capacity to 0: it asks for a fresh start.
    RequestedZero,
    /// Another connection already resumed from this saved set (with this
    /// token or a sibling).
    AlreadyInUse,
    /// A newer saved set was minted for the client's Remote Endpoint: at
    /// most one set per Remote Endpoint may be used (RFC 9959).
    Superseded,
    /// The set led to a Safe Retreat: it must never be used again.
    Revoked,
    /// The guard could not tell whether the set is in use (unreachable,
    /// too slow, full): the connection does not resume (fail closed).
    GuardUnavailable,
    /// The token or its BDP_TOKEN extension is invalid.
    Invalid(InvalidToken),
}

impl fmt::Display for NoResume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Absent => f.write_str("no saved capacity in the token"),
            Self::Unprotected => f.write_str("saved capacity not sealed by us"),
            Self::Expired => f.write_str("saved capacity expired"),
            Self::ClockSkew => f.write_str("saved capacity measured ahead of this server's clock"),
            Self::AddressMismatch => f.write_str("client is on another network"),
            Self::OtherSite => f.write_str("saved capacity measured by another site"),
            Self::Superseded => f.write_str("a newer saved capacity supersedes it"),
            Self::Revoked => f.write_str("saved capacity revoked after a retreat"),
            Self::RequestedZero => f.write_str("client opted out (requested capacity 0)"),
            Self::AlreadyInUse => f.write_str("saved capacity already used by another connection"),
            Self::GuardUnavailable => {
                f.write_str("the guard could not confirm the saved set is unused")
            }
            Self::Invalid(e) => write!(f, "invalid token ({e})"),
        }
    }
}

/// Why a token, or part of it, is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidToken {
    /// The extensible token structure is malformed.
    Structure(DecodeError),
    /// The BDP_TOKEN extension data is malformed.
    BdpStructure(BdpDecodeError),
    /// A sealed part does not open.
    Sealing(OpenError),
    /// A sealed part opens but its plaintext has the wrong layout (sealed by
    /// an incompatible version of this server).
    Payload,
    /// Capacity is 0, which no server of ours mints.
    ZeroCapacity,
}

impl fmt::Display for InvalidToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Structure(e) => write!(f, "malformed token: {e}"),
            Self::BdpStructure(e) => write!(f, "malformed BDP_TOKEN: {e}"),
            Self::Sealing(e) => write!(f, "sealed data rejected: {e}"),
            Self::Payload => f.write_str("sealed data has an unknown layout"),
            Self::ZeroCapacity => f.write_str("capacity is zero"),
        }
    }
}

impl std::error::Error for InvalidToken {}

/// Under [`crate::Policy::Strict`], an invalid token closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenRejected {
    /// Transport error code to close the connection with.
    pub error_code: u64,
    /// What was wrong with the token.
    pub reason: InvalidToken,
}

impl fmt::Display for TokenRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "token rejected ({:#x}): {}",
            self.error_code, self.reason
        )
    }
}

impl std::error::Error for TokenRejected {}
