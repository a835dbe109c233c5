//! Wire-format tests: hand-written vectors built from the draft's layout.

use ex_token::{
    BdpDecodeError, BdpToken, DecodeError, EncodeError, ExToken, ExTokenBuilder, Extension,
    ExtensionId, SimRng, MAX_EXTENSIONS, MAX_TOKEN_LEN,
};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A token with an address validation part, a BDP_TOKEN, a GREASE
/// extension (27) and an empty private-use extension (26).
const VECTOR: &str = "
    04 61626364                 Address Validation: 4 bytes 'abcd'
    01 0e                       BDP_TOKEN, 14 bytes:
       03 707276                  Private Data 'prv'
       80013880                   Capacity 80000
       800927c0                   RTT 600000 us
       4200                       Requested Capacity 512
    1b 02 7a7a                  reserved id 27, 'zz'
    1a 00                       private-use id 26, empty
";

fn vector() -> Vec<u8> {
    // Strip the annotations: keep only hex words.
    let words: Vec<&str> = VECTOR
        .lines()
        .filter_map(|line| line.split("  ").find(|w| !w.trim().is_empty()))
        .collect();
    hex(&words.join(" "))
}

#[test]
fn hand_written_vector_decodes_to_its_fields() {
    let bytes = vector();
    assert_eq!(bytes.len(), 27);
    let token = ExToken::decode(&bytes).unwrap();
    assert_eq!(token.address_validation(), b"abcd");
    let extensions: Vec<Extension<'_>> = token.extensions().collect();
    let id = |v| ExtensionId::new(v).unwrap();
    assert_eq!(
        extensions.iter().map(|e| e.id).collect::<Vec<_>>(),
        [id(1), id(27), id(26)]
    );
    assert!(extensions[1].id.is_reserved());
    assert!(extensions[2].id.is_private_use());
    assert_eq!(extensions[1].data, b"zz");
    assert_eq!(token.extension(id(26)), Some(&[][..]));
    assert_eq!(token.extension(id(2)), None);
    assert_eq!(
        token.bdp(),
        Some(Ok(BdpToken {
            private_data: b"prv",
            capacity: 80_000,
            rtt_us: 600_000,
            requested_capacity: 512,
        }))
    );
}

#[test]
fn builder_reproduces_the_vector_byte_for_byte() {
    let mut b = ExTokenBuilder::new(b"abcd").unwrap();
    b.bdp(&BdpToken {
        private_data: b"prv",
        capacity: 80_000,
        rtt_us: 600_000,
        requested_capacity: 512,
    })
    .unwrap()
    .extension(ExtensionId::reserved(0).unwrap(), b"zz")
    .unwrap()
    .extension(ExtensionId::private_use(0).unwrap(), b"")
    .unwrap();
    assert_eq!(b.finish().unwrap(), vector());
    let bytes = vector();
    assert_eq!(ExToken::decode(&bytes).unwrap().to_vec(), bytes);
}

#[test]
fn empty_address_validation_and_no_extensions() {
    let token = ExToken::decode(&[0x00]).unwrap();
    assert_eq!(token.address_validation(), b"");
    assert_eq!(token.extensions().count(), 0);
    assert_eq!(token.bdp(), None);
}

#[test]
fn unknown_extensions_survive_non_minimal_encodings() {
    // Address validation length 2 as a two-byte varint, unknown extension
    // 0x3fff with data "\x00\xff" and a four-byte length.
    let bytes = hex("4002 6869  7fff 80000002 00ff");
    let token = ExToken::decode(&bytes).unwrap();
    let unknown = ExtensionId::new(0x3fff).unwrap();
    assert_eq!(token.extension(unknown), Some(&[0x00, 0xff][..]));
    let minimal = token.to_vec();
    assert_eq!(minimal, hex("02 6869 7fff 02 00ff"));
    assert_eq!(
        ExToken::decode(&minimal).unwrap().extension(unknown),
        Some(&[0x00, 0xff][..])
    );
}

