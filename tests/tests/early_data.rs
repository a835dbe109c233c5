//! Early data (0-RTT) against replay, through the patched quiche, cr-endpoint
//! and cr-serve's server as cr-server runs it: a captured first flight is
//! acted on at most once across servers sharing a guard (RFC 8446, section
//! 8; RFC 9001, section 9.2), and a token replayed from its address does not
//! validate it again (RFC 9000, section 8.1.4).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use std::time::Duration;

use cr_endpoint::ex_token::{KeyRing, MemoryGuard, SimRng, TokenKey, TokenServer};
use cr_endpoint::{EarlyData, ResumeConfig, ResumeServer, SharedGuard};
use cr_guard_redis::testing::RedisServer;
use cr_guard_redis::{RedisGuard, RedisGuardConfig};
use cr_serve::{Protocol, ServerSession};

const CERT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/cert.pem");
const KEY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/key.pem");
const REQUEST: &[u8] = b"GET /5000\r\n";

type Server = ResumeServer<SimRng, SharedGuard>;

fn client_addr() -> SocketAddr {
    "192.0.2.10:4000".parse().expect("address")
}

fn server_addr() -> SocketAddr {
    "198.51.100.1:443".parse().expect("address")
}

fn transport(config: &mut quiche::Config) {
    config
        .set_application_protos(&[Protocol::Hq.alpn()])
        .expect("alpn");
    config.verify_peer(false);
    config.set_initial_max_data(1 << 20);
    config.set_initial_max_stream_data_bidi_local(1 << 20);
    config.set_initial_max_stream_data_bidi_remote(1 << 20);
    config.set_initial_max_streams_bidi(10);
    config.grease(false);
}

/// A server of a fleet: the fleet's key ring (so each server opens the
/// others' tickets and tokens) and the guard it shares.
fn server(guard: &SharedGuard) -> (Server, quiche::Config) {
    let key = TokenKey::from_bytes(1, &[7; 32]).expect("key");
    let tokens = TokenServer::new(KeyRing::new(key), SimRng::new(3), Default::default());
    let server = ResumeServer::new(tokens, Arc::clone(guard), ResumeConfig::default());
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("version");
    config.load_cert_chain_from_pem_file(CERT).expect("cert");
    config.load_priv_key_from_pem_file(KEY).expect("key");
    transport(&mut config);
    server.configure(&mut config).expect("configure");
    (server, config)
}

fn memory_guard(capacity: usize) -> SharedGuard {
    Arc::new(MemoryGuard::new(capacity))
}

fn client_config() -> quiche::Config {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("version");
    transport(&mut config);
    config.enable_early_data();
    config
}

fn drain(conn: &mut quiche::Connection) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0; 65_536];
    while let Ok((len, _)) = conn.send(&mut buf) {
        out.push(buf[..len].to_vec());
    }
    out
}

/// A server connection of `server`, accepted from the first of `flight`
/// and fed all of it, served as cr-server serves; returns it and what it
/// sent.
fn serve_flight(
    server: &mut Server,
    config: &mut quiche::Config,
    flight: &[Vec<u8>],
) -> (ServerSession, Vec<Vec<u8>>) {
    let mut first = flight[0].clone();
    let header = quiche::Header::from_slice(&mut first, quiche::MAX_CONN_ID_LEN).expect("Initial");
    let token = header.token.clone().unwrap_or_default();
    let scid = quiche::ConnectionId::from_ref(&[0x5a; 16]);
    let wall = SystemTime::now();
    let accepted = server
        .accept(
            &scid,
            None,
            server_addr(),
            client_addr(),
            &token,
            config,
            wall,
        )
        .expect("accepted");
    let mut session = ServerSession::new(accepted, &header.dcid, Instant::now());
    let info = quiche::RecvInfo {
        from: client_addr(),
        to: server_addr(),
    };
    let mut sent = Vec::new();
    let mut serve = |session: &mut ServerSession, server: &mut Server| {
        session
            .serve(server, Instant::now(), wall, |conn| {
                let out = drain(conn);
                let n = out.len();
                sent.extend(out);
                Ok::<_, ()>(n)
            })
            .expect("served");
    };
    for datagram in flight {
        session.recv(server, &mut datagram.clone(), info);
        serve(&mut session, server);
    }
    // A guard across the network answers a little later: the loop comes
    // back for its answer, as cr-server's does.
    let asked = Instant::now();
    while session.claim_pending() && asked.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
        // Serving polls the guard's answers first.
        serve(&mut session, server);
    }
    (session, sent)
}

