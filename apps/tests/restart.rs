//! A cr-server that restarted still answers for the connections of the
//! process before it: a client that sends on a connection the new process
//! never had gets a stateless reset, made from the token key ring both
//! processes read, and closes at once instead of waiting out its idle
//! timeout, or, when it is in the middle of a download and hears nothing,
//! at its next keep-alive PING. Another server sharing the key ring answers
//! no packet for that connection. Real sockets on loopback, two seconds.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime};

use cr_apps::keys::KeyMaterial;
use cr_apps::{download, Protocol, Server, ServerHandle, ServerOptions};
use cr_endpoint::ex_token::{KeyRing, SystemRng, TokenKey, RESET_TOKEN_LEN};
use cr_endpoint::reset::{self, Issuer};

/// How long the client waits for an answer before the test fails.
const PATIENCE: Duration = Duration::from_secs(5);

/// How long the server is away while it restarts, in the test of a cut
/// download.
const DOWN: Duration = Duration::from_millis(1500);

fn server(listen: SocketAddr, key: &KeyMaterial) -> ServerHandle {
    server_with_id(listen, key, 0)
}

fn ring(key: &KeyMaterial) -> KeyRing {
    KeyRing::new(TokenKey::from_bytes(key.id, &key.bytes).expect("key"))
}

/// Server `id` of a fleet sharing `key`.
fn server_with_id(listen: SocketAddr, key: &KeyMaterial, id: u8) -> ServerHandle {
    let options = ServerOptions {
        listen,
        token_keys: ring(key),
        ..support::server_options()
    };
    let mut server = Server::bind(options).expect("server");
    server.set_server_id(id);
    ServerHandle::spawn(server).expect("thread")
}

/// A client connection to `server`, established and confirmed, over
/// `socket`.
fn connected(socket: &UdpSocket, server: SocketAddr) -> quiche::Connection {
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
        quiche::connect(Some("localhost"), &scid, local, server, &mut config).expect("connect");
    exchange(socket, &mut conn, |c| c.is_established(), PATIENCE);
    assert!(conn.is_established(), "handshake with {server}");
    // Until the handshake is confirmed (HANDSHAKE_DONE) and the client
    // sends only short headers, the packets a reset answers.
    exchange(socket, &mut conn, |_| false, Duration::from_millis(200));
    conn
}

/// A short-header datagram of 1200 bytes for connection ID `dcid`.
fn short_packet(dcid: &[u8]) -> Vec<u8> {
    let mut datagram = vec![0x40];
    datagram.extend_from_slice(dcid);
    datagram.resize(1200, 0x55);
    datagram
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
    let mut conn = connected(&socket, addr);

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

/// Two servers sharing a key ring can both compute the reset token of each
/// other's connections; only the server that issued a connection ID, in a
/// later process, may send it. Were another to answer, whoever has seen a
/// victim's connection ID (an on-path observer, who cannot forge the
/// victim's packets) could send it one packet and read the victim's reset
/// token in the answer, then close the victim's connection with it.
#[test]
fn a_connection_of_one_server_is_not_reset_by_another_sharing_its_keys() {
    let key = KeyMaterial::generate(4).expect("key");
    let any = "127.0.0.1:0".parse().expect("address");
    let a = server_with_id(any, &key, 1);
    let b = server_with_id(any, &key, 2);
    let victim = UdpSocket::bind("127.0.0.1:0").expect("client socket");
    let conn = connected(&victim, a.local_addr());
    let of_a = conn.destination_id().into_owned();
    assert_eq!(Issuer::of(&of_a).map(|issuer| issuer.server()), Some(1));

    // From another address, server B is sent a packet of A's connection,
    // then one of a connection B issued in an earlier process (an hour
    // ago). B answers in order, so the first answer to arrive would be the
    // first packet's.
    let keys = ring(&key);
    let earlier = Issuer::new(2, SystemTime::now() - Duration::from_secs(3600));
    let of_earlier_b = reset::connection_id(&keys, &earlier, &mut SystemRng::new()).expect("id");
    let attacker = UdpSocket::bind("127.0.0.1:0").expect("socket");
    for dcid in [of_a.as_ref(), of_earlier_b.as_slice()] {
        attacker
            .send_to(&short_packet(dcid), b.local_addr())
            .expect("send");
    }
    attacker.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut buf = [0u8; 1500];
    let (len, from) = attacker.recv_from(&mut buf).expect("an answer");
    assert_eq!(from, b.local_addr());
    let token = |cid: &[u8]| reset::reset_token(&keys, cid).expect("ours").to_be_bytes();
    assert_eq!(buf[len - RESET_TOKEN_LEN..len], token(&of_earlier_b));
    assert_ne!(buf[len - RESET_TOKEN_LEN..len], token(&of_a));
    // And A's connection goes on.
    assert!(!conn.is_closed());
}
