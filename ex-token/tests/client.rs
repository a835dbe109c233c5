//! Client side: lowering Requested Capacity and the token store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ex_token::{
    lower_requested_capacity, BdpDecodeError, BdpToken, DecodeError, ExToken, ExTokenBuilder,
    HeldToken, LowerError, StoreConfig, TokenStore,
};

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn bdp_token(requested_capacity: u64) -> Vec<u8> {
    let mut b = ExTokenBuilder::new(b"av").unwrap();
    b.bdp(&BdpToken {
        private_data: b"p",
        capacity: 70,
        rtt_us: 5,
        requested_capacity,
    })
    .unwrap();
    b.finish().unwrap()
}

#[test]
fn lowering_keeps_the_varint_width() {
    // 70 needs a two-byte varint; 3 would fit in one but keeps two.
    let mut token = bdp_token(70);
    let before = token.clone();
    assert_eq!(lower_requested_capacity(&mut token, 3).unwrap(), 3);
    assert_eq!(token.len(), before.len());
    assert_eq!(&token[token.len() - 2..], &[0x40, 0x03]);
    assert_eq!(&token[..token.len() - 2], &before[..before.len() - 2]);
    let bdp = ExToken::decode(&token).unwrap().bdp().unwrap().unwrap();
    assert_eq!(bdp.requested_capacity, 3);
}

#[test]
fn lowering_never_raises() {
    let mut token = bdp_token(10);
    let before = token.clone();
    assert_eq!(lower_requested_capacity(&mut token, 1_000).unwrap(), 10);
    assert_eq!(token, before);
}

#[test]
fn lowering_needs_a_bdp_token() {
    let mut no_bdp = vec![0x00];
    assert_eq!(
        lower_requested_capacity(&mut no_bdp, 1),
        Err(LowerError::NoBdpToken)
    );
    let mut malformed = vec![0x05];
    assert_eq!(
        lower_requested_capacity(&mut malformed, 1),
        Err(LowerError::Malformed(DecodeError::Truncated))
    );
    let mut bad_bdp = vec![0x00, 0x01, 0x01, 0x00];
    assert_eq!(
        lower_requested_capacity(&mut bad_bdp, 1),
        Err(LowerError::MalformedBdp(BdpDecodeError::Truncated))
    );
}

const NAME: &str = "example.org";

#[test]
fn each_token_is_handed_out_once_newest_first() {
    let server = addr("192.0.2.1:443");
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert(NAME, server, vec![1], at(100));
    store.insert(NAME, server, vec![2], at(101));
    assert_eq!(store.take(NAME, server, at(102)), Some(vec![2]));
    assert_eq!(store.take(NAME, server, at(102)), Some(vec![1]));
    assert_eq!(store.take(NAME, server, at(102)), None);
}

#[test]
fn each_token_keeps_whether_its_server_announced_ex_token() {
    let server = addr("192.0.2.1:443");
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert_held(NAME, server, HeldToken::extensible(vec![1]), at(100));
    store.insert(NAME, server, vec![2], at(101));
    store.insert_held(NAME, server, HeldToken::opaque(vec![3]), at(102));
    assert_eq!(
        store.take_held(NAME, server, at(103)),
        Some(HeldToken {
            token: vec![3],
            ex_token: false
        })
    );
    assert_eq!(
        store.take_held(NAME, server, at(103)),
        Some(HeldToken {
            token: vec![2],
            ex_token: false
        }),
        "a plain insert keeps the token opaque"
    );
    assert_eq!(
        store.take_held(NAME, server, at(103)),
        Some(HeldToken {
            token: vec![1],
            ex_token: true
        })
    );
    assert_eq!(store.take_held(NAME, server, at(103)), None);
}

#[test]
fn tokens_are_keyed_by_name_and_address() {
    let a = addr("192.0.2.1:443");
    let b = addr("192.0.2.2:443");
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert(NAME, a, vec![1], at(0));
    assert_eq!(store.take(NAME, b, at(0)), None);
    assert_eq!(store.take("other.example", a, at(0)), None);
    assert_eq!(store.take(NAME, a, at(0)), Some(vec![1]));
}