/// Moves every datagram between `client` and `session` until neither has
/// more to say.
fn converse(
    client: &mut quiche::Connection,
    server: &mut Server,
    session: &mut ServerSession,
    mut to_client: Vec<Vec<u8>>,
) {
    let wall = SystemTime::now();
    let to_server_info = quiche::RecvInfo {
        from: client_addr(),
        to: server_addr(),
    };
    let to_client_info = quiche::RecvInfo {
        from: server_addr(),
        to: client_addr(),
    };
    for _ in 0..20 {
        for mut datagram in to_client.drain(..) {
            let _ = client.recv(&mut datagram, to_client_info);
        }
        let to_server = drain(client);
        for mut datagram in to_server.clone() {
            session.recv(server, &mut datagram, to_server_info);
        }
        session
            .serve(server, Instant::now(), wall, |conn| {
                let out = drain(conn);
                let n = out.len();
                to_client.extend(out);
                Ok::<_, ()>(n)
            })
            .expect("served");
        if to_server.is_empty() && to_client.is_empty() {
            break;
        }
    }
}

/// A first connection to `server`: the client's TLS session (with a
/// ticket for early data) and its newest token.
fn first_connection(server: &mut Server, config: &mut quiche::Config) -> (Vec<u8>, Vec<u8>) {
    let mut client = client(0x01);
    let flight = drain(&mut client);
    let (mut session, to_client) = serve_flight(server, config, &flight);
    converse(&mut client, server, &mut session, to_client);
    assert!(client.is_established());
    let mut token = None;
    while let Some(t) = client.new_token_next() {
        token = Some(t);
    }
    let ticket = client.session().expect("a session ticket").to_vec();
    (ticket, token.expect("a token"))
}

/// A client whose connection IDs are made of `id`.
fn client(id: u8) -> quiche::Connection {
    let id = [id; 16];
    let scid = quiche::ConnectionId::from_ref(&id);
    quiche::connect(
        Some("quiche-cr.test"),
        &scid,
        client_addr(),
        server_addr(),
        &mut client_config(),
    )
    .expect("client")
}

/// A client resuming `ticket` (and presenting `token`), and its first
/// flight: its Initial and, in early data, its request.
fn resuming_client(
    id: u8,
    ticket: &[u8],
    token: Option<&[u8]>,
) -> (quiche::Connection, Vec<Vec<u8>>) {
    let mut client = client(id);
    client.set_session(ticket).expect("session");
    if let Some(token) = token {
        client.set_token(token).expect("token");
    }
    let mut flight = drain(&mut client);
    assert!(client.is_in_early_data());
    client
        .stream_send(0, REQUEST, true)
        .expect("request in early data");
    flight.extend(drain(&mut client));
    (client, flight)
}

/// The first flight of a client resuming `ticket` (and presenting `token`).
fn resumed_first_flight(ticket: &[u8], token: Option<&[u8]>) -> Vec<Vec<u8>> {
    resuming_client(0x02, ticket, token).1
}

/// Response bytes the server sent on stream 0, as seen by whoever holds
/// the keys: a server that acted on the request wrote its whole answer.
fn served_bytes(session: &ServerSession) -> u64 {
    session.report(Instant::now()).body_bytes
}

#[test]
fn a_captured_first_flight_is_acted_on_once_across_servers_sharing_a_guard() {
    let guard = memory_guard(64);
    let (mut server_a, mut config_a) = server(&guard);
    let (mut server_b, mut config_b) = server(&guard);
    let (ticket, _) = first_connection(&mut server_a, &mut config_a);
    let flight = resumed_first_flight(&ticket, None);

    // The client's own flight: early data accepted, the request answered
    // before the handshake completes (0.5-RTT).
    let (original, _) = serve_flight(&mut server_a, &mut config_a, &flight);
    assert_eq!(original.early_data(), EarlyData::Accepted);
    assert_eq!(served_bytes(&original), 5000);

    // The same bytes again, to the same server and to another of the
    // fleet: TLS accepts the early data (the ticket age is fine), the guard
    // says it was acted on, and nothing is served before a handshake a
    // replay never completes.
    for (server, config) in [
        (&mut server_a, &mut config_a),
        (&mut server_b, &mut config_b),
    ] {
        let (replayed, sent) = serve_flight(server, config, &flight);
        assert_eq!(replayed.early_data(), EarlyData::Replayed);
        assert_eq!(served_bytes(&replayed), 0);
        assert!(!sent.is_empty(), "the handshake goes on, in 1-RTT");
    }
    let metrics = server_a.metrics().snapshot();
    assert_eq!(
        (metrics.early_data_accepted, metrics.early_data_replayed),
        (1, 1)
    );

    // A server with a guard of its own cannot know: it acts on the flight.
    let (mut alone, mut config) = server(&memory_guard(64));
    let (unguarded, _) = serve_flight(&mut alone, &mut config, &flight);
    assert_eq!(unguarded.early_data(), EarlyData::Accepted);
}

