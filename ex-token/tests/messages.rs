//! What the crate's errors and outcomes say when a server logs them: each
//! names its cause and the values involved, and nothing secret (a key's
//! Debug shows its id, never its bytes).

use ex_token::{
    BdpDecodeError, DecodeError, EncodeError, ExtensionId, Extras, InvalidToken, KeyError,
    LowerError, MintError, NoResume, OpenError, RandomError, TokenKey, TokenRejected,
    BDP_TOKEN_ERROR, EX_TOKEN_ERROR, KEY_LEN, MAX_EXTENSIONS, MAX_TOKEN_LEN,
};

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[test]
fn token_structure_errors() {
    let id = ExtensionId::private_use(0).unwrap();
    assert_eq!(text(id), "0x1a");
    assert_eq!(text(ExtensionId::BDP_TOKEN), "0x1");
    assert_eq!(
        text(DecodeError::TooLong(9000)),
        format!("token of 9000 bytes exceeds {MAX_TOKEN_LEN}")
    );
    assert_eq!(text(DecodeError::Truncated), "token truncated");
    assert_eq!(
        text(DecodeError::DuplicateExtension(id)),
        "extension 0x1a appears twice"
    );
    assert_eq!(
        text(DecodeError::TooManyExtensions),
        format!("more than {MAX_EXTENSIONS} extensions")
    );
    assert_eq!(
        text(EncodeError::TooLong(9000)),
        format!("token of 9000 bytes exceeds {MAX_TOKEN_LEN}")
    );
    assert_eq!(
        text(EncodeError::ValueTooLarge(1 << 62)),
        "4611686018427387904 does not fit in a varint"
    );
    assert_eq!(
        text(EncodeError::DuplicateExtension(ExtensionId::BDP_TOKEN)),
        "extension 0x1 added twice"
    );
    assert_eq!(
        text(EncodeError::TooManyExtensions),
        format!("more than {MAX_EXTENSIONS} extensions")
    );
    assert_eq!(text(EncodeError::Random), "random source failed");
    assert_eq!(
        text(BdpDecodeError::Truncated),
        "BDP_TOKEN extension truncated"
    );
    assert_eq!(
        text(BdpDecodeError::TrailingBytes),
        "bytes after Requested Capacity"
    );
}

#[test]
fn key_and_sealing_errors() {
    assert_eq!(
        text(KeyError::Length(16)),
        format!("key material is 16 bytes, not {KEY_LEN}")
    );
    assert_eq!(text(KeyError::Random), "random source failed");
    assert_eq!(text(KeyError::DuplicateId(4)), "key id 4 already in use");
    assert_eq!(
        text(OpenError::BadLength(3)),
        "sealed box of impossible length 3"
    );
    assert_eq!(text(OpenError::UnknownKey(9)), "unknown key id 9");
    assert_eq!(text(OpenError::Forged), "authentication failed");
    assert_eq!(text(RandomError), "random source failed");
}

#[test]
fn minting_errors() {
    assert_eq!(text(MintError::Random), "random source failed");
    assert_eq!(text(MintError::Seal), "sealing failed");
    assert_eq!(text(MintError::ZeroCapacity), "capacity is zero");
    assert_eq!(
        text(MintError::ExtrasTooLong(40)),
        "40 bytes of extras is too many"
    );
    assert_eq!(
        text(MintError::Encode(EncodeError::Random)),
        "encoding failed: random source failed"
    );
}

#[test]
fn client_errors() {
    assert_eq!(
        text(LowerError::Malformed(DecodeError::Truncated)),
        "malformed token: token truncated"
    );
    assert_eq!(text(LowerError::NoBdpToken), "no BDP_TOKEN extension");
    assert_eq!(
        text(LowerError::MalformedBdp(BdpDecodeError::TrailingBytes)),
        "malformed BDP_TOKEN: bytes after Requested Capacity"
    );
}

#[test]
fn why_a_connection_does_not_resume() {
    let cases = [
        (NoResume::Absent, "no saved capacity in the token"),
        (NoResume::Unprotected, "saved capacity not sealed by us"),
        (NoResume::Expired, "saved capacity expired"),
        (
            NoResume::ClockSkew,
            "saved capacity measured ahead of this server's clock",
        ),
        (NoResume::AddressMismatch, "client is on another network"),
        (
            NoResume::OtherSite,
            "saved capacity measured by another site",
        ),
        (NoResume::Superseded, "a newer saved capacity supersedes it"),
        (NoResume::Revoked, "saved capacity revoked after a retreat"),
        (
            NoResume::RequestedZero,
            "client opted out (requested capacity 0)",
        ),
        (
            NoResume::AlreadyInUse,
            "saved capacity already used by another connection",
        ),
        (
            NoResume::GuardUnavailable,
            "the guard could not confirm the saved set is unused",
        ),
        (
            NoResume::Invalid(InvalidToken::ZeroCapacity),
            "invalid token (capacity is zero)",
        ),
    ];
    for (why, said) in cases {
        assert_eq!(text(why), said);
    }
}

#[test]
fn invalid_tokens_and_their_rejection() {
    let cases = [
        (
            InvalidToken::Structure(DecodeError::Truncated),
            "malformed token: token truncated",
        ),
        (
            InvalidToken::BdpStructure(BdpDecodeError::Truncated),
            "malformed BDP_TOKEN: BDP_TOKEN extension truncated",
        ),
        (
            InvalidToken::Sealing(OpenError::Forged),
            "sealed data rejected: authentication failed",
        ),
        (InvalidToken::Payload, "sealed data has an unknown layout"),
        (InvalidToken::ZeroCapacity, "capacity is zero"),
    ];
    for (reason, said) in cases {
        assert_eq!(text(reason), said);
    }
    let rejected = TokenRejected {
        error_code: BDP_TOKEN_ERROR,
        reason: InvalidToken::Sealing(OpenError::UnknownKey(2)),
    };
    assert_eq!(
        text(rejected),
        "token rejected (0x143414213370003): sealed data rejected: unknown key id 2"
    );
    assert_eq!(EX_TOKEN_ERROR, 0x0143_4142_1337_0002);
}

#[test]
fn debug_output_shows_no_key_material() {
    let key = TokenKey::from_bytes(7, &[0xab; KEY_LEN]).unwrap();
    let shown = format!("{key:?}");
    assert_eq!(shown, "TokenKey { id: 7 }");
    assert!(!shown.contains("171"), "{shown}");
}

#[test]
fn extras_debug_as_their_bytes() {
    let extras = Extras::new(b"\x01\x02").unwrap();
    assert_eq!(format!("{extras:?}"), "Extras([1, 2])");
    assert_eq!(format!("{:?}", Extras::default()), "Extras([])");
}
