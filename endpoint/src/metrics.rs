//! Server-wide counters of what Careful Resume did: tokens minted, tokens
//! refused and why, jumps made, validated and retreated. One set per
//! [`crate::ResumeServer`], updated with relaxed atomic additions (no lock,
//! no allocation on any path) and read as a [`MetricsSnapshot`].

use std::sync::atomic::{AtomicU64, Ordering};

use ex_token::{InvalidToken, NoResume, OpenError};

use crate::{DropReason, EarlyData, InitialAction};

/// Why a presented token did not resume its connection, as an operator
/// groups it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The saved set or the whole token has expired.
    Expired,
    /// The saved set was measured ahead of this server's clock by more
    /// than [`ex_token::MAX_CLOCK_SKEW`]: some server's clock is wrong.
    ClockSkew,
    /// Sealed with a key this server does not hold (another fleet, or
    /// retired by rotation).
    UnknownKey,
    /// Sealed data failed authentication: altered or forged.
    Tampered,
    /// Not a token of ours at all, or one with an impossible layout.
    Malformed,
    /// The client is on another network than the one the set was saved for.
    WrongNetwork,
    /// The set was measured by another site of the fleet.
    OtherSite,
    /// The capacity was not sealed, so it cannot be trusted.
    Unprotected,
    /// The client asked for a fresh start (Requested Capacity 0).
    ClientOptedOut,
    /// Another connection already used the saved set.
    AlreadyUsed,
    /// A newer saved set exists for the client's network (one set per
    /// Remote Endpoint).
    Superseded,
    /// The set's jump met congestion on an earlier connection: it is dead.
    Revoked,
    /// The guard could not tell in time whether the set was in use.
    GuardUnavailable,
}

impl Refusal {
    /// Every reason, in a fixed order.
    pub const ALL: [Refusal; 13] = [
        Refusal::Expired,
        Refusal::ClockSkew,
        Refusal::UnknownKey,
        Refusal::Tampered,
        Refusal::Malformed,
        Refusal::WrongNetwork,
        Refusal::OtherSite,
        Refusal::Unprotected,
        Refusal::ClientOptedOut,
        Refusal::AlreadyUsed,
        Refusal::Superseded,
        Refusal::Revoked,
        Refusal::GuardUnavailable,
    ];

