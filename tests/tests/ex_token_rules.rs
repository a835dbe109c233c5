//! draft-misell-quic-ex-token's client and server rules on the wire, between
//! quiche connections in memory: a client reads or changes a token only when
//! the server that sent it announced `ex_token`, keeps and echoes any other
//! token (and one it cannot decode) byte for byte, and a strict server
//! closes a connection presenting a malformed token with the draft's error
//! code, which the client sees in the CONNECTION_CLOSE.
//!
//! The strict close reaches the client only when the server closes after
//! its first flight: quiche marks a connection that has received nothing
//! closed at once (no CONNECTION_CLOSE is ever sent), and a server that has
//! received the client's Initial but sent nothing fails to send one
//! (`send` returns `CryptoFail`). `ResumeServer::accept` closes before the
//! Initial is processed, so through it the client never learns the code;
//! that test is ignored until the server defers the close.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use cr_endpoint::ex_token::{
    self, BdpToken, DecodeError, ExToken, ExTokenBuilder, ExtensionId, InvalidToken, KeyRing,
    MemoryGuard, Policy, SavedPath, SimRng, TokenKey, TokenServer, BDP_TOKEN_ERROR, EX_TOKEN_ERROR,
};
use cr_endpoint::{ClientConfig, RequestedCapacity, ResumeClient, ResumeServer};
use quiche::test_utils::{emit_flight, process_flight};
use quiche_cr_tests::{resuming_client, wall_start, CLIENT, SERVER, SERVER_NAME};

/// The saved Capacity of the BDP tokens the servers hand out: twice it is
/// more than the client's base credit, so the credit shows whether the
/// client read it.
const CAPACITY: u64 = 10_000_000;
/// The client's base flow-control credit ([`ClientConfig::default`]).
const BASE_CREDIT: u64 = 16 * 1024 * 1024;
/// More exchanges than any handshake here needs.
const MAX_EXCHANGES: usize = 16;

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("address")
}

/// Runs the test on quiche's virtual clock, so no timer fires between
/// exchanges and every run sends the same packets at the same times.
struct VirtualClock;

impl VirtualClock {
    fn start() -> Self {
        quiche::clock::set(Instant::now() + Duration::from_secs(86_400));
        quiche::seeded_random::seed(5);
        VirtualClock
    }
}

impl Drop for VirtualClock {
    fn drop(&mut self) {
        quiche::clock::unset();
        quiche::seeded_random::unseed();
    }
}

/// A token server of quiche-cr's format, minting what a server hands out.
fn token_server(policy: Policy) -> TokenServer<SimRng> {
    let mut rng = SimRng::new(3);
    let key = TokenKey::generate(1, &mut rng).expect("key");
    let config = ex_token::ServerConfig {
        policy,
        ..ex_token::ServerConfig::default()
    };
    TokenServer::new(KeyRing::new(key), rng, config)
}

/// A BDP token for the client, Requested Capacity equal to Capacity.
fn bdp_token() -> Vec<u8> {
    bdp_token_of(CAPACITY)
}

/// A BDP token whose saved Capacity is `capacity`.
fn bdp_token_of(capacity: u64) -> Vec<u8> {
    let mut tokens = token_server(Policy::Lenient);
    let set = tokens
        .new_saved_set(addr(CLIENT), wall_start())
        .expect("set");
    let saved = SavedPath {
        capacity,
        rtt: Duration::from_millis(100),
        extras: b"",
    };
    tokens
        .mint_bdp_token(addr(CLIENT), &saved, &set)
        .expect("token")
}

/// A token that is no extensible token at all: its Address Validation
/// Length promises more bytes than follow.
fn truncated_token() -> Vec<u8> {
    vec![0x40]
}

/// A well-formed extensible token whose BDP_TOKEN extension is cut short.
fn broken_bdp_token() -> Vec<u8> {
    let mut builder = ExTokenBuilder::new(b"").expect("builder");
    builder
        .extension(ExtensionId::BDP_TOKEN, &[0x00, 0x01])
        .expect("extension");
    builder.finish().expect("token")
}

/// A server configuration that announces `ex_token`, or not.
fn server_config(announce: bool) -> quiche::Config {
    let mut config = quiche_cr_tests::config(true, quiche::CongestionControlAlgorithm::CUBIC);
    if announce {
        config
            .set_ex_token(ex_token::TP_EX_TOKEN, ex_token::EX_TOKEN_ENABLED)
            .expect("ex_token");
    }
    config
}

