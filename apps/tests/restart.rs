//! A cr-server that restarted still answers for the connections of the
//! process before it: a client that sends on a connection the new process
//! never had gets a stateless reset, made from the token key ring both
//! processes read, and closes at once instead of waiting out its idle
//! timeout. Real sockets on loopback, a few hundred milliseconds.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use cr_apps::keys::KeyMaterial;
use cr_apps::{Protocol, Server, ServerHandle, ServerOptions};
use cr_endpoint::ex_token::{KeyRing, TokenKey};

/// How long the client waits for an answer before the test fails.
const PATIENCE: Duration = Duration::from_secs(5);

fn server(listen: SocketAddr, key: &KeyMaterial) -> ServerHandle {
    let options = ServerOptions {
        listen,
        token_keys: KeyRing::new(TokenKey::from_bytes(key.id, &key.bytes).expect("key")),
        ..support::server_options()
    };
    ServerHandle::spawn(Server::bind(options).expect("server")).expect("thread")
}

/// Sends what `conn` has to send, then feeds it what arrives until `done`
/// holds or `patience` runs out.
fn exchange(
    socket: &UdpSocket,
    conn: &mut quiche::Connection,
    done: impl Fn(&quiche::Connection) -> bool,
    patience: Duration,
) {
    let local = socket.local_addr().expect("address");
    let give_up = Instant::now() + patience;
    let mut buf = [0u8; 65_535];
    while !done(conn) && Instant::now() < give_up {
        while let Ok((len, info)) = conn.send(&mut buf) {
            socket.send_to(&buf[..len], info.to).expect("send");
        }
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                let info = quiche::RecvInfo { from, to: local };
                let _ = conn.recv(&mut buf[..len], info);
            }
            Err(_) => conn.on_timeout(),
        }
    }
}

#[test]
fn a_restarted_server_resets_the_connections_of_the_process_before_it() {
    let key = KeyMaterial::generate(4).expect("key");
    let first = server("127.0.0.1:0".parse().expect("address"), &key);
    let addr = first.local_addr();

    let socket = UdpSocket::bind("127.0.0.1:0").expect("client socket");
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
    config.verify_peer(false);
    config
        .set_application_protos(&[Protocol::Hq.alpn()])
        .expect("alpn");
    config.set_max_idle_timeout(30_000);
    config.set_initial_max_data(1 << 20);
    config.set_initial_max_stream_data_bidi_local(1 << 20);
    config.set_initial_max_streams_bidi(10);
    let scid = quiche::ConnectionId::from_ref(&[0x5a; 16]);
    let local = socket.local_addr().expect("address");
    let mut conn =
        quiche::connect(Some("localhost"), &scid, local, addr, &mut config).expect("connect");
    exchange(&socket, &mut conn, |c| c.is_established(), PATIENCE);
    assert!(conn.is_established(), "handshake with the first process");
    // Until the handshake is confirmed (HANDSHAKE_DONE) and the client
    // sends only short headers, the packets a reset answers.
    exchange(&socket, &mut conn, |_| false, Duration::from_millis(200));

    // The process stops and another starts on its port with the same keys.
    first.stop().expect("first process");
    let _second = server(addr, &key);
    conn.stream_send(0, b"GET /1000\r\n", true)
        .expect("request");
    let sent = Instant::now();
    exchange(&socket, &mut conn, |c| c.is_closed(), PATIENCE);

    assert!(conn.is_closed(), "no reset within {PATIENCE:?}");
    assert!(!conn.is_timed_out());
    assert!(
        conn.peer_error().is_none(),
        "closed by a reset, not a CONNECTION_CLOSE"
    );
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
}
