//! The largest token a server mints still opens, and a guard shared
//! through an `Arc` (as every server shares its one guard between
//! connections) keeps the same rules as the guard itself.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ex_token::{
    AddressPrefixes, ClaimOutcome, KeyRing, MemoryGuard, RemoteEndpoint, SavedPath, SavedSet,
    ServerConfig, SetId, SimRng, SiteId, TokenGuard, TokenKey, TokenServer, MAX_EXTRAS,
};

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

#[test]
fn the_largest_bdp_token_an_ipv6_client_gets_validates_with_its_extras() {
    let keys = KeyRing::new(TokenKey::from_bytes(1, &[7; 32]).unwrap());
    let mut server = TokenServer::new(keys, SimRng::new(3), ServerConfig::default());
    let client = "[2001:db8::10]:4433".parse().unwrap();
    let now = at(1_700_000_000);
    // The longest private data: an IPv6 address and the most extras.
    let extras = [0x5a; MAX_EXTRAS];
    let saved = SavedPath {
        capacity: 4_000_000,
        rtt: Duration::from_micros(612_345),
        extras: &extras,
    };
    let set = server.new_saved_set(client, now).unwrap();
    let token = server.mint_bdp_token(client, &saved, &set).unwrap();

    let guard = MemoryGuard::new(4);
    let validation = server
        .validate(&token, client, now + Duration::from_secs(60), &guard)
        .unwrap();
    let resume = validation.resume.expect("resumes");
    assert_eq!(resume.saved_cwnd, 4_000_000);
    assert_eq!(resume.saved_rtt, Duration::from_micros(612_345));
    assert_eq!(resume.extras.as_bytes(), &extras[..]);
    assert_eq!(resume.set, set);
}

/// Set `id` of client network 192.0.`net`.0/24, measured at `measured`
/// seconds, living 100 s.
fn set(net: u8, id: u64, measured: u64) -> SavedSet {
    SavedSet {
        id: SetId(id),
        endpoint: RemoteEndpoint::new(
            SiteId(0),
            [192, 0, net, 1].into(),
            AddressPrefixes::SAME_NETWORK,
        ),
        measured_at: at(measured),
        expiry: at(measured + 100),
    }
}

#[test]
fn a_guard_shared_through_an_arc_records_releases_and_revokes() {
    let guard = Arc::new(MemoryGuard::new(4));
    assert!(guard.is_empty());
    let shared: &dyn TokenGuard = &guard;

    // A record through the Arc supersedes the older set.
    let (older, newer) = (set(2, 1, 10), set(2, 2, 20));
    shared.record(&older, at(10));
    assert!(!guard.is_empty());
    assert_eq!(guard.len(), 1);
    shared.record(&newer, at(20));
    assert_eq!(shared.claim(&older, at(30)), ClaimOutcome::Superseded);

    // A release through the Arc frees the set for the next connection.
    assert_eq!(shared.claim(&newer, at(30)), ClaimOutcome::Granted);
    assert_eq!(shared.claim(&newer, at(31)), ClaimOutcome::Taken);
    shared.release(&newer, at(32));
    assert_eq!(shared.claim(&newer, at(33)), ClaimOutcome::Granted);

    // A revocation through the Arc is final.
    shared.revoke(&newer, at(34));
    shared.release(&newer, at(35));
    assert_eq!(shared.claim(&newer, at(36)), ClaimOutcome::Revoked);
    assert_eq!(
        shared.start_claim(&newer, at(37)).outcome(),
        ClaimOutcome::Revoked
    );
}
