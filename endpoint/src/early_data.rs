//! 0-RTT on the server: whether a connection's early data may be acted on
//! before its handshake completes, and whether a presented token may
//! validate the client's address. Both are things a server does at most
//! once per first flight or token, across every server sharing its guard
//! ([`ex_token::OnceId`]).
//!
//! A client resuming a TLS session sends its request in its first flight,
//! and the server may answer it at once (0.5-RTT data): the request arrives
//! a round trip sooner than after a full handshake. Anyone who saw that
//! first flight can send it again, and TLS accepts it again while its
//! ticket age looks right (RFC 8446, section 8). So a server acts on a
//! first flight's early data only once the guard has recorded the flight
//! as new; a replay, or a guard that cannot tell, waits for the handshake,
//! which a replayed flight never completes (fail closed). Requests that are
//! not idempotent wait for the handshake in any case (RFC 8470): that is
//! the application's rule, since only it knows its requests.

use std::time::{Duration, SystemTime};

use ex_token::{Claim, ClaimOutcome, OnceId};

/// How long a 0-RTT first flight is remembered: longer than TLS's tolerance
/// for a ticket's age (60 s either way in BoringSSL), beyond which TLS
/// itself refuses the flight's early data.
pub const FIRST_FLIGHT_RECORD: Duration = Duration::from_secs(120);

/// How long a token that validated an address is remembered. RFC 9000
/// (section 8.1.4) asks servers to prevent or limit the replay of tokens:
/// a token replayed from the address it was issued to within this time
/// does not validate it again, and the server sends that address at most
/// three times what it received until the handshake validates it.
pub const ADDRESS_TOKEN_RECORD: Duration = Duration::from_secs(600);

/// BoringSSL's `ssl_early_data_reason_t` values this module tells apart.
mod reason {
    pub const UNKNOWN: u32 = 0;
    pub const DISABLED: u32 = 1;
    pub const ACCEPTED: u32 = 2;
    pub const PEER_DECLINED: u32 = 4;
    pub const NO_SESSION_OFFERED: u32 = 5;
}

/// What became of a connection's early data (0-RTT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EarlyData {
    /// The server has not read the client's first flight yet.
    Unknown,
    /// Early data is off on this server ([`crate::ResumeConfig::early_data`]).
    Disabled,
    /// The client sent none: it held no session ticket, or chose not to.
    NotSent,
    /// TLS refused it, with BoringSSL's reason (`ssl_early_data_reason_t`):
    /// a ticket from a key this server no longer holds, settings that
    /// changed since the ticket was issued, a ticket age out of tolerance.
    /// The connection goes on in 1-RTT.
    RefusedByTls(u32),
    /// TLS accepted it, and the guard has yet to say whether this first
    /// flight is new: act on none of it yet.
    Checking,
    /// Accepted, and this first flight is new: idempotent requests it
    /// carries may be answered before the handshake completes.
    Accepted,
    /// This first flight was acted on before (by this server or another
    /// sharing its guard): a replay. Nothing is acted on before the
    /// handshake completes, which a replay never does.
    Replayed,
    /// The guard could not tell whether the flight is new (full,
    /// unreachable, too slow): treated as a replay.
    GuardUnavailable,
}

impl EarlyData {
    /// What TLS said of the first flight, once the server has read it.
    pub(crate) fn from_tls_reason(code: u32) -> EarlyData {
        match code {
            reason::UNKNOWN => EarlyData::Unknown,
            reason::DISABLED => EarlyData::Disabled,
            reason::ACCEPTED => EarlyData::Checking,
            reason::PEER_DECLINED | reason::NO_SESSION_OFFERED => EarlyData::NotSent,
            other => EarlyData::RefusedByTls(other),
        }
    }

    /// What the guard's answer on a first flight TLS accepted means.
    pub(crate) fn from_guard(outcome: ClaimOutcome) -> EarlyData {
        match outcome {
            ClaimOutcome::Pending => EarlyData::Checking,
            ClaimOutcome::Granted => EarlyData::Accepted,
            ClaimOutcome::Taken => EarlyData::Replayed,
            _ => EarlyData::GuardUnavailable,
        }
    }

    /// Whether the application may act on the early data before the
    /// handshake completes (idempotent requests only).
    pub fn is_accepted(self) -> bool {
        self == EarlyData::Accepted
    }

    /// A short name, for logs and metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            EarlyData::Unknown => "unknown",
            EarlyData::Disabled => "disabled",
            EarlyData::NotSent => "not_sent",
            EarlyData::RefusedByTls(_) => "refused_by_tls",
            EarlyData::Checking => "checking",
            EarlyData::Accepted => "accepted",
            EarlyData::Replayed => "replayed",
            EarlyData::GuardUnavailable => "guard_unavailable",
        }
    }
}

/// A record of something done once, asked of the guard, and its answer.
pub(crate) enum OnceCheck {
    /// Nothing asked.
    NotAsked,
    /// Asked; the guard has yet to answer.
    Pending(Claim),
    /// The guard answered (the caller acted on it).
    Answered,
}

impl OnceCheck {
    /// Records `id` until `now + record` in `guard`; [`OnceCheck::poll`]
    /// takes in the answer.
    pub(crate) fn ask<G: ex_token::TokenGuard + ?Sized>(
        guard: &G,
        id: &OnceId,
        record: Duration,
        now: SystemTime,
    ) -> OnceCheck {
        let until = now.checked_add(record).unwrap_or(now);
        OnceCheck::Pending(guard.start_once(id, until, now))
    }

    /// Takes in the guard's answer if it has come: returns it the first
    /// time only, so that the caller acts on it once.
    pub(crate) fn poll(&mut self) -> Option<ClaimOutcome> {
        match self {
            OnceCheck::NotAsked | OnceCheck::Answered => None,
            OnceCheck::Pending(claim) => match claim.outcome() {
                ClaimOutcome::Pending => None,
                outcome => {
                    *self = OnceCheck::Answered;
                    Some(outcome)
                }
            },
        }
    }

    /// Whether the guard's answer is awaited.
    pub(crate) fn is_pending(&self) -> bool {
        matches!(self, OnceCheck::Pending(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_reasons_read_as_the_client_did_or_tls_refused() {
        assert_eq!(EarlyData::from_tls_reason(0), EarlyData::Unknown);
        assert_eq!(EarlyData::from_tls_reason(2), EarlyData::Checking);
        assert_eq!(EarlyData::from_tls_reason(5), EarlyData::NotSent);
        assert_eq!(EarlyData::from_tls_reason(4), EarlyData::NotSent);
        // Ticket age skew, and changed transport parameters or settings.
        assert_eq!(EarlyData::from_tls_reason(12), EarlyData::RefusedByTls(12));
        assert_eq!(EarlyData::from_tls_reason(13), EarlyData::RefusedByTls(13));
    }

    #[test]
    fn only_a_first_record_accepts() {
        assert_eq!(
            EarlyData::from_guard(ClaimOutcome::Granted),
            EarlyData::Accepted
        );
        assert_eq!(
            EarlyData::from_guard(ClaimOutcome::Taken),
            EarlyData::Replayed
        );
        for outcome in [ClaimOutcome::Unavailable, ClaimOutcome::ClockSkew] {
            assert_eq!(EarlyData::from_guard(outcome), EarlyData::GuardUnavailable);
        }
        assert!(!EarlyData::Checking.is_accepted());
    }
}