#[test]
fn newest_shows_what_take_would_hand_out() {
    let a = addr("192.0.2.1:443");
    let mut store = TokenStore::new(StoreConfig::default());
    assert_eq!(store.newest(NAME, a), None);
    store.insert(NAME, a, vec![1], at(0));
    store.insert(NAME, a, vec![2], at(1));
    assert_eq!(store.newest(NAME, a), Some(&[2][..]));
    assert_eq!(store.len(), 2);
    assert_eq!(store.take(NAME, a, at(2)), Some(vec![2]));
    assert_eq!(store.newest(NAME, a), Some(&[1][..]));
}

#[test]
fn empty_tokens_are_not_kept() {
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert(NAME, addr("192.0.2.1:443"), Vec::new(), at(0));
    assert!(store.is_empty());
}

#[test]
fn tokens_expire_at_max_age() {
    let server = addr("192.0.2.1:443");
    let config = StoreConfig {
        max_age: Duration::from_secs(60),
        ..StoreConfig::default()
    };
    let mut store = TokenStore::new(config);
    store.insert(NAME, server, vec![1], at(1000));
    let mut kept = store.clone();
    assert_eq!(kept.take(NAME, server, at(1059)), Some(vec![1]));
    assert_eq!(store.take(NAME, server, at(1060)), None);
    assert!(store.is_empty());
}

#[test]
fn store_is_bounded_per_server_and_in_total() {
    let config = StoreConfig {
        max_tokens: 3,
        max_per_server: 2,
        max_age: Duration::from_secs(3600),
    };
    let a = addr("192.0.2.1:443");
    let b = addr("192.0.2.2:443");
    let mut store = TokenStore::new(config);
    for t in 1..=3u8 {
        store.insert(NAME, a, vec![t], at(0));
    }
    assert_eq!(store.len(), 2);
    store.insert(NAME, b, vec![10], at(0));
    store.insert(NAME, b, vec![11], at(0));
    assert_eq!(store.len(), 3);
    // Server a lost its oldest remaining token to the total bound.
    assert_eq!(store.take(NAME, a, at(0)), Some(vec![3]));
    assert_eq!(store.take(NAME, a, at(0)), None);
    assert_eq!(store.take(NAME, b, at(0)), Some(vec![11]));
}

fn scratch_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ex-token-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

#[test]
fn store_persists_to_a_json_file() {
    let path = scratch_file("round-trip.json");
    let server = addr("[2001:db8::1]:443");
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert(NAME, server, vec![0x0a, 0xff], at(1_000));
    store.insert(NAME, server, vec![0x01], at(2_000));
    store.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"version":1,"tokens":["#,
            r#"{"server_name":"example.org","server_addr":"[2001:db8::1]:443","received":1000,"token":"0aff"},"#,
            r#"{"server_name":"example.org","server_addr":"[2001:db8::1]:443","received":2000,"token":"01"}]}"#
        )
    );
    let config = StoreConfig {
        max_age: Duration::from_secs(1_500),
        ..StoreConfig::default()
    };
    let mut loaded = TokenStore::load(&path, config, at(2_600)).unwrap();
    assert_eq!(loaded.len(), 1, "the older token expired");
    assert_eq!(loaded.take(NAME, server, at(2_600)), Some(vec![0x01]));
}

#[test]
fn the_file_keeps_whether_the_server_announced_ex_token() {
    let path = scratch_file("ex-token.json");
    let server = addr("192.0.2.1:443");
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert_held(NAME, server, HeldToken::extensible(vec![0x0a]), at(1_000));
    store.insert_held(NAME, server, HeldToken::opaque(vec![0x0b]), at(1_001));
    store.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"version":1,"tokens":["#,
            r#"{"server_name":"example.org","server_addr":"192.0.2.1:443","received":1000,"token":"0a","ex_token":true},"#,
            r#"{"server_name":"example.org","server_addr":"192.0.2.1:443","received":1001,"token":"0b"}]}"#
        )
    );
    let mut loaded = TokenStore::load(&path, StoreConfig::default(), at(1_002)).unwrap();
    assert_eq!(
        loaded.take_held(NAME, server, at(1_002)),
        Some(HeldToken::opaque(vec![0x0b]))
    );
    assert_eq!(
        loaded.take_held(NAME, server, at(1_002)),
        Some(HeldToken::extensible(vec![0x0a]))
    );
}