    /// The reason as a metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Expired => "expired",
            Refusal::ClockSkew => "clock_skew",
            Refusal::UnknownKey => "unknown_key",
            Refusal::Tampered => "tampered",
            Refusal::Malformed => "malformed",
            Refusal::WrongNetwork => "wrong_network",
            Refusal::OtherSite => "other_site",
            Refusal::Unprotected => "unprotected",
            Refusal::ClientOptedOut => "client_opted_out",
            Refusal::AlreadyUsed => "already_used",
            Refusal::Superseded => "superseded",
            Refusal::Revoked => "revoked",
            Refusal::GuardUnavailable => "guard_unavailable",
        }
    }

    /// The group of a reason not to resume; `None` when there was nothing
    /// to refuse (no saved capacity in the token).
    pub fn of(why: &NoResume) -> Option<Refusal> {
        Some(match why {
            NoResume::Absent => return None,
            NoResume::Expired => Refusal::Expired,
            NoResume::ClockSkew => Refusal::ClockSkew,
            NoResume::Unprotected => Refusal::Unprotected,
            NoResume::AddressMismatch => Refusal::WrongNetwork,
            NoResume::OtherSite => Refusal::OtherSite,
            NoResume::Superseded => Refusal::Superseded,
            NoResume::Revoked => Refusal::Revoked,
            NoResume::RequestedZero => Refusal::ClientOptedOut,
            NoResume::AlreadyInUse => Refusal::AlreadyUsed,
            NoResume::GuardUnavailable => Refusal::GuardUnavailable,
            NoResume::Invalid(InvalidToken::Sealing(OpenError::UnknownKey(_))) => {
                Refusal::UnknownKey
            }
            NoResume::Invalid(InvalidToken::Sealing(OpenError::Forged)) => Refusal::Tampered,
            NoResume::Invalid(_) => Refusal::Malformed,
        })
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The live counters (see [`crate::ResumeServer::metrics`]).
#[derive(Debug, Default)]
pub struct ServerMetrics {
    connections: AtomicU64,
    handshakes_incomplete: AtomicU64,
    tokens_presented: AtomicU64,
    addresses_validated: AtomicU64,
    address_tokens_minted: AtomicU64,
    bdp_tokens_minted: AtomicU64,
    refused: [AtomicU64; Refusal::ALL.len()],
    resumes_granted: AtomicU64,
    jumps: AtomicU64,
    jumps_validated: AtomicU64,
    jumps_unused: AtomicU64,
    jumps_limited: AtomicU64,
    retreats: AtomicU64,
    initials_retried: AtomicU64,
    resuming_initials_retried: AtomicU64,
    retry_tokens_validated: AtomicU64,
    initials_dropped: [AtomicU64; DropReason::ALL.len()],
    early_data_accepted: AtomicU64,
    early_data_replayed: AtomicU64,
    early_data_unchecked: AtomicU64,
    early_data_refused_by_tls: AtomicU64,
    address_tokens_replayed: AtomicU64,
}

/// The counters at one moment; every field only ever grows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Connections accepted.
    pub connections: u64,
    /// Connections that ended without completing their handshake: forged
    /// or garbled Initials, clients that gave up, scanners.
    pub handshakes_incomplete: u64,
    /// Connections whose Initial carried a token.
    pub tokens_presented: u64,
    /// Connections whose token validated the client's address.
    pub addresses_validated: u64,
    /// Address validation tokens sent (NEW_TOKEN).
    pub address_tokens_minted: u64,
    /// BDP tokens sent (NEW_TOKEN), siblings included.
    pub bdp_tokens_minted: u64,
    /// Tokens carrying saved capacity that did not resume, by reason, in the
    /// order of [`Refusal::ALL`].
    pub refused: [u64; Refusal::ALL.len()],
    /// Connections that may resume: a valid saved set, granted by the guard.
    pub resumes_granted: u64,
    /// Connections that jumped (entered Unvalidated).
    pub jumps: u64,
    /// Jumps the path validated (Validating ended with the last unvalidated
    /// packet acknowledged).
    pub jumps_validated: u64,
    /// Jumps that went largely unused: Unvalidated ended with less than
    /// half of what the jump opened sent (see
    /// [`careful_resume::CarefulResume::jump_unused`]). Many of them with
    /// large responses mean the server loop does not write to its streams
    /// where the docs say.
    pub jumps_unused: u64,
    /// Jumps lowered to their share of the jump budget (or called off)
    /// because other connections jumped at the same time (see
    /// [`crate::JumpBudget`]). Many of them mean clients resume in crowds.
    pub jumps_limited: u64,
    /// Jumps that met congestion and retreated (Safe Retreat).
    pub retreats: u64,
    /// Initials answered with a Retry ([`crate::ResumeServer::on_initial`]):
    /// clients without a usable token, when the server asks for Retry.
    pub initials_retried: u64,
    /// Of those, Initials whose token carried a saved set the server could
    /// not use (expired, another network, not ours): clients that meant to
    /// resume. Many of them mean tokens outlive their sets on the clients,
    /// or a fleet does not share its key ring.
    pub resuming_initials_retried: u64,
    /// Initials that brought back a valid Retry token of ours: clients that
    /// answered a Retry. Far fewer than `initials_retried` means Retry
    /// packets do not reach clients, or clients do not answer them.
    pub retry_tokens_validated: u64,
    /// Initials dropped, by reason, in the order of [`DropReason::ALL`]
    /// (an Initial carrying a NEW_TOKEN token is never dropped, so no
    /// resuming client is among them).
    pub initials_dropped: [u64; DropReason::ALL.len()],
    /// Connections whose early data (0-RTT) was accepted: a new first
    /// flight, answered before the handshake completed.
    pub early_data_accepted: u64,
    /// First flights with early data seen before: replays (an attacker's,
    /// or a client's own retransmission to another server of the fleet).
    /// Their early data waited for the handshake.
    pub early_data_replayed: u64,
    /// First flights whose early data waited for the handshake because the
    /// guard could not tell whether they were new (full, unreachable).
    pub early_data_unchecked: u64,
    /// First flights whose early data TLS refused: tickets from a key the
    /// server no longer holds, settings changed since the ticket, ticket
    /// ages out of tolerance. Those connections went on in 1-RTT.
    pub early_data_refused_by_tls: u64,
    /// Tokens presented again from the address they validate, within the
    /// time the guard remembers them: they did not validate it again (RFC
    /// 9000, section 8.1.4), and the server kept to three times what it
    /// received until the handshake did.
    pub address_tokens_replayed: u64,
}