/// Moves every packet each side has to send to the other, until neither
/// has anything left (at most [`MAX_EXCHANGES`] times). A side that refuses
/// a packet (a closed connection) simply drops it.
fn exchange(client: &mut quiche::Connection, server: &mut quiche::Connection) {
    for _ in 0..MAX_EXCHANGES {
        let to_server = emit_flight(client).unwrap_or_default();
        let sent = !to_server.is_empty();
        for packet in to_server {
            process_flight(server, vec![packet]).ok();
        }
        let to_client = emit_flight(server).unwrap_or_default();
        if !sent && to_client.is_empty() {
            return;
        }
        for packet in to_client {
            process_flight(client, vec![packet]).ok();
        }
    }
}

fn accept(config: &mut quiche::Config, id: u8) -> quiche::Connection {
    let scid = quiche::ConnectionId::from_vec(vec![id; 16]);
    quiche::accept(&scid, None, addr(SERVER), addr(CLIENT), config).expect("accept")
}

/// One connection of `client` to a server that announces `ex_token` or
/// not and sends `tokens` in NEW_TOKEN frames once the handshake is
/// complete; the client keeps them as its loop would.
fn receive_tokens(client: &mut ResumeClient, announce: bool, tokens: &[Vec<u8>]) {
    let mut conn = resuming_client(client, 0x01);
    let mut server = accept(&mut server_config(announce), 0x02);
    exchange(&mut conn, &mut server);
    assert!(conn.is_established() && server.is_established());
    assert_eq!(cr_endpoint::announced_ex_token(&conn), announce);
    for token in tokens {
        server.send_new_token(token).expect("NEW_TOKEN");
    }
    exchange(&mut conn, &mut server);
    client.on_progress(&mut conn, SERVER_NAME, addr(SERVER), wall_start());
}

/// What the client's next connection presents: the token of its Initial,
/// and the connection-level credit the server sees in its transport
/// parameters.
fn next_connection(client: &mut ResumeClient) -> (Option<Vec<u8>>, u64) {
    let mut conn = resuming_client(client, 0x03);
    let mut flight = emit_flight(&mut conn).expect("an Initial");
    let (mut initial, info) = flight.remove(0);
    let hdr = quiche::Header::from_slice(&mut initial, quiche::MAX_CONN_ID_LEN).expect("header");
    let token = hdr.token.filter(|token| !token.is_empty());

    let mut server = accept(&mut server_config(false), 0x04);
    process_flight(&mut server, vec![(initial, info)]).expect("the Initial");
    process_flight(&mut server, flight).expect("the rest of the flight");
    exchange(&mut conn, &mut server);
    let credit = server
        .peer_transport_params()
        .expect("the client's parameters")
        .initial_max_data;
    (token, credit)
}

/// `token` with its Requested Capacity lowered to `requested`, as an
/// extensible-token-aware client writes it.
fn lowered(token: &[u8], requested: u64) -> Vec<u8> {
    let mut token = token.to_vec();
    ex_token::lower_requested_capacity(&mut token, requested).expect("a BDP token");
    token
}

fn requested_capacity(token: &[u8]) -> u64 {
    let decoded = ExToken::decode(token).expect("an extensible token");
    let bdp: BdpToken<'_> = decoded.bdp().expect("BDP_TOKEN").expect("well formed");
    bdp.requested_capacity
}

#[test]
fn requested_capacity_is_rewritten_only_in_tokens_of_a_server_that_announced_ex_token() {
    let _clock = VirtualClock::start();
    let token = bdp_token();
    // (policy, Requested Capacity presented when ex_token was announced)
    let cases = [
        (RequestedCapacity::AsSaved, CAPACITY),
        (RequestedCapacity::AtMost(4_000_000), 4_000_000),
        (RequestedCapacity::AtMost(20_000_000), CAPACITY),
        (RequestedCapacity::OptOut, 0),
    ];
    for (policy, requested) in cases {
        let config = ClientConfig {
            requested_capacity: policy,
            ..ClientConfig::default()
        };

        let mut client = ResumeClient::new(config);
        receive_tokens(&mut client, true, std::slice::from_ref(&token));
        let (presented, _) = next_connection(&mut client);
        let presented = presented.expect("a token");
        assert_eq!(presented, lowered(&token, requested), "{policy:?}");
        assert_eq!(requested_capacity(&presented), requested, "{policy:?}");

        // The same bytes from a server that did not announce ex_token are
        // opaque: they go back as they came, whatever the policy.
        let mut client = ResumeClient::new(config);
        receive_tokens(&mut client, false, std::slice::from_ref(&token));
        let (presented, _) = next_connection(&mut client);
        assert_eq!(presented.as_deref(), Some(token.as_slice()), "{policy:?}");
    }
}

