//! Stateless resets through quiche: a client whose server lost the
//! connection (a restart) closes at the reset the next process of that
//! server, holding the same key ring, sends, instead of waiting out its
//! idle timeout; a reset made under another key is ignored, and another
//! server of the fleet sends none.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cr_endpoint::ex_token::{KeyRing, SimRng, TokenKey, KEY_LEN};
use cr_endpoint::reset::{self, Issuer};
use quiche::test_utils::Pipe;
use quiche_cr_tests::{config, drain, CLIENT, SERVER, SERVER_NAME};

fn ring(material: u8) -> KeyRing {
    KeyRing::new(TokenKey::from_bytes(3, &[material; KEY_LEN]).expect("key"))
}

/// Server `server`'s process started `ms` milliseconds into 2026.
fn issuer(server: u8, ms: u64) -> Issuer {
    Issuer::new(
        server,
        UNIX_EPOCH + Duration::from_millis(1_767_225_600_000 + ms),
    )
}

/// The process that served the lost connection: server 1.
fn before() -> Issuer {
    issuer(1, 0)
}

fn addr(a: &str) -> SocketAddr {
    a.parse().expect("address")
}

/// A connection established between a client and a server whose ID and
/// reset token come from `keys`; returns the client once the server is
/// gone, and the datagram the client then sends (a request).
fn client_of_a_lost_server(keys: &KeyRing) -> (quiche::Connection, Vec<u8>) {
    let cc = quiche::CongestionControlAlgorithm::CUBIC;
    let cid = reset::connection_id(keys, &before(), &mut SimRng::new(5)).expect("id");
    let mut server_config = config(true, cc);
    server_config.set_stateless_reset_token(reset::reset_token(keys, &cid));
    let scid = quiche::ConnectionId::from_ref(&cid);
    let server = quiche::accept(&scid, None, addr(SERVER), addr(CLIENT), &mut server_config)
        .expect("accept");
    let client_scid = quiche::ConnectionId::from_ref(&[0xc1; 16]);
    let client = quiche::connect(
        Some(SERVER_NAME),
        &client_scid,
        addr(CLIENT),
        addr(SERVER),
        &mut config(false, cc),
    )
    .expect("connect");
    let mut pipe = Pipe { client, server };
    pipe.handshake().expect("handshake");
    // HANDSHAKE_DONE too: from then on the client sends short headers.
    pipe.advance().expect("handshake confirmed");
    // The server goes away.
    let Pipe { mut client, .. } = pipe;
    client.stream_send(0, b"GET /1000", true).expect("request");
    let mut sent = drain(&mut client);
    assert_eq!(sent.len(), 1);
    (client, sent.remove(0))
}

/// The stateless reset `issuer`, holding `keys`, answers `request` with.
fn reset_of(keys: &KeyRing, issuer: &Issuer, request: &[u8]) -> Option<Vec<u8>> {
    let header = quiche::Header::from_slice(&mut request.to_vec(), reset::CONNECTION_ID_LEN)
        .expect("short header");
    let mut out = [0u8; 1500];
    let len = reset::stateless_reset(
        keys,
        issuer,
        &header.dcid,
        request.len(),
        &mut SimRng::new(9),
        &mut out,
    )?;
    Some(out[..len].to_vec())
}

fn answer(keys: &KeyRing, client: &mut quiche::Connection, request: &[u8]) {
    // The next process of the same server.
    let mut out = reset_of(keys, &issuer(1, 5_000), request).expect("a reset");
    let len = out.len();
    assert!(len < request.len());
    let info = quiche::RecvInfo {
        from: addr(SERVER),
        to: addr(CLIENT),
    };
    // The reset does not decrypt: quiche says so, then checks its token.
    let _ = client.recv(&mut out[..len], info);
}

#[test]
fn a_client_closes_at_once_on_the_reset_of_a_server_with_the_same_keys() {
    let (mut client, request) = client_of_a_lost_server(&ring(1));
    // The restarted server reads the same key file.
    answer(&ring(1), &mut client, &request);
    assert!(client.is_closed(), "the reset closed the connection");
    assert!(!client.is_timed_out());
    assert!(client.peer_error().is_none() && client.local_error().is_none());
}

#[test]
fn another_server_of_the_fleet_sends_no_reset() {
    let (mut client, request) = client_of_a_lost_server(&ring(1));
    // Server 2 holds the same key ring, and started later: were it to
    // answer, whoever sent it a connection ID of server 1 would get that
    // connection's reset token.
    assert_eq!(reset_of(&ring(1), &issuer(2, 5_000), &request), None);
    // Nor does the process that issued the ID, nor one that started
    // before it.
    assert_eq!(reset_of(&ring(1), &before(), &request), None);
    assert_eq!(
        reset_of(&ring(1), &Issuer::new(1, SystemTime::UNIX_EPOCH), &request),
        None
    );
    assert!(!client.is_closed());
    // The same server's next process does.
    answer(&ring(1), &mut client, &request);
    assert!(client.is_closed());
}

#[test]
fn a_reset_under_another_key_is_ignored() {
    let (mut client, request) = client_of_a_lost_server(&ring(1));
    answer(&ring(2), &mut client, &request);
    assert!(!client.is_closed());
}