impl MetricsSnapshot {
    /// The count of refusals for one reason.
    pub fn refused(&self, reason: Refusal) -> u64 {
        self.refused[reason.index()]
    }

    /// The count of Initials dropped for one reason.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.initials_dropped[reason.index()]
    }
}

impl ServerMetrics {
    /// Reads every counter.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        MetricsSnapshot {
            connections: read(&self.connections),
            handshakes_incomplete: read(&self.handshakes_incomplete),
            tokens_presented: read(&self.tokens_presented),
            addresses_validated: read(&self.addresses_validated),
            address_tokens_minted: read(&self.address_tokens_minted),
            bdp_tokens_minted: read(&self.bdp_tokens_minted),
            refused: std::array::from_fn(|i| read(&self.refused[i])),
            resumes_granted: read(&self.resumes_granted),
            jumps: read(&self.jumps),
            jumps_validated: read(&self.jumps_validated),
            jumps_unused: read(&self.jumps_unused),
            jumps_limited: read(&self.jumps_limited),
            retreats: read(&self.retreats),
            initials_retried: read(&self.initials_retried),
            resuming_initials_retried: read(&self.resuming_initials_retried),
            retry_tokens_validated: read(&self.retry_tokens_validated),
            initials_dropped: std::array::from_fn(|i| read(&self.initials_dropped[i])),
            early_data_accepted: read(&self.early_data_accepted),
            early_data_replayed: read(&self.early_data_replayed),
            early_data_unchecked: read(&self.early_data_unchecked),
            early_data_refused_by_tls: read(&self.early_data_refused_by_tls),
            address_tokens_replayed: read(&self.address_tokens_replayed),
        }
    }

    /// Counts what became of a connection's early data, once known.
    pub(crate) fn on_early_data(&self, early_data: EarlyData) {
        match early_data {
            EarlyData::Accepted => add(&self.early_data_accepted),
            EarlyData::Replayed => add(&self.early_data_replayed),
            EarlyData::GuardUnavailable => add(&self.early_data_unchecked),
            EarlyData::RefusedByTls(_) => add(&self.early_data_refused_by_tls),
            EarlyData::Unknown | EarlyData::Disabled | EarlyData::NotSent | EarlyData::Checking => {
            }
        }
    }

    pub(crate) fn on_address_token_replayed(&self) {
        add(&self.address_tokens_replayed);
    }

    pub(crate) fn on_accept(&self, token_presented: bool) {
        add(&self.connections);
        if token_presented {
            add(&self.tokens_presented);
        }
    }

    pub(crate) fn on_address_validated(&self) {
        add(&self.addresses_validated);
    }

    /// Counts what [`crate::ResumeServer::on_initial`] decided;
    /// `resuming`: the Initial's token carried a saved set.
    pub(crate) fn on_initial(&self, action: &InitialAction, resuming: bool) {
        match action {
            InitialAction::Accept { odcid: Some(_) } => add(&self.retry_tokens_validated),
            InitialAction::Accept { odcid: None } => {}
            InitialAction::Retry { .. } => {
                add(&self.initials_retried);
                if resuming {
                    add(&self.resuming_initials_retried);
                }
            }
            InitialAction::Drop(why) => add(&self.initials_dropped[why.index()]),
        }
    }

    pub(crate) fn on_handshake_incomplete(&self) {
        add(&self.handshakes_incomplete);
    }

    pub(crate) fn on_refusal(&self, why: &NoResume) {
        if let Some(reason) = Refusal::of(why) {
            add(&self.refused[reason.index()]);
        }
    }

    pub(crate) fn on_granted(&self) {
        add(&self.resumes_granted);
    }

    pub(crate) fn on_address_token(&self) {
        add(&self.address_tokens_minted);
    }

    pub(crate) fn on_bdp_token(&self) {
        add(&self.bdp_tokens_minted);
    }

    pub(crate) fn on_jump(&self) {
        add(&self.jumps);
    }

    pub(crate) fn on_jump_validated(&self) {
        add(&self.jumps_validated);
    }

    pub(crate) fn on_jump_unused(&self) {
        add(&self.jumps_unused);
    }

    pub(crate) fn on_jump_limited(&self) {
        add(&self.jumps_limited);
    }

    pub(crate) fn on_retreat(&self) {
        add(&self.retreats);
    }
}

