//! Decoding arbitrary bytes never panics, and decode -> encode -> decode
//! is stable: the re-encoded token decodes to the same fields.

#![no_main]

use ex_token::{lower_requested_capacity, ExToken};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(token) = ExToken::decode(data) else {
        return;
    };
    let encoded = token.to_vec();
    assert!(encoded.len() <= data.len());
    let again = ExToken::decode(&encoded).expect("re-encoded token decodes");
    assert_eq!(again.address_validation(), token.address_validation());
    assert!(again.extensions().eq(token.extensions()));
    assert_eq!(again.bdp(), token.bdp());
    assert_eq!(again.to_vec(), encoded);

    // Lowering Requested Capacity never raises it and keeps the length.
    if let Some(Ok(bdp)) = token.bdp() {
        let mut edited = data.to_vec();
        let target = bdp.requested_capacity / 2;
        assert_eq!(lower_requested_capacity(&mut edited, target), Ok(target));
        assert_eq!(edited.len(), data.len());
        let lowered = ExToken::decode(&edited)
            .expect("edited token decodes")
            .bdp()
            .expect("BDP_TOKEN still present")
            .expect("BDP_TOKEN still valid");
        assert_eq!(lowered.requested_capacity, target);
        assert_eq!(lowered.capacity, bdp.capacity);
    }
});