#[test]
fn loading_a_missing_file_gives_an_empty_store() {
    let path = scratch_file("missing.json");
    let store = TokenStore::load(&path, StoreConfig::default(), at(0)).unwrap();
    assert!(store.is_empty());
}

#[test]
fn malformed_files_are_invalid_data() {
    let cases = [
        r#"{"version":2,"tokens":[]}"#,
        r#"{"version":1,"tokens":[{"server_name":"a","server_addr":"192.0.2.1:1","received":0,"token":"abc"}]}"#,
        r#"{"version":1,"tokens":[{"server_name":"a","server_addr":"192.0.2.1:1","received":0,"token":"+f"}]}"#,
        "not json",
    ];
    for (i, text) in cases.iter().enumerate() {
        let path = scratch_file(&format!("bad-{i}.json"));
        std::fs::write(&path, text).unwrap();
        let err = TokenStore::load(&path, StoreConfig::default(), at(0)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{text}");
    }
}

#[cfg(unix)]
#[test]
fn the_token_file_is_readable_by_its_owner_only() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let mode = |path: &PathBuf| {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let path = scratch_file("private.json");
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert(NAME, addr("192.0.2.1:443"), vec![1, 2, 3], at(1_000));
    store.save(&path).unwrap();
    assert_eq!(mode(&path), 0o600);

    // A file that was world-readable is replaced by a private one.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    store.save(&path).unwrap();
    assert_eq!(mode(&path), 0o600);

    // A link left where the temporary file goes is not written through.
    let elsewhere = scratch_file("elsewhere");
    std::fs::write(&elsewhere, "not yours").unwrap();
    let temporary = path.with_extension("json.tmp");
    let _ = std::fs::remove_file(&temporary);
    symlink(&elsewhere, &temporary).unwrap();
    store.save(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "not yours");
    assert_eq!(mode(&path), 0o600);
    assert!(!temporary.exists());
    let loaded = TokenStore::load(&path, StoreConfig::default(), at(1_000)).unwrap();
    assert_eq!(loaded.len(), 1);
}

#[test]
fn a_session_per_server_is_kept_handed_out_once_and_saved() {
    let path = scratch_file("sessions.json");
    let server = addr("192.0.2.1:443");
    let other = addr("192.0.2.2:443");
    let mut store = TokenStore::new(StoreConfig::default());
    store.insert_session(NAME, server, vec![1], at(1_000));
    store.insert_session(NAME, server, vec![2], at(1_100));
    store.insert_session(NAME, other, vec![3], at(1_200));
    store.insert_session(NAME, other, Vec::new(), at(1_300));
    store.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.ends_with(concat!(
            r#""sessions":[{"server_name":"example.org","server_addr":"192.0.2.1:443","received":1100,"session":"02"},"#,
            r#"{"server_name":"example.org","server_addr":"192.0.2.2:443","received":1200,"session":"03"}]}"#
        )),
        "{text}"
    );

    // The newest session of each server, once; expired with the tokens.
    let config = StoreConfig {
        max_age: Duration::from_secs(1_000),
        ..StoreConfig::default()
    };
    let mut loaded = TokenStore::load(&path, config, at(2_150)).unwrap();
    assert!(!loaded.has_session(NAME, server), "expired");
    assert_eq!(loaded.take_session(NAME, other, at(2_150)), Some(vec![3]));
    assert_eq!(loaded.take_session(NAME, other, at(2_150)), None);

    // A file without sessions still loads.
    let mut tokens_only = TokenStore::new(StoreConfig::default());
    tokens_only.insert(NAME, server, vec![9], at(1_000));
    tokens_only.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("sessions"), "{text}");
}