fn add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_counter_and_label() {
        let labels: std::collections::HashSet<_> =
            Refusal::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels.len(), Refusal::ALL.len());
        for (i, reason) in Refusal::ALL.iter().enumerate() {
            assert_eq!(reason.index(), i);
        }
        let metrics = ServerMetrics::default();
        metrics.on_refusal(&NoResume::AlreadyInUse);
        metrics.on_refusal(&NoResume::Absent);
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.refused(Refusal::AlreadyUsed), 1);
        assert_eq!(snapshot.refused.iter().sum::<u64>(), 1);
    }

    /// Each reason the token layer gives lands in the group an operator
    /// reads on the dashboard; a connection without a token is no refusal.
    #[test]
    fn every_token_outcome_is_counted_in_its_group() {
        let cases = [
            (NoResume::Absent, None),
            (NoResume::Expired, Some(Refusal::Expired)),
            (NoResume::ClockSkew, Some(Refusal::ClockSkew)),
            (NoResume::Unprotected, Some(Refusal::Unprotected)),
            (NoResume::AddressMismatch, Some(Refusal::WrongNetwork)),
            (NoResume::OtherSite, Some(Refusal::OtherSite)),
            (NoResume::Superseded, Some(Refusal::Superseded)),
            (NoResume::Revoked, Some(Refusal::Revoked)),
            (NoResume::RequestedZero, Some(Refusal::ClientOptedOut)),
            (NoResume::AlreadyInUse, Some(Refusal::AlreadyUsed)),
            (NoResume::GuardUnavailable, Some(Refusal::GuardUnavailable)),
            (
                NoResume::Invalid(InvalidToken::Sealing(OpenError::UnknownKey(9))),
                Some(Refusal::UnknownKey),
            ),
            (
                NoResume::Invalid(InvalidToken::Sealing(OpenError::Forged)),
                Some(Refusal::Tampered),
            ),
            (
                NoResume::Invalid(InvalidToken::Sealing(OpenError::BadLength(3))),
                Some(Refusal::Malformed),
            ),
            (
                NoResume::Invalid(InvalidToken::ZeroCapacity),
                Some(Refusal::Malformed),
            ),
        ];
        for (why, group) in cases {
            assert_eq!(Refusal::of(&why), group, "{why:?}");
            let metrics = ServerMetrics::default();
            metrics.on_refusal(&why);
            let snapshot = metrics.snapshot();
            for refusal in Refusal::ALL {
                let expected = u64::from(group == Some(refusal));
                assert_eq!(
                    snapshot.refused(refusal),
                    expected,
                    "{why:?} as {refusal:?}"
                );
            }
        }
    }
}
