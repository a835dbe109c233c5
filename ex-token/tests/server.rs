//! Minting and validation: round trips, every reason not to resume,
//! tampering, rotation, expiry and address matching.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ex_token::{
    lower_requested_capacity, AddressPrefixes, AddressStatus, BdpDecodeError, BdpToken,
    DecodeError, EncodeError, ErrorCodes, ExToken, ExTokenBuilder, InvalidToken, KeyRing,
    MemoryGuard, MintError, NoResume, OpenError, Policy, SavedPath, ServerConfig, SimRng, TokenKey,
    TokenRejected, TokenServer, BDP_TOKEN_ERROR, EX_TOKEN_ERROR, MAX_CLOCK_SKEW,
};

const T0: u64 = 1_700_000_000;
const LIFETIME: Duration = Duration::from_secs(3600);
const CAPACITY: u64 = 1_250_000;
const RTT: Duration = Duration::from_micros(600_123);

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn key(id: u8) -> TokenKey {
    TokenKey::from_bytes(id, &[id.wrapping_mul(17); 32]).unwrap()
}

fn server_with(config: ServerConfig) -> TokenServer<SimRng> {
    TokenServer::new(KeyRing::new(key(1)), SimRng::new(99), config)
}

fn server() -> TokenServer<SimRng> {
    server_with(ServerConfig::default())
}

fn saved() -> SavedPath<'static> {
    SavedPath {
        capacity: CAPACITY,
        rtt: RTT,
        extras: b"cubic",
    }
}

fn mint(server: &mut TokenServer<SimRng>, client: &str) -> Vec<u8> {
    server
        .new_saved_set(addr(client), at(T0))
        .and_then(|set| server.mint_bdp_token(addr(client), &saved(), &set))
        .unwrap()
}

#[test]
fn bdp_token_round_trip() {
    let mut server = server();
    let token = mint(&mut server, "192.0.2.1:4433");
    let guard = MemoryGuard::new(8);
    let v = server
        .validate(&token, addr("192.0.2.1:5555"), at(T0 + 10), &guard)
        .unwrap();
    assert_eq!(v.address, AddressStatus::Validated);
    let p = v.resume.unwrap();
    assert_eq!(p.saved_cwnd, CAPACITY);
    assert_eq!(p.capacity, CAPACITY);
    assert_eq!(p.requested_capacity, CAPACITY);
    assert_eq!(p.saved_rtt, RTT);
    assert_eq!(p.set.expiry, at(T0 + 3600));
    assert_eq!(p.set.measured_at, at(T0));
    assert_eq!(p.extras.as_bytes(), b"cubic");
    assert_eq!(guard.len(), 1);

    // The client sees Capacity and RTT in the clear.
    let bdp = ExToken::decode(&token).unwrap().bdp().unwrap().unwrap();
    assert_eq!((bdp.capacity, bdp.rtt_us), (CAPACITY, 600_123));
}

#[test]
fn address_token_validates_address_only() {
    let mut server = server();
    let token = server
        .mint_address_token(addr("[2001:db8::7]:443"), at(T0), LIFETIME)
        .unwrap();
    let v = server
        .validate(
            &token,
            addr("[2001:db8::7]:1"),
            at(T0),
            &MemoryGuard::new(1),
        )
        .unwrap();
    assert_eq!(v.address, AddressStatus::Validated);
    assert_eq!(v.resume, Err(NoResume::Absent));
}

#[test]
fn grease_is_on_by_default_and_transparent() {
    let mut greasy = server();
    let token = mint(&mut greasy, "192.0.2.1:1");
    let decoded = ExToken::decode(&token).unwrap();
    assert!(decoded.extensions().any(|e| e.id.is_reserved()));

    let mut plain = server_with(ServerConfig {
        grease: false,
        ..ServerConfig::default()
    });
    let token = mint(&mut plain, "192.0.2.1:1");
    let decoded = ExToken::decode(&token).unwrap();
    assert_eq!(decoded.extensions().count(), 1);
}

