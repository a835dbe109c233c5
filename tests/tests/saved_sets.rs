//! RFC 9959's rules on saved sets, through the patched quiche and the
//! endpoint: one set per Remote Endpoint (the newest supersedes the older),
//! a retreated set dead whichever token carries it, a lifetime counted from
//! the measurement however often the set is handed on, and no claim before
//! the client has proved its address.

use std::time::Duration;

use cr_endpoint::ex_token::{ExToken, NoResume};
use quiche::careful_resume::Phase;
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{lose_fifth_unvalidated, opaque_client, Download, Harness};

const RTT: Duration = Duration::from_millis(600);
const SIZE: usize = 2 * 1024 * 1024;
/// Less than the initial window: never enough to jump.
const SHORT: usize = 8 * 1024;

/// The BDP tokens the client received, oldest first.
fn bdp_tokens(download: &mut Download) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| download.client.new_token_next())
        .filter(|token| ExToken::decode(token).is_ok_and(|t| t.bdp().is_some()))
        .collect()
}

/// The newest BDP token the client received.
fn newest(download: &mut Download) -> Vec<u8> {
    bdp_tokens(download).pop().expect("a BDP token")
}

#[test]
fn of_two_sets_of_one_network_only_the_newest_resumes() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    // Two connections from one client network, neither with a token.
    let token_a = newest(&mut harness.download(opaque_client(None, 1), SIZE, |_| false));
    harness.wait(Duration::from_secs(1));
    let token_b = newest(&mut harness.download(opaque_client(None, 2), SIZE, |_| false));

    // The client presents both.
    let with_b = harness.download(opaque_client(Some(&token_b), 3), SIZE, |_| false);
    let with_a = harness.download(opaque_client(Some(&token_a), 4), SIZE, |_| false);

    assert_eq!(with_a.server.session.resume, Err(NoResume::Superseded));
    assert!(!with_a.jumped());
    assert!(with_b.server.session.resume.is_ok());
    assert!(with_b.jumped());
    let metrics = harness.metrics();
    assert_eq!(metrics.jumps, 1);
    assert_eq!(metrics.refused(cr_endpoint::Refusal::Superseded), 1);
}

#[test]
fn a_retreated_set_never_jumps_again() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let original = newest(&mut harness.download(opaque_client(None, 1), SIZE, |_| false));

    // The resumed connection's jump meets loss: Safe Retreat, and the set
    // is revoked.
    let retreated = harness.download(
        opaque_client(Some(&original), 2),
        SIZE,
        lose_fifth_unvalidated(),
    );
    let phases = retreated.phases();
    // The window fills (Validating) before the loss shows.
    assert_eq!(
        phases,
        [
            Phase::Unvalidated,
            Phase::Validating,
            Phase::SafeRetreat,
            Phase::Normal
        ]
    );

    // The token that led to the retreat never jumps again: revoked, and
    // superseded by what the retreated connection measured afterwards.
    for id in 3..5 {
        let again = harness.download(opaque_client(Some(&original), id), SIZE, |_| false);
        assert!(!again.jumped(), "connection {id} jumped");
        assert!(
            matches!(
                again.server.session.resume,
                Err(NoResume::Revoked | NoResume::Superseded)
            ),
            "{:?}",
            again.server.session.resume
        );
    }
    assert_eq!(harness.metrics().jumps, 1);
}

#[test]
fn a_retreat_revokes_the_tokens_a_predecessor_handed_on() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let original = newest(&mut harness.download(opaque_client(None, 1), SIZE, |_| false));

    // A short connection measures less and hands the same set on.
    let mut short = harness.download(opaque_client(Some(&original), 2), SHORT, |_| false);
    assert!(!short.jumped());
    harness.close(&mut short.server);
    let handed_on = newest(&mut short);
    assert_ne!(handed_on, original, "a token of its own");

    // The next connection jumps on the handed-on token and meets loss.
    let retreated = harness.download(
        opaque_client(Some(&handed_on), 3),
        SIZE,
        lose_fifth_unvalidated(),
    );
    assert!(retreated.jumped());
    assert!(retreated.phases().contains(&Phase::SafeRetreat));

    // Neither token of the set jumps again, however the client presents it.
    for (id, token) in [(4, &original), (5, &handed_on)] {
        let again = harness.download(opaque_client(Some(token), id), SIZE, |_| false);
        assert!(!again.jumped(), "connection {id} jumped");
        assert!(
            matches!(
                again.server.session.resume,
                Err(NoResume::Revoked | NoResume::Superseded)
            ),
            "connection {id}: {:?}",
            again.server.session.resume
        );
    }
    assert_eq!(harness.metrics().jumps, 1);
}

#[test]
fn a_set_handed_on_every_ten_minutes_expires_an_hour_after_its_measurement() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let mut token = newest(&mut harness.download(opaque_client(None, 1), SIZE, |_| false));
    let capacity = ExToken::decode(&token)
        .unwrap()
        .bdp()
        .unwrap()
        .unwrap()
        .capacity;

    // Every ten minutes a short request, which measures little and hands
    // the set on; its end releases the set for the next.
    for round in 1..=5u8 {
        harness.wait(Duration::from_secs(600));
        let mut short = harness.download(opaque_client(Some(&token), round + 1), SHORT, |_| false);
        assert!(short.server.session.resume.is_ok(), "round {round}");
        assert!(!short.jumped());
        harness.close(&mut short.server);
        token = newest(&mut short);
        let handed_on = ExToken::decode(&token)
            .unwrap()
            .bdp()
            .unwrap()
            .unwrap()
            .capacity;
        assert_eq!(handed_on, capacity, "round {round} hands the set on");
    }

    // An hour after the measurement, the handed-on token has expired.
    harness.wait(Duration::from_secs(600));
    let late = harness.download(opaque_client(Some(&token), 9), SHORT, |_| false);
    assert_eq!(late.server.session.resume, Err(NoResume::Expired));
    // Careful Resume is not used: a start like any first connection's.
    assert!(late.server.conn.careful_resume().is_none());
    assert!(late.trace.phase_changes.is_empty());
}

#[test]
fn a_forged_initial_with_a_copied_token_burns_nothing() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let token = newest(&mut harness.download(opaque_client(None, 1), SIZE, |_| false));

    // Someone who saw the token on the wire sends it from another port, in
    // an Initial that does not even decrypt, and never answers.
    let mut forged = harness.forge_initial(&token);
    assert!(forged.session.resume.is_ok(), "the token itself is valid");
    assert!(!forged.conn.is_established());
    assert!(!forged.session.claim_pending());
    // Its end is counted as a handshake that never completed.
    harness.close(&mut forged);
    assert_eq!(harness.metrics().handshakes_incomplete, 1);

    // The real client's next connection still resumes.
    let real = harness.download(opaque_client(Some(&token), 2), SIZE, |_| false);
    assert!(real.server.session.resume.is_ok());
    assert!(real.jumped());
}
