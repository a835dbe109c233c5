//! Properties over arbitrary input: the fuzz targets' invariants, checked
//! on every `cargo test` from a fixed seed so runs repeat exactly.

use std::time::{Duration, UNIX_EPOCH};

use ex_token::{
    BdpToken, ExToken, ExTokenBuilder, ExtensionId, KeyRing, MemoryGuard, ServerConfig, SimRng,
    TokenKey, TokenServer,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: RngSeed::Fixed(0x5eed),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn decode_encode_decode_is_stable(bytes in vec(any::<u8>(), 0..600)) {
        if let Ok(token) = ExToken::decode(&bytes) {
            let encoded = token.to_vec();
            let again = ExToken::decode(&encoded).unwrap();
            prop_assert_eq!(again.address_validation(), token.address_validation());
            prop_assert!(again.extensions().eq(token.extensions()));
            prop_assert_eq!(again.to_vec(), encoded);
        }
    }

    #[test]
    fn built_tokens_decode_to_what_was_built(
        av in vec(any::<u8>(), 0..64),
        exts in vec((0u64..1 << 20, vec(any::<u8>(), 0..16)), 0..8),
        capacity in 1u64..1 << 40,
        rtt_us in 0u64..1 << 30,
        requested in 0u64..1 << 40,
    ) {
        let mut b = ExTokenBuilder::new(&av).unwrap();
        b.bdp(&BdpToken { private_data: &av, capacity, rtt_us, requested_capacity: requested })
            .unwrap();
        let mut kept = vec![];
        for (id, data) in &exts {
            let id = ExtensionId::new(id + 2).unwrap();
            if b.extension(id, data).is_ok() {
                kept.push((id, data.clone()));
            }
        }
        let bytes = b.finish().unwrap();
        let token = ExToken::decode(&bytes).unwrap();
        prop_assert_eq!(token.address_validation(), &av[..]);
        let bdp = token.bdp().unwrap().unwrap();
        prop_assert_eq!((bdp.capacity, bdp.rtt_us, bdp.requested_capacity), (capacity, rtt_us, requested));
        for (id, data) in kept {
            prop_assert_eq!(token.extension(id), Some(&data[..]));
        }
    }

    #[test]
    fn arbitrary_bytes_never_validate(bytes in vec(any::<u8>(), 0..300)) {
        assert_rejected(&bytes)?;
    }

    /// Well-formed tokens whose sealed parts are random, starting with the
    /// server's key id so they reach the AEAD.
    #[test]
    fn random_sealed_parts_never_validate(
        mut av in vec(any::<u8>(), 1..80),
        mut private_data in vec(any::<u8>(), 1..80),
        capacity in 1u64..1 << 40,
    ) {
        av[0] = KEY_ID;
        private_data[0] = KEY_ID;
        let mut b = ExTokenBuilder::new(&av).unwrap();
        b.bdp(&BdpToken { private_data: &private_data, capacity, rtt_us: 1, requested_capacity: capacity })
            .unwrap();
        assert_rejected(&b.finish().unwrap())?;
    }
}

const KEY_ID: u8 = 1;

fn assert_rejected(token: &[u8]) -> Result<(), TestCaseError> {
    let key = TokenKey::from_bytes(KEY_ID, &[9; 32]).unwrap();
    let server = TokenServer::new(KeyRing::new(key), SimRng::new(0), ServerConfig::default());
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let v = server
        .validate(
            token,
            "192.0.2.1:1".parse().unwrap(),
            now,
            &MemoryGuard::new(1),
        )
        .unwrap();
    prop_assert!(!v.address.is_validated());
    prop_assert!(v.resume.is_err());
    Ok(())
}