#[test]
fn only_the_capacity_of_a_token_from_an_announcing_server_sizes_the_credit() {
    let _clock = VirtualClock::start();
    let token = bdp_token();

    let mut client = ResumeClient::new(ClientConfig::default());
    receive_tokens(&mut client, true, std::slice::from_ref(&token));
    let (_, credit) = next_connection(&mut client);
    assert_eq!(credit, 2 * CAPACITY);

    let mut client = ResumeClient::new(ClientConfig::default());
    receive_tokens(&mut client, false, std::slice::from_ref(&token));
    let (_, credit) = next_connection(&mut client);
    assert_eq!(credit, BASE_CREDIT, "an opaque token is not read");

    // Without a token at all, the base credit.
    let mut client = ResumeClient::new(ClientConfig::default());
    let (presented, credit) = next_connection(&mut client);
    assert_eq!((presented, credit), (None, BASE_CREDIT));
}

#[test]
fn a_token_raises_the_credit_no_further_than_the_clients_bound() {
    let _clock = VirtualClock::start();
    // The largest Capacity a token can carry (a QUIC varint), as a
    // malicious server would write it.
    let token = bdp_token_of((1 << 62) - 1);
    let mut client = ResumeClient::new(ClientConfig::default());
    receive_tokens(&mut client, true, std::slice::from_ref(&token));
    let (_, credit) = next_connection(&mut client);
    assert_eq!(credit, 64 * 1024 * 1024);
}

#[test]
fn a_token_the_client_cannot_decode_is_kept_and_presented_unmodified() {
    let _clock = VirtualClock::start();
    // A client that would rewrite any BDP token it could read.
    let config = ClientConfig {
        requested_capacity: RequestedCapacity::OptOut,
        ..ClientConfig::default()
    };
    let mut client = ResumeClient::new(config);
    let undecodable = [truncated_token(), broken_bdp_token()];
    receive_tokens(&mut client, true, &undecodable);
    assert_eq!(client.store().len(), 2, "both tokens are kept");

    // Newest first, each once, byte for byte, and neither read for credit.
    for expected in undecodable.iter().rev() {
        let (presented, credit) = next_connection(&mut client);
        assert_eq!(presented.as_ref(), Some(expected));
        assert_eq!(credit, BASE_CREDIT);
    }
    assert!(client.store().is_empty());
}

/// How the server's loop hands a new connection to the [`ResumeServer`].
#[derive(Clone, Copy, Debug)]
enum Integration {
    /// [`ResumeServer::accept`] with the Initial's token, then `recv`.
    Accept,
    /// `quiche::accept`, `recv` of the client's first flight, `send` of the
    /// server's, then [`ResumeServer::resume_connection`] with the token.
    AfterTheFirstFlight,
}

/// A quiche client presents `token` in its Initial to a [`ResumeServer`]
/// under `policy`; returns the client connection after the exchange, and
/// whether the server connection is closed.
fn present(token: &[u8], policy: Policy, integration: Integration) -> (quiche::Connection, bool) {
    let mut server = ResumeServer::new(
        token_server(policy),
        MemoryGuard::new(16),
        cr_endpoint::ResumeConfig::default(),
    );
    let mut config = server_config(false);
    server.configure(&mut config).expect("ex_token");

    let mut client = quiche_cr_tests::opaque_client(Some(token), 0x05);
    let flight = emit_flight(&mut client).expect("an Initial");
    let mut first = flight[0].0.clone();
    let hdr = quiche::Header::from_slice(&mut first, quiche::MAX_CONN_ID_LEN).expect("header");
    assert_eq!(hdr.token.as_deref(), Some(token), "the Initial carries it");

    let scid = quiche::ConnectionId::from_vec(vec![0x06; 16]);
    let (mut conn, mut session) = match integration {
        Integration::Accept => {
            let mut accepted = server
                .accept(
                    &scid,
                    None,
                    addr(SERVER),
                    addr(CLIENT),
                    token,
                    &mut config,
                    wall_start(),
                )
                .expect("accept");
            process_flight(&mut accepted.conn, flight).ok();
            (accepted.conn, accepted.session)
        }
        Integration::AfterTheFirstFlight => {
            let mut conn = accept(&mut config, 0x06);
            process_flight(&mut conn, flight).expect("the Initial");
            let reply = emit_flight(&mut conn).expect("the server's first flight");
            process_flight(&mut client, reply).expect("the server's first flight");
            let session = server
                .resume_connection(&mut conn, addr(CLIENT), token, wall_start())
                .expect("resume_connection");
            (conn, session)
        }
    };
    for _ in 0..2 {
        server.on_progress(&mut conn, &mut session, wall_start());
        exchange(&mut client, &mut conn);
    }
    let closed = conn.is_closed() || conn.is_draining();
    (client, closed)
}

