//! Values at the edges of the wire format and of the client's store: the
//! largest varint and token, the shortest sealed box, GREASE's spread, a
//! store bounded to nothing, and token files. Found by mutation testing
//! (`make mutants`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ex_token::{
    AddressStatus, BdpToken, EncodeError, ExToken, ExTokenBuilder, ExtensionId, InvalidToken,
    KeyRing, OpenError, Policy, Rng, ServerConfig, SimRng, SiteId, StoreConfig, SystemRng,
    TokenKey, TokenServer, TokenStore, MAX_TOKEN_LEN,
};

const NOW: u64 = 1_700_000_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

fn server(config: ServerConfig) -> TokenServer<SimRng> {
    let keys = KeyRing::new(TokenKey::from_bytes(1, &[7; 32]).unwrap());
    TokenServer::new(keys, SimRng::new(11), config)
}

/// RFC 9000, section 16: a variable-length integer holds up to 2^62 - 1.
#[test]
fn the_largest_varint_is_encoded_and_one_more_is_refused() {
    let max = (1u64 << 62) - 1;
    let bdp = |capacity| BdpToken {
        private_data: b"",
        capacity,
        rtt_us: max,
        requested_capacity: max,
    };
    let mut builder = ExTokenBuilder::new(b"").unwrap();
    builder.bdp(&bdp(max)).unwrap();
    let token = builder.finish().unwrap();
    let decoded = ExToken::decode(&token).unwrap().bdp().unwrap().unwrap();
    assert_eq!(decoded, bdp(max));

    let mut builder = ExTokenBuilder::new(b"").unwrap();
    assert_eq!(
        builder.bdp(&bdp(max + 1)).err(),
        Some(EncodeError::ValueTooLarge(max + 1))
    );
}

/// A token of exactly MAX_TOKEN_LEN bytes is produced (and read back); one
/// byte more is refused.
#[test]
fn a_token_of_exactly_the_maximum_length_is_produced() {
    let id = ExtensionId::private_use(0).unwrap();
    // 1 (empty address part) + 1 (id 0x1a) + 2 (length) + data.
    let fill = |data_len: usize| {
        let data = vec![0x42; data_len];
        let mut builder = ExTokenBuilder::new(b"").unwrap();
        builder.extension(id, &data).unwrap();
        builder.finish()
    };
    let token = fill(MAX_TOKEN_LEN - 4).unwrap();
    assert_eq!(token.len(), MAX_TOKEN_LEN);
    assert_eq!(
        ExToken::decode(&token)
            .unwrap()
            .extension(id)
            .map(<[u8]>::len),
        Some(MAX_TOKEN_LEN - 4)
    );
    assert_eq!(
        fill(MAX_TOKEN_LEN - 3),
        Err(EncodeError::TooLong(MAX_TOKEN_LEN + 1))
    );
}

/// A sealed box is a key id, a 12-byte nonce, the ciphertext and a 16-byte
/// tag: 29 bytes (nothing sealed) is a possible box that fails
/// authentication; 28 bytes is not a box at all.
#[test]
fn the_shortest_sealed_box_fails_authentication_and_a_shorter_one_is_no_box() {
    let server = server(ServerConfig::default());
    let client: SocketAddr = "192.0.2.1:443".parse().unwrap();
    for (len, why) in [(29, OpenError::Forged), (28, OpenError::BadLength(28))] {
        let mut sealed = vec![0u8; len];
        sealed[0] = 1; // the ring's key id
        let token = ExTokenBuilder::new(&sealed).unwrap().finish().unwrap();
        let validation = server.validate_unclaimed(&token, client, now()).unwrap();
        assert_eq!(
            validation.address,
            AddressStatus::Invalid(InvalidToken::Sealing(why)),
            "{len} bytes"
        );
    }
}

#[test]
fn the_system_generator_fills_with_random_bytes() {
    let mut rng = SystemRng::default();
    let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
    rng.fill(&mut a).unwrap();
    rng.fill(&mut b).unwrap();
    assert_ne!(a, [0; 32]);
    assert_ne!(a, b);
}

#[test]
fn a_server_reports_the_configuration_it_was_given() {
    let config = ServerConfig {
        policy: Policy::Strict,
        site: SiteId(9),
        saved_set_lifetime: Duration::from_secs(600),
        grease: false,
        ..ServerConfig::default()
    };
    assert_eq!(server(config).config(), &config);
}