#[test]
fn a_full_guard_refuses_early_data_and_the_request_waits_for_the_handshake() {
    let roomy = memory_guard(64);
    let (mut server_a, mut config_a) = server(&roomy);
    let (ticket, _) = first_connection(&mut server_a, &mut config_a);
    let flight = resumed_first_flight(&ticket, None);

    let (mut full, mut config) = server(&memory_guard(0));
    let (session, _) = serve_flight(&mut full, &mut config, &flight);
    assert_eq!(session.early_data(), EarlyData::GuardUnavailable);
    assert_eq!(served_bytes(&session), 0);
}

#[test]
fn a_replayed_token_does_not_validate_its_address_again() {
    let guard = memory_guard(64);
    let (mut server, mut config) = server(&guard);
    let (ticket, token) = first_connection(&mut server, &mut config);
    let flight = resumed_first_flight(&ticket, Some(&token));
    let received: usize = flight.iter().map(Vec::len).sum();

    let (original, _) = serve_flight(&mut server, &mut config, &flight);
    assert!(original.conn_ref().is_server());
    assert!(original.report(Instant::now()).address_validated);

    // An attacker replays the victim's first flight from the victim's
    // address: the server answers that address with at most three times
    // what it received (RFC 9000, section 8.1), however large the answer.
    let (replayed, sent) = serve_flight(&mut server, &mut config, &flight);
    assert!(!replayed.report(Instant::now()).address_validated);
    let sent: usize = sent.iter().map(Vec::len).sum();
    assert!(
        sent <= 3 * received,
        "{sent} B sent for {received} B received"
    );
    assert_eq!(server.metrics().snapshot().address_tokens_replayed, 1);
}

#[test]
fn a_fleet_on_redis_acts_on_a_first_flight_once_and_refuses_early_data_without_redis() {
    let mut redis = RedisServer::start();
    let redis_guard = |url: &str| -> SharedGuard {
        let config = RedisGuardConfig {
            claim_timeout: Duration::from_millis(500),
            ..Default::default()
        };
        Arc::new(RedisGuard::connect(url, config).expect("the guard"))
    };
    let (mut server_a, mut config_a) = server(&redis_guard(&redis.url()));
    let (mut server_b, mut config_b) = server(&redis_guard(&redis.url()));
    let (ticket, _) = first_connection(&mut server_a, &mut config_a);
    let flight = resumed_first_flight(&ticket, None);

    let (first, _) = serve_flight(&mut server_b, &mut config_b, &flight);
    assert_eq!(first.early_data(), EarlyData::Accepted);
    assert_eq!(served_bytes(&first), 5000);
    let (replayed, _) = serve_flight(&mut server_a, &mut config_a, &flight);
    assert_eq!(replayed.early_data(), EarlyData::Replayed);
    assert_eq!(served_bytes(&replayed), 0);

    // Redis stopped: early data is refused (the guard cannot tell), and
    // the client's connection completes in 1-RTT all the same.
    redis.stop();
    let (ticket, _) = first_connection(&mut server_a, &mut config_a);
    let (mut client, flight) = resuming_client(0x03, &ticket, None);
    let (mut unchecked, to_client) = serve_flight(&mut server_a, &mut config_a, &flight);
    assert_eq!(unchecked.early_data(), EarlyData::GuardUnavailable);
    assert_eq!(served_bytes(&unchecked), 0);
    converse(&mut client, &mut server_a, &mut unchecked, to_client);
    assert!(client.is_established());
    assert_eq!(served_bytes(&unchecked), 5000);
}
