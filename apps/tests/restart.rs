//! A cr-server that restarted still answers for the connections of the
//! process before it: a client that sends on a connection the new process
//! never had gets a stateless reset, made from the token key ring both
//! processes read, and closes at once instead of waiting out its idle
//! timeout, or, when it is in the middle of a download and hears nothing,
//! at its next keep-alive PING. Real sockets on loopback, two seconds.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use cr_apps::keys::KeyMaterial;
use cr_apps::{download, Protocol, Server, ServerHandle, ServerOptions};
use cr_endpoint::ex_token::{KeyRing, TokenKey};

/// How long the client waits for an answer before the test fails.
const PATIENCE: Duration = Duration::from_secs(5);

/// How long the server is away while it restarts, in the test of a cut
/// download.
const DOWN: Duration = Duration::from_millis(1500);

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

#[test]
fn a_download_cut_by_a_restart_ends_at_the_reset_not_the_idle_timeout() {
    let key = KeyMaterial::generate(4).expect("key");
    let first = server("127.0.0.1:0".parse().expect("address"), &key);
    let addr = first.local_addr();
    let relay = support::relay(
        "127.0.0.1:0".parse().expect("address"),
        addr,
        Duration::from_millis(10),
    );
    let dir = support::scratch("restart", "cut-download");
    // 40 s of body at the relay's 20 Mbit/s: the restart cuts it.
    let options = support::client_options(relay.local_addr(), 100_000_000, &dir.join("tokens"));
    let client = std::thread::spawn(move || download(&options));

    let give_up = Instant::now() + PATIENCE;
    while relay.stats().down.forwarded < 100 && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(relay.stats().down.forwarded >= 100, "the download started");
    first.stop().expect("first process");
    let stopped = Instant::now();
    // Down long enough for the packets in flight to drain: what the client
    // acknowledges meanwhile meets a closed port, and then it hears nothing.
    std::thread::sleep(DOWN);
    let _second = server(addr, &key);

    let error = client
        .join()
        .expect("client thread")
        .expect_err("the download was cut");
    // The client's PING (it heard nothing for a second) meets the new
    // process, whose reset ends the connection; without it, the server's
    // idle timeout (5 s) would end it and the error would say so.
    assert!(error.to_string().contains("stateless reset"), "{error}");
    let ended = stopped.elapsed();
    assert!(ended < DOWN + Duration::from_secs(2), "{ended:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