/// GREASE (draft-misell-quic-ex-token): a reserved identifier 31N+27 with N
/// spread over every two-byte varint (N < 528), and 0 to 4 random data
/// bytes, each length about as often as the others.
#[test]
fn grease_spreads_over_the_reserved_ids_and_data_lengths() {
    let mut rng = SimRng::new(29);
    let mut largest_n = 0;
    let mut lengths = [0usize; 5];
    let draws = 2500;
    for _ in 0..draws {
        let mut builder = ExTokenBuilder::new(b"").unwrap();
        builder.grease(&mut rng).unwrap();
        let token = builder.finish().unwrap();
        let extensions: Vec<_> = ExToken::decode(&token).unwrap().extensions().collect();
        assert_eq!(extensions.len(), 1);
        let grease = extensions[0];
        assert!(grease.id.is_reserved(), "{}", grease.id);
        assert!(grease.id.value() < 16384, "two bytes: {}", grease.id);
        largest_n = largest_n.max((grease.id.value() - 27) / 31);
        lengths[grease.data.len()] += 1;
    }
    assert!(largest_n >= 500, "N only up to {largest_n}");
    for (len, &count) in lengths.iter().enumerate() {
        assert!(
            (draws / 10..=draws * 3 / 10).contains(&count),
            "{count} of {draws} with {len} data bytes: {lengths:?}"
        );
    }
}

fn server_addr() -> SocketAddr {
    "203.0.113.5:443".parse().unwrap()
}

#[test]
fn a_store_bounded_to_no_tokens_keeps_none() {
    for config in [
        StoreConfig {
            max_tokens: 0,
            ..StoreConfig::default()
        },
        StoreConfig {
            max_per_server: 0,
            ..StoreConfig::default()
        },
    ] {
        let mut store = TokenStore::new(config);
        store.insert("example.org", server_addr(), vec![1, 2, 3], now());
        assert!(store.is_empty(), "{config:?}");
        assert_eq!(store.take("example.org", server_addr(), now()), None);
    }
    let mut store = TokenStore::new(StoreConfig::default());
    assert!(store.is_empty());
    store.insert("example.org", server_addr(), vec![1, 2, 3], now());
    assert!(!store.is_empty());
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ex-token-edges-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Every byte value survives the file (its hex), high nibbles included.
#[test]
fn a_saved_store_loads_every_byte_back() {
    let token: Vec<u8> = (0..=255).collect();
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert("example.org", server_addr(), token.clone(), now());
    let path = scratch("tokens.json");
    store.save(&path).unwrap();
    let mut loaded = TokenStore::load(&path, StoreConfig::default(), now()).unwrap();
    assert_eq!(
        loaded.take("example.org", server_addr(), now()),
        Some(token)
    );
    let _ = std::fs::remove_file(path);
}

/// A missing file is an empty store; a path that cannot be read is an
/// error, not an empty store (which would silently drop the tokens).
#[test]
fn only_a_missing_file_loads_as_an_empty_store() {
    let missing = scratch("missing.json");
    let store = TokenStore::load(&missing, StoreConfig::default(), now()).unwrap();
    assert!(store.is_empty());
    let directory = std::env::temp_dir();
    assert!(TokenStore::load(&directory, StoreConfig::default(), now()).is_err());
}

/// A token file whose hex is not hex (an odd number of digits, a digit
/// that is not one) is malformed, not read as some other token.
#[test]
fn a_token_file_with_bad_hex_is_malformed() {
    for (name, hex) in [("odd", "0a1"), ("digit", "0g")] {
        let path = scratch(&format!("{name}.json"));
        let file = format!(
            r#"{{"version":1,"tokens":[{{"server_name":"example.org","server_addr":"203.0.113.5:443","received":{NOW},"token":"{hex}"}}]}}"#
        );
        std::fs::write(&path, file).unwrap();
        let error = TokenStore::load(&path, StoreConfig::default(), now()).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "{name}");
        let _ = std::fs::remove_file(path);
    }
    // The same file with good hex loads.
    let path = scratch("good.json");
    let file = format!(
        r#"{{"version":1,"tokens":[{{"server_name":"example.org","server_addr":"203.0.113.5:443","received":{NOW},"token":"0aff"}}]}}"#
    );
    std::fs::write(&path, file).unwrap();
    let mut store = TokenStore::load(&path, StoreConfig::default(), now()).unwrap();
    assert_eq!(
        store.take("example.org", server_addr(), now()),
        Some(vec![0x0a, 0xff])
    );
    let _ = std::fs::remove_file(path);
}