#[test]
fn minting_is_deterministic_with_a_seeded_rng() {
    assert_eq!(
        mint(&mut server(), "192.0.2.1:1"),
        mint(&mut server(), "192.0.2.1:1")
    );
}

#[test]
fn absent_and_empty_tokens() {
    let server = server();
    let v = server
        .validate(&[], addr("192.0.2.1:1"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    assert_eq!(v.address, AddressStatus::Absent);
    assert_eq!(v.resume, Err(NoResume::Absent));
}

#[test]
fn lowering_requested_capacity_is_honoured() {
    let mut server = server();
    let mut token = mint(&mut server, "192.0.2.1:1");
    let len = token.len();
    assert_eq!(
        lower_requested_capacity(&mut token, 100_000).unwrap(),
        100_000
    );
    assert_eq!(token.len(), len);
    let v = server
        .validate(&token, addr("192.0.2.1:2"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    assert_eq!(v.address, AddressStatus::Validated);
    let p = v.resume.unwrap();
    assert_eq!(
        (p.saved_cwnd, p.capacity, p.requested_capacity),
        (100_000, CAPACITY, 100_000)
    );
}

#[test]
fn requested_capacity_zero_opts_out_without_claiming() {
    let mut server = server();
    let original = mint(&mut server, "192.0.2.1:1");
    let mut token = original.clone();
    assert_eq!(lower_requested_capacity(&mut token, 0).unwrap(), 0);
    let guard = MemoryGuard::new(1);
    let v = server
        .validate(&token, addr("192.0.2.1:2"), at(T0), &guard)
        .unwrap();
    assert_eq!(v.resume, Err(NoResume::RequestedZero));
    assert!(v.address.is_validated());
    assert!(guard.is_empty());
}

#[test]
fn raising_requested_capacity_never_raises_saved_cwnd() {
    let mut server = server_with(ServerConfig {
        grease: false,
        ..ServerConfig::default()
    });
    let token = mint(&mut server, "192.0.2.1:1");
    let decoded = ExToken::decode(&token).unwrap();
    let bdp = decoded.bdp().unwrap().unwrap();
    let mut b = ExTokenBuilder::new(decoded.address_validation()).unwrap();
    b.bdp(&BdpToken {
        requested_capacity: CAPACITY * 1000,
        ..bdp
    })
    .unwrap();
    let raised = b.finish().unwrap();
    let p = server
        .validate(&raised, addr("192.0.2.1:2"), at(T0), &MemoryGuard::new(1))
        .unwrap()
        .resume
        .unwrap();
    assert_eq!(p.saved_cwnd, CAPACITY);
    assert_eq!(p.requested_capacity, CAPACITY * 1000);

    // Nor can the client raise Capacity itself: it is authenticated.
    let mut b = ExTokenBuilder::new(decoded.address_validation()).unwrap();
    b.bdp(&BdpToken {
        capacity: CAPACITY + 1,
        ..bdp
    })
    .unwrap();
    let forged = b.finish().unwrap();
    let v = server
        .validate(&forged, addr("192.0.2.1:2"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    assert_eq!(
        v.resume,
        Err(NoResume::Invalid(InvalidToken::Sealing(OpenError::Forged)))
    );
}

#[test]
fn every_single_bit_flip_is_rejected_or_only_lowers() {
    let mut server = server_with(ServerConfig {
        grease: false,
        ..ServerConfig::default()
    });
    let client = "192.0.2.1:1";
    let token = mint(&mut server, client);
    let av_len = ExToken::decode(&token).unwrap().address_validation().len();
    assert_eq!(usize::from(token[0]), av_len);
    let address_box = 1..1 + av_len;
    // Requested Capacity is the last field: a four-byte varint here.
    let requested = token.len() - 4..token.len();

    let mut resumed_after_requested_flip = 0;
    for bit in 0..token.len() * 8 {
        let byte = bit / 8;
        let mut flipped = token.clone();
        flipped[byte] ^= 1 << (bit % 8);
        let v = server
            .validate(&flipped, addr(client), at(T0), &MemoryGuard::new(1))
            .unwrap();
        if byte < address_box.end {
            assert!(!v.address.is_validated(), "bit {bit}");
        }
        // The two parts are sealed independently: a damaged address box
        // does not affect the BDP part.
        if !address_box.contains(&byte) && !requested.contains(&byte) {
            assert!(v.resume.is_err(), "bit {bit}");
        }
        if let Ok(p) = v.resume {
            assert!(p.saved_cwnd <= CAPACITY, "bit {bit}");
            assert_eq!((p.capacity, p.saved_rtt), (CAPACITY, RTT));
            if requested.contains(&byte) {
                resumed_after_requested_flip += 1;
            }
        }
    }
    // All but the two varint length bits of Requested Capacity.
    assert_eq!(resumed_after_requested_flip, 30);
}

#[test]
fn expiry_boundary_is_exclusive() {
    let mut server = server();
    let token = mint(&mut server, "192.0.2.1:1");
    let client = addr("192.0.2.1:1");
    let last_valid = UNIX_EPOCH + Duration::from_millis((T0 + 3599) * 1000 + 999);
    let v = server
        .validate(&token, client, last_valid, &MemoryGuard::new(1))
        .unwrap();
    assert!(v.address.is_validated());
    assert!(v.resume.is_ok());

    let v = server
        .validate(&token, client, at(T0 + 3600), &MemoryGuard::new(1))
        .unwrap();
    assert_eq!(v.address, AddressStatus::Expired);
    assert_eq!(v.resume, Err(NoResume::Expired));
}

#[test]
fn expired_tokens_are_not_errors_even_when_strict() {
    let mut server = server_with(ServerConfig {
        policy: Policy::Strict,
        ..ServerConfig::default()
    });
    let token = mint(&mut server, "192.0.2.1:1");
    let v = server
        .validate(
            &token,
            addr("192.0.2.1:1"),
            at(T0 + 7200),
            &MemoryGuard::new(1),
        )
        .unwrap();
    assert_eq!(v.resume, Err(NoResume::Expired));
}

#[test]
fn ipv4_clients_resume_within_their_slash_24() {
    let mut server = server();
    let token = mint(&mut server, "198.51.100.20:1");
    let check = |client: &str| {
        server
            .validate(&token, addr(client), at(T0), &MemoryGuard::new(1))
            .unwrap()
    };
    let same_host = check("198.51.100.20:9");
    assert!(same_host.address.is_validated());
    assert!(same_host.resume.is_ok());
    let same_net = check("198.51.100.254:9");
    assert_eq!(same_net.address, AddressStatus::Mismatch);
    assert!(same_net.resume.is_ok());
    let other_net = check("198.51.101.20:9");
    assert_eq!(other_net.address, AddressStatus::Mismatch);
    assert_eq!(other_net.resume, Err(NoResume::AddressMismatch));
    let mapped = check("[::ffff:198.51.100.20]:9");
    assert!(mapped.address.is_validated());
    let v6 = check("[2001:db8::1]:9");
    assert_eq!(v6.resume, Err(NoResume::AddressMismatch));
}

#[test]
fn ipv6_clients_resume_within_their_slash_56() {
    let mut server = server();
    let token = mint(&mut server, "[2001:db8:1:2300::1]:1");
    let check = |client: &str| {
        server
            .validate(&token, addr(client), at(T0), &MemoryGuard::new(1))
            .unwrap()
    };
    assert!(check("[2001:db8:1:2300::1]:2").address.is_validated());
    let privacy = check("[2001:db8:1:23ff:abcd::9]:2");
    assert_eq!(privacy.address, AddressStatus::Mismatch);
    assert!(privacy.resume.is_ok());
    assert_eq!(
        check("[2001:db8:1:2400::1]:2").resume,
        Err(NoResume::AddressMismatch)
    );
    assert_eq!(check("192.0.2.1:2").resume, Err(NoResume::AddressMismatch));
}

#[test]
fn prefixes_are_configurable() {
    let mut server = server_with(ServerConfig {
        bdp_prefixes: AddressPrefixes::EXACT,
        address_prefixes: AddressPrefixes { v4: 16, v6: 48 },
        ..ServerConfig::default()
    });
    let token = mint(&mut server, "198.51.100.20:1");
    let v = server
        .validate(&token, addr("198.51.7.7:1"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    assert!(v.address.is_validated());
    assert_eq!(v.resume, Err(NoResume::AddressMismatch));
}

#[test]
fn key_rotation_keeps_old_tokens_until_retired() {
    let mut server = server();
    let old = mint(&mut server, "192.0.2.1:1");
    server.keys_mut().rotate(key(2)).unwrap();
    let new = mint(&mut server, "192.0.2.1:1");
    let private_key_id = |t: &[u8]| {
        let bdp = ExToken::decode(t).unwrap().bdp().unwrap().unwrap();
        bdp.private_data[0]
    };
    assert_eq!((private_key_id(&old), private_key_id(&new)), (1, 2));
    let validate = |server: &TokenServer<SimRng>, t: &[u8]| {
        server
            .validate(t, addr("192.0.2.1:1"), at(T0), &MemoryGuard::new(1))
            .unwrap()
    };
    assert!(validate(&server, &old).resume.is_ok());
    assert!(validate(&server, &new).resume.is_ok());
    for id in 3..=5 {
        server.keys_mut().rotate(key(id)).unwrap();
    }
    let retired = validate(&server, &old);
    let reason = InvalidToken::Sealing(OpenError::UnknownKey(1));
    assert_eq!(retired.address, AddressStatus::Invalid(reason));
    assert_eq!(retired.resume, Err(NoResume::Invalid(reason)));
    assert!(validate(&server, &new).resume.is_ok());
}

/// RFC 9000, Section 8.1.3: a token the server cannot open for want of the
/// key is treated as absent, under the strict policy too (it predates a
/// rotation, or another server of the name sealed it).
#[test]
fn a_token_of_a_retired_key_is_absent_under_every_policy() {
    let strict = ServerConfig {
        policy: Policy::Strict,
        ..ServerConfig::default()
    };
    let mut server = server_with(strict);
    let old = mint(&mut server, "192.0.2.1:1");
    for id in 2..=5 {
        server.keys_mut().rotate(key(id)).unwrap();
    }
    let reason = InvalidToken::Sealing(OpenError::UnknownKey(1));
    let v = server
        .validate_unclaimed(&old, addr("192.0.2.1:1"), at(T0))
        .expect("not a reason to close");
    assert_eq!(v.address, AddressStatus::Invalid(reason));
    assert_eq!(v.resume, Err(NoResume::Invalid(reason)));

    // A token of a key it holds is still held to the strict policy: one
    // altered in its address part's nonce closes the connection.
    let mut tampered = mint(&mut server, "192.0.2.1:1");
    tampered[10] ^= 1;
    assert_eq!(
        server.validate_unclaimed(&tampered, addr("192.0.2.1:1"), at(T0)),
        Err(TokenRejected {
            error_code: EX_TOKEN_ERROR,
            reason: InvalidToken::Sealing(OpenError::Forged),
        })
    );
}

/// A set measured ahead of this server's clock beyond the allowed skew
/// comes from a server whose clock is wrong: it does not resume, and a
/// token of it is no reason to close.
#[test]
fn a_set_measured_ahead_of_the_clock_beyond_the_skew_does_not_resume() {
    let strict = ServerConfig {
        policy: Policy::Strict,
        ..ServerConfig::default()
    };
    let mut server = server_with(strict);
    let client = addr("192.0.2.1:1");
    let skew = MAX_CLOCK_SKEW.as_secs();
    assert_eq!(skew, 30);
    let token = mint(&mut server, "192.0.2.1:1");
    let resume = |now: u64| {
        server
            .validate_unclaimed(&token, client, at(now))
            .map(|v| v.resume.map(|p| p.saved_cwnd))
    };
    // Measured at T0: seen from a clock up to the skew behind, it resumes.
    assert_eq!(resume(T0 - skew), Ok(Ok(CAPACITY)));
    assert_eq!(resume(T0 - skew - 1), Ok(Err(NoResume::ClockSkew)));
    assert_eq!(resume(T0 - 3600), Ok(Err(NoResume::ClockSkew)));
    assert_eq!(resume(T0), Ok(Ok(CAPACITY)));
}

#[test]
fn tokens_of_another_server_are_invalid() {
    let mut other = TokenServer::new(
        KeyRing::new(TokenKey::from_bytes(1, &[0xee; 32]).unwrap()),
        SimRng::new(1),
        ServerConfig::default(),
    );
    let token = mint(&mut other, "192.0.2.1:1");
    let v = server()
        .validate(&token, addr("192.0.2.1:1"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    let forged = InvalidToken::Sealing(OpenError::Forged);
    assert_eq!(v.address, AddressStatus::Invalid(forged));
    assert_eq!(v.resume, Err(NoResume::Invalid(forged)));
}

#[test]
fn malformed_tokens_are_treated_as_absent_by_default() {
    let server = server();
    let garbage = [0x40];
    let v = server
        .validate(&garbage, addr("192.0.2.1:1"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    let reason = InvalidToken::Structure(DecodeError::Truncated);
    assert_eq!(v.address, AddressStatus::Invalid(reason));
    assert_eq!(v.resume, Err(NoResume::Invalid(reason)));
}

#[test]
fn strict_policy_closes_with_the_draft_error_codes() {
    let mut server = server_with(ServerConfig {
        policy: Policy::Strict,
        ..ServerConfig::default()
    });
    let client = addr("192.0.2.1:1");
    let guard = MemoryGuard::new(4);
    assert_eq!(
        server.validate(&[0x40], client, at(T0), &guard),
        Err(TokenRejected {
            error_code: EX_TOKEN_ERROR,
            reason: InvalidToken::Structure(DecodeError::Truncated),
        })
    );
    // A valid address part with a broken BDP_TOKEN.
    let address_only = server.mint_address_token(client, at(T0), LIFETIME).unwrap();
    let av = ExToken::decode(&address_only)
        .unwrap()
        .address_validation()
        .to_vec();
    let mut b = ExTokenBuilder::new(&av).unwrap();
    b.extension(ex_token::ExtensionId::BDP_TOKEN, &[0x00, 0x01])
        .unwrap();
    let broken_bdp = b.finish().unwrap();
    assert_eq!(
        server.validate(&broken_bdp, client, at(T0), &guard),
        Err(TokenRejected {
            error_code: BDP_TOKEN_ERROR,
            reason: InvalidToken::BdpStructure(BdpDecodeError::Truncated),
        })
    );
    // A forged address part.
    let mut forged = address_only.clone();
    forged[5] ^= 1;
    assert_eq!(
        server.validate(&forged, client, at(T0), &guard),
        Err(TokenRejected {
            error_code: EX_TOKEN_ERROR,
            reason: InvalidToken::Sealing(OpenError::Forged),
        })
    );
    // Valid tokens pass.
    let token = mint(&mut server, "192.0.2.1:1");
    assert!(server
        .validate(&token, client, at(T0), &guard)
        .unwrap()
        .resume
        .is_ok());
}

#[test]
fn strict_error_codes_are_overridable() {
    let server = server_with(ServerConfig {
        policy: Policy::Strict,
        error_codes: ErrorCodes {
            ex_token: 0x1234,
            bdp_token: 0x5678,
        },
        ..ServerConfig::default()
    });
    let rejected = server
        .validate(&[0x40], addr("192.0.2.1:1"), at(T0), &MemoryGuard::new(1))
        .unwrap_err();
    assert_eq!(rejected.error_code, 0x1234);
}

#[test]
fn bdp_tokens_without_private_data_are_informative_only() {
    let mut b = ExTokenBuilder::new(b"").unwrap();
    b.bdp(&BdpToken {
        private_data: b"",
        capacity: CAPACITY,
        rtt_us: 1000,
        requested_capacity: CAPACITY,
    })
    .unwrap();
    let token = b.finish().unwrap();
    let v = server()
        .validate(&token, addr("192.0.2.1:1"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    assert_eq!(v.address, AddressStatus::Absent);
    assert_eq!(v.resume, Err(NoResume::Unprotected));
}

#[test]
fn bdp_part_under_another_label_does_not_open() {
    // An address validation box moved into the BDP private data.
    let mut server = server();
    let address_only = server
        .mint_address_token(addr("192.0.2.1:1"), at(T0), LIFETIME)
        .unwrap();
    let av = ExToken::decode(&address_only).unwrap().address_validation();
    let mut b = ExTokenBuilder::new(b"").unwrap();
    b.bdp(&BdpToken {
        private_data: av,
        capacity: 0,
        rtt_us: 0,
        requested_capacity: 1,
    })
    .unwrap();
    let token = b.finish().unwrap();
    let v = server
        .validate(&token, addr("192.0.2.1:1"), at(T0), &MemoryGuard::new(1))
        .unwrap();
    assert_eq!(
        v.resume,
        Err(NoResume::Invalid(InvalidToken::Sealing(OpenError::Forged)))
    );
}

#[test]
fn one_token_resumes_one_connection() {
    let mut server = server();
    let token = mint(&mut server, "192.0.2.1:1");
    let guard = MemoryGuard::new(16);
    let client = addr("192.0.2.1:2");
    let first = server.validate(&token, client, at(T0), &guard).unwrap();
    let second = server.validate(&token, client, at(T0 + 1), &guard).unwrap();
    assert!(first.resume.is_ok());
    assert_eq!(second.resume, Err(NoResume::AlreadyInUse));
    assert!(second.address.is_validated());
    // A set measured later, for the same network, resumes and supersedes
    // the first.
    let set = server.new_saved_set(client, at(T0 + 1)).unwrap();
    let fresh = server.mint_bdp_token(client, &saved(), &set).unwrap();
    assert!(server
        .validate(&fresh, client, at(T0 + 2), &guard)
        .unwrap()
        .resume
        .is_ok());
    let old = server.validate(&token, client, at(T0 + 3), &guard).unwrap();
    assert_eq!(old.resume, Err(NoResume::Superseded));
}

#[test]
fn a_set_expires_one_lifetime_after_its_measurement_and_not_before() {
    let mut server = server_with(ServerConfig {
        saved_set_lifetime: Duration::from_secs(600),
        ..ServerConfig::default()
    });
    let client = addr("192.0.2.1:1");
    let set = server.new_saved_set(client, at(T0)).unwrap();
    let token = server.mint_bdp_token(client, &saved(), &set).unwrap();
    let guard = MemoryGuard::new(4);
    let last_second = server.validate(&token, client, at(T0 + 599), &guard);
    assert_eq!(last_second.unwrap().resume.map(|p| p.set), Ok(set));
    let expired = server.validate(&token, client, at(T0 + 600), &guard);
    assert_eq!(expired.unwrap().resume, Err(NoResume::Expired));
}

#[test]
fn a_set_of_another_site_does_not_resume() {
    let mut site_a = server_with(ServerConfig {
        site: ex_token::SiteId(1),
        ..ServerConfig::default()
    });
    let site_b = server_with(ServerConfig {
        site: ex_token::SiteId(2),
        ..ServerConfig::default()
    });
    let client = addr("192.0.2.1:1");
    let set = site_a.new_saved_set(client, at(T0)).unwrap();
    let token = site_a.mint_bdp_token(client, &saved(), &set).unwrap();
    let guard = MemoryGuard::new(4);
    let v = site_b.validate(&token, client, at(T0 + 1), &guard).unwrap();
    // The key ring is shared: the address is validated, the set is not used.
    assert!(v.address.is_validated());
    assert_eq!(v.resume, Err(NoResume::OtherSite));
    assert!(guard.is_empty());
    let v = site_a.validate(&token, client, at(T0 + 1), &guard).unwrap();
    assert_eq!(
        v.resume.map(|p| p.set.endpoint.site),
        Ok(ex_token::SiteId(1))
    );
}

#[test]
fn sibling_tokens_of_one_saved_set_resume_once_until_the_set_expires() {
    let mut server = server();
    let client = addr("192.0.2.1:1");
    let set = server.new_saved_set(client, at(T0)).unwrap();
    // A connection's estimate grew: two tokens, two capacities, one set.
    let early = server
        .mint_bdp_token(
            client,
            &SavedPath {
                capacity: 221_000,
                ..saved()
            },
            &set,
        )
        .unwrap();
    let late = server
        .mint_bdp_token(
            client,
            &SavedPath {
                capacity: 568_000,
                ..saved()
            },
            &set,
        )
        .unwrap();
    let guard = MemoryGuard::new(16);
    let first = server
        .validate(&late, client, at(T0 + 100), &guard)
        .unwrap();
    assert_eq!(
        first.resume.map(|p| (p.saved_cwnd, p.set.id)),
        Ok((568_000, set.id))
    );
    let sibling = server
        .validate(&early, client, at(T0 + 100), &guard)
        .unwrap();
    assert_eq!(sibling.resume, Err(NoResume::AlreadyInUse));
    assert!(sibling.address.is_validated());
    // Both tokens expire with the set, one lifetime after it was drawn.
    assert_eq!(set.expiry, at(T0 + 3600));
    let expired = server
        .validate(&early, client, at(T0 + 3600), &guard)
        .unwrap();
    assert_eq!(expired.resume, Err(NoResume::Expired));
}

#[test]
fn parallel_presentation_of_one_token_resumes_exactly_once() {
    let mut server = server();
    let token = mint(&mut server, "192.0.2.1:1");
    let guard = MemoryGuard::new(16);
    let (server, token, guard) = (&server, &token, &guard);
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8u16)
            .map(|port| {
                s.spawn(move || {
                    let client = SocketAddr::new("192.0.2.1".parse().unwrap(), 1000 + port);
                    server.validate(token, client, at(T0), guard).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(outcomes.iter().all(|v| v.address.is_validated()));
    assert_eq!(outcomes.iter().filter(|v| v.resume.is_ok()).count(), 1);
    assert_eq!(
        outcomes
            .iter()
            .filter(|v| v.resume == Err(NoResume::AlreadyInUse))
            .count(),
        7
    );
}

#[test]
fn mint_refuses_unencodable_parameters() {
    let mut server = server();
    let client = addr("192.0.2.1:1");
    let mint = |server: &mut TokenServer<SimRng>, path: SavedPath<'_>| {
        let set = server.new_saved_set(client, at(T0))?;
        server.mint_bdp_token(client, &path, &set)
    };
    assert_eq!(
        mint(
            &mut server,
            SavedPath {
                capacity: 0,
                ..saved()
            }
        ),
        Err(MintError::ZeroCapacity)
    );
    assert_eq!(
        mint(
            &mut server,
            SavedPath {
                extras: &[0; 33],
                ..saved()
            }
        ),
        Err(MintError::ExtrasTooLong(33))
    );
    assert_eq!(
        mint(
            &mut server,
            SavedPath {
                capacity: 1 << 62,
                ..saved()
            }
        ),
        Err(MintError::Encode(EncodeError::ValueTooLarge(1 << 62)))
    );
    assert_eq!(
        mint(
            &mut server,
            SavedPath {
                rtt: Duration::from_micros(1 << 62),
                ..saved()
            }
        ),
        Err(MintError::Encode(EncodeError::ValueTooLarge(1 << 62)))
    );
    assert_eq!(
        mint(
            &mut server,
            SavedPath {
                rtt: Duration::MAX,
                ..saved()
            }
        ),
        Err(MintError::Encode(EncodeError::ValueTooLarge(u64::MAX)))
    );
}