fn strict_close_on_the_wire(integration: Integration) {
    let _clock = VirtualClock::start();
    let mut forged = bdp_token();
    // Flip a bit of the sealed address validation part.
    forged[5] ^= 0x01;
    let cases = [
        (
            truncated_token(),
            EX_TOKEN_ERROR,
            InvalidToken::Structure(DecodeError::Truncated),
        ),
        (
            broken_bdp_token(),
            BDP_TOKEN_ERROR,
            InvalidToken::BdpStructure(ex_token::BdpDecodeError::Truncated),
        ),
        (
            forged,
            EX_TOKEN_ERROR,
            InvalidToken::Sealing(ex_token::OpenError::Forged),
        ),
    ];
    for (token, error_code, reason) in cases {
        let (client, server_closed) = present(&token, Policy::Strict, integration);
        assert_eq!(
            client.peer_error(),
            Some(&quiche::ConnectionError {
                is_app: false,
                error_code,
                reason: reason.to_string().into_bytes(),
            }),
            "{reason}"
        );
        assert!(client.is_draining(), "{reason}: the client stops too");
        assert!(server_closed, "{reason}");
    }
}

#[test]
fn a_strict_server_closes_on_a_malformed_token_with_the_drafts_error_code() {
    strict_close_on_the_wire(Integration::AfterTheFirstFlight);
}

#[test]
fn a_strict_server_closes_on_the_wire_when_the_token_comes_through_accept() {
    strict_close_on_the_wire(Integration::Accept);
}

#[test]
fn a_lenient_server_treats_a_malformed_token_as_absent() {
    let _clock = VirtualClock::start();
    for token in [truncated_token(), broken_bdp_token()] {
        let (client, server_closed) = present(&token, Policy::Lenient, Integration::Accept);
        assert!(client.is_established());
        assert_eq!(client.peer_error(), None);
        assert!(!server_closed);
    }
}

/// Only a current token of ours lets an Initial skip Retry: authentic,
/// unexpired, and validating the client's address or carrying a saved set
/// of its network. A token that merely decodes as an extensible token (a
/// single 0x00 byte does: an empty address part, no extension) counts as
/// none, as do another server's, an expired one and a client's from another
/// network; the answers are the same under either policy.
#[test]
fn only_a_current_token_of_ours_lets_an_initial_skip_retry() {
    for policy in [Policy::Lenient, Policy::Strict] {
        let server = ResumeServer::new(
            token_server(policy),
            MemoryGuard::new(16),
            cr_endpoint::ResumeConfig::default(),
        );
        let now = wall_start();
        let client = addr(CLIENT);
        let token = bdp_token();
        assert!(server.recognizes(&token, client, now), "{policy:?}");
        // The client's address changed within its network: its saved set
        // still counts (the address part does not).
        let moved = addr("192.0.2.77:4433");
        assert!(server.recognizes(&token, moved, now), "{policy:?}");

        assert!(ExToken::decode(&[0x00]).is_ok());
        let another_server = {
            let mut tokens = TokenServer::new(
                KeyRing::new(TokenKey::generate(1, &mut SimRng::new(9)).expect("key")),
                SimRng::new(9),
                ex_token::ServerConfig::default(),
            );
            tokens
                .mint_address_token(client, now, Duration::from_secs(3600))
                .expect("token")
        };
        let two_hours_later = now + Duration::from_secs(2 * 3600);
        let refused: [(&str, &[u8], SocketAddr, SystemTime); 6] = [
            ("no token", &[], client, now),
            ("one byte", &[0x00], client, now),
            ("truncated", &truncated_token(), client, now),
            ("another server's", &another_server, client, now),
            ("expired", &token, client, two_hours_later),
            ("another network", &token, addr("198.51.100.7:4433"), now),
        ];
        for (what, token, peer, at) in refused {
            assert!(!server.recognizes(token, peer, at), "{policy:?}: {what}");
        }
    }
}