#[test]
fn duplicate_extension_ids_are_rejected() {
    let bytes = hex("00 1a00 1b00 1a01ff");
    assert_eq!(
        ExToken::decode(&bytes),
        Err(DecodeError::DuplicateExtension(
            ExtensionId::private_use(0).unwrap()
        ))
    );
    let mut b = ExTokenBuilder::new(b"").unwrap();
    b.extension(ExtensionId::BDP_TOKEN, b"").unwrap();
    assert_eq!(
        b.extension(ExtensionId::BDP_TOKEN, b"x").unwrap_err(),
        EncodeError::DuplicateExtension(ExtensionId::BDP_TOKEN)
    );
}

#[test]
fn every_truncation_of_the_vector_is_rejected() {
    let bytes = vector();
    // Cutting at an extension boundary leaves a valid, shorter token.
    let boundaries = [5, 21, 25, 27];
    for len in 0..bytes.len() {
        let result = ExToken::decode(&bytes[..len]);
        if boundaries.contains(&len) {
            assert!(result.is_ok(), "{len}");
        } else {
            assert_eq!(result, Err(DecodeError::Truncated), "{len}");
        }
    }
}

#[test]
fn maximum_token_size_is_enforced_both_ways() {
    let mut at_limit = vec![0x41, 0xfe]; // length 510
    at_limit.resize(MAX_TOKEN_LEN, 0xaa);
    assert_eq!(
        ExToken::decode(&at_limit)
            .unwrap()
            .address_validation()
            .len(),
        MAX_TOKEN_LEN - 2
    );
    at_limit.push(0);
    assert_eq!(
        ExToken::decode(&at_limit),
        Err(DecodeError::TooLong(MAX_TOKEN_LEN + 1))
    );

    let mut b = ExTokenBuilder::new(&[0; 400]).unwrap();
    b.extension(ExtensionId::BDP_TOKEN, &[0; 200]).unwrap();
    assert_eq!(b.finish(), Err(EncodeError::TooLong(2 + 400 + 1 + 2 + 200)));
    assert_eq!(
        ExTokenBuilder::new(&[0; MAX_TOKEN_LEN]).unwrap_err(),
        EncodeError::TooLong(MAX_TOKEN_LEN + 1)
    );
}

#[test]
fn extension_count_is_bounded_both_ways() {
    let mut b = ExTokenBuilder::new(b"").unwrap();
    for n in 0..MAX_EXTENSIONS as u64 {
        b.extension(ExtensionId::private_use(n).unwrap(), b"")
            .unwrap();
    }
    assert_eq!(
        b.extension(ExtensionId::BDP_TOKEN, b"").unwrap_err(),
        EncodeError::TooManyExtensions
    );
    let mut bytes = b.finish().unwrap();
    assert_eq!(
        ExToken::decode(&bytes).unwrap().extensions().count(),
        MAX_EXTENSIONS
    );
    bytes.extend_from_slice(&[0x01, 0x00]);
    assert_eq!(ExToken::decode(&bytes), Err(DecodeError::TooManyExtensions));
}

#[test]
fn malformed_bdp_data_is_reported_separately() {
    let truncated = hex("00 01 02 00 05");
    let token = ExToken::decode(&truncated).unwrap();
    assert_eq!(token.bdp(), Some(Err(BdpDecodeError::Truncated)));
    let trailing = hex("00 01 05 00 01 02 03 04");
    let token = ExToken::decode(&trailing).unwrap();
    assert_eq!(token.bdp(), Some(Err(BdpDecodeError::TrailingBytes)));
}

#[test]
fn grease_adds_one_reserved_extension_deterministically() {
    let build = |seed| {
        let mut b = ExTokenBuilder::new(b"av").unwrap();
        b.grease(&mut SimRng::new(seed)).unwrap();
        b.finish().unwrap()
    };
    assert_eq!(build(5), build(5));
    for seed in 0..64 {
        let bytes = build(seed);
        let token = ExToken::decode(&bytes).unwrap();
        let ext: Vec<_> = token.extensions().collect();
        assert_eq!(ext.len(), 1);
        assert!(ext[0].id.is_reserved(), "{}", ext[0].id);
        assert!(ext[0].id.value() < 1 << 14);
        assert!(ext[0].data.len() <= 4);
    }
}
