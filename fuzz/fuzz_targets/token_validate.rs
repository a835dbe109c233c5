//! Arbitrary bytes never validate without the key: no input makes the
//! server validate an address, resume or accept a Retry token, and none
//! makes it panic.

#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use ex_token::{KeyRing, MemoryGuard, Policy, ServerConfig, SimRng, TokenKey, TokenServer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let strict = ServerConfig {
        policy: Policy::Strict,
        ..ServerConfig::default()
    };
    for config in [ServerConfig::default(), strict] {
        let server = TokenServer::new(
            KeyRing::new(TokenKey::from_bytes(1, &[0x5a; 32]).expect("32-byte key")),
            SimRng::new(0),
            config,
        );
        let client = "192.0.2.1:4433".parse().expect("address");
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let guard = MemoryGuard::new(4);
        if let Ok(v) = server.validate(data, client, now, &guard) {
            assert!(!v.address.is_validated());
            assert!(v.resume.is_err());
        }
        assert!(server.validate_retry_token(data, client, now).is_err());
    }
});
