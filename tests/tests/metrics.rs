//! What an operator reads: the server's counters and each connection's
//! Careful Resume story, after a scripted set of connections in virtual
//! time (no token, a valid one, a replay, a tampered one, a retreat on a
//! path that drops the jump, an expired one).

use std::time::Duration;

use cr_endpoint::careful_resume::{Phase, Trigger};
use cr_endpoint::ex_token::{ExToken, NoResume};
use cr_endpoint::{MetricsSnapshot, Refusal};
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{opaque_client, tamper_saved_set, Download, Harness};

const RTT: Duration = Duration::from_millis(600);
const SIZE: usize = 2 * 1024 * 1024;

/// The distinct tokens a download left with the client: (address-only,
/// BDP capacities), and the newest token. A NEW_TOKEN frame declared lost
/// but delivered after all is sent again: the client then holds the same
/// token twice.
fn tokens(download: &mut Download) -> (u64, Vec<u64>, Vec<u8>) {
    let (mut address, mut capacities, mut newest) = (0, Vec::new(), Vec::new());
    let mut seen = std::collections::HashSet::new();
    while let Some(token) = download.client.new_token_next() {
        if !seen.insert(token.clone()) {
            continue;
        }
        match ExToken::decode(&token).ok().and_then(|t| t.bdp()) {
            Some(Ok(bdp)) => capacities.push(bdp.capacity),
            _ => address += 1,
        }
        newest = token;
    }
    (address, capacities, newest)
}

#[test]
fn the_counters_tell_what_each_connection_did() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let (mut address_minted, mut bdp_minted) = (0, 0);
    let mut count = |(address, capacities, newest): (u64, Vec<u64>, Vec<u8>)| {
        address_minted += address;
        bdp_minted += capacities.len() as u64;
        (capacities, newest)
    };

    // 1. No token.
    let mut first = harness.download(opaque_client(None, 1), SIZE, |_| false);
    let (_, token) = count(tokens(&mut first));
    assert_eq!(first.server.stats().not_resumed, Some(NoResume::Absent));

    // 2. A valid token: resumes, jumps, the jump is validated.
    let mut resumed = harness.download(opaque_client(Some(&token), 2), SIZE, |_| false);
    let (capacities, fresh) = count(tokens(&mut resumed));
    let stats = resumed.server.stats();
    assert!(stats.token_presented && stats.address_validated);
    assert_eq!(stats.not_resumed, None);
    let presented = stats.presented.expect("a valid saved set");
    let phases: Vec<Phase> = stats.phases.iter().map(|&(p, _)| p).collect();
    assert_eq!(
        phases,
        [Phase::Unvalidated, Phase::Validating, Phase::Normal]
    );
    assert_eq!(
        stats.phases.last(),
        Some(&(Phase::Normal, Trigger::LastUnvalidatedPacketAcknowledged))
    );
    assert_eq!(stats.jump_window, Some(presented.saved_cwnd as usize / 2));
    assert!(!stats.jump_unused);
    assert_eq!(stats.saved_for_next, capacities.last().copied());
    assert_eq!(stats.bdp_tokens_sent as usize, capacities.len());

    // 3. The same token again: connection 2's own measurement superseded
    // the set, and a token validates its address once (RFC 9000, section
    // 8.1.4).
    let mut replayed = harness.download(opaque_client(Some(&token), 3), SIZE, |_| false);
    count(tokens(&mut replayed));
    assert_eq!(
        replayed.server.stats().not_resumed,
        Some(NoResume::Superseded)
    );
    assert!(!replayed.server.stats().address_validated);

    // 4. A tampered token.
    let mut forged = harness.download(
        opaque_client(Some(&tamper_saved_set(&fresh)), 4),
        SIZE,
        |_| false,
    );
    let (_, unused) = count(tokens(&mut forged));
    assert!(forged.server.stats().presented.is_none());

    // 5. A path that drops packets sent while unvalidated: Safe Retreat.
    let mut sent = 0u32;
    // Connection 4's set is the network's newest.
    let mut retreated = harness.download(opaque_client(Some(&unused), 5), SIZE, |conn| {
        let unvalidated = conn
            .careful_resume()
            .is_some_and(|r| r.phase() == Phase::Unvalidated);
        sent += u32::from(unvalidated);
        unvalidated && sent.is_multiple_of(4)
    });
    count(tokens(&mut retreated));
    let stats = retreated.server.stats();
    assert!(
        stats.phases.iter().any(|&(p, _)| p == Phase::SafeRetreat),
        "{:?}",
        stats.phases
    );

    // 6. Two hours later, a token of connection 4 has expired.
    harness.wait(Duration::from_secs(2 * 3600));
    let mut late = harness.download(opaque_client(Some(&unused), 6), SIZE, |_| false);
    count(tokens(&mut late));
    assert_eq!(late.server.stats().not_resumed, Some(NoResume::Expired));

    let mut refused = [0; Refusal::ALL.len()];
    for (reason, n) in [
        (Refusal::Superseded, 1),
        (Refusal::Tampered, 1),
        (Refusal::Expired, 1),
    ] {
        refused[Refusal::ALL.iter().position(|&r| r == reason).unwrap()] = n;
    }
    assert!(
        address_minted <= 2 * 6,
        "{address_minted} address tokens held"
    );
    assert_eq!(
        harness.metrics(),
        MetricsSnapshot {
            connections: 6,
            handshakes_incomplete: 0,
            tokens_presented: 5,
            // Every presented token carried a valid address part (the
            // tampered one too: only its saved set was altered) but the
            // expired one: a BDP token's address part expires with its set.
            // The token presented twice validated once.
            addresses_validated: 3,
            // Two per connection: with the handshake and once the session
            // ticket is out (the client keeps only its newest 8 tokens, so
            // it may have let the oldest go).
            address_tokens_minted: 2 * 6,
            bdp_tokens_minted: bdp_minted,
            refused,
            resumes_granted: 2,
            jumps: 2,
            jumps_validated: 1,
            jumps_unused: 0,
            jumps_limited: 0,
            retreats: 1,
            // The harness accepts every Initial itself: no Retry, no drop.
            initials_retried: 0,
            resuming_initials_retried: 0,
            retry_tokens_validated: 0,
            initials_dropped: [0; cr_endpoint::DropReason::ALL.len()],
            // These clients keep no TLS session: no early data.
            early_data_accepted: 0,
            early_data_replayed: 0,
            early_data_unchecked: 0,
            early_data_refused_by_tls: 0,
            address_tokens_replayed: 1,
        }
    );
}

#[test]
fn a_jump_the_response_could_not_fill_is_reported_unused() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let (_, _, token) = tokens(&mut harness.download(opaque_client(None, 1), SIZE, |_| false));

    // 64 KiB after the initial window: far less than half of the jump.
    let small = harness.download(opaque_client(Some(&token), 2), 64 * 1024, |_| false);
    let stats = small.server.stats();
    assert!(stats.jump_window.is_some_and(|w| w > 4 * 64 * 1024));
    assert!(stats.jump_unused, "{:?}", stats.phases);
    let metrics = harness.metrics();
    assert_eq!((metrics.jumps, metrics.jumps_unused), (1, 1));
}
