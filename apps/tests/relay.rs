//! The relay as an instrument, on loopback with plain UDP sockets standing
//! in for the client and the server: it loses only what its link decides
//! (a burst far over Linux's default socket buffer goes through with no
//! kernel drop), its upstream sockets stay on loopback in the server's
//! family, on the client's own loopback address where it has one (the
//! server sees each client's network), a flow idle for the timeout is
//! closed with its thread, and with the schedule per flow each new flow
//! meets the schedule from its start.

use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use cr_apps::net::{size_buffers, SOCKET_BUFFER_FLOOR};
use cr_apps::relay::{
    Bottleneck, LinkConfig, LinkStats, Relay, RelayHandle, RelayOptions, DEFAULT_FLOW_IDLE_TIMEOUT,
};

/// Datagrams of a burst, and their size: 2.4 MB, over ten times Linux's
/// default receive buffer (208 KiB, about 90 such datagrams).
const BURST: u32 = 2000;
const DATAGRAM: usize = 1200;

/// How long a test waits for what should take milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

/// A fast link with room for the whole burst: 200 Mbit/s, 5 ms each way,
/// a 3 MiB queue (the relay's buffers stay at their 4 MiB floor).
fn fast_link(loss: f64) -> LinkConfig {
    LinkConfig {
        rate_bps: 200_000_000,
        delay: Duration::from_millis(5),
        queue_bytes: 3 << 20,
        loss,
    }
}

fn relay(server: SocketAddr, up: LinkConfig, down: LinkConfig, idle: Duration) -> RelayHandle {
    relay_behind(server, up, down, idle, Bottleneck::default())
}

fn relay_behind(
    server: SocketAddr,
    up: LinkConfig,
    down: LinkConfig,
    idle: Duration,
    bottleneck: Bottleneck,
) -> RelayHandle {
    let listen = SocketAddr::new(server.ip(), 0);
    let relay = Relay::bind(RelayOptions {
        listen,
        server,
        up,
        down,
        bottleneck,
        seed: 3,
        flow_idle_timeout: idle,
    })
    .expect("relay");
    RelayHandle::spawn(relay).expect("relay threads")
}

/// A socket on `ip`'s loopback standing in for a client or a server, with
/// the programs' buffers and a short read timeout.
fn endpoint(ip: &str) -> UdpSocket {
    let socket = UdpSocket::bind(format!("{ip}:0")).expect("bind");
    size_buffers(&socket, SOCKET_BUFFER_FLOOR);
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    socket
}

/// Waits for one datagram; returns its length and sender.
fn receive(socket: &UdpSocket, buf: &mut [u8]) -> (usize, SocketAddr) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(received) = socket.recv_from(buf) {
            return received;
        }
        assert!(Instant::now() < deadline, "nothing arrived");
    }
}

/// Polls `check` until it holds, failing after [`PATIENCE`].
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !check() {
        assert!(Instant::now() < deadline, "still not {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A client and a server socket joined through `relay`: returns the
/// address the server sees the client at (its upstream socket).
fn open_flow(client: &UdpSocket, server: &UdpSocket, relay: &RelayHandle) -> SocketAddr {
    client.send_to(b"hello", relay.local_addr()).expect("send");
    let mut buf = [0u8; 64];
    let (len, upstream) = receive(server, &mut buf);
    assert_eq!(&buf[..len], b"hello");
    upstream
}

/// Sends [`BURST`] numbered datagrams from `from` to `to` as fast as the
/// kernel takes them.
fn send_burst(from: &UdpSocket, to: SocketAddr) {
    let mut datagram = [0u8; DATAGRAM];
    for seq in 0..BURST {
        datagram[..4].copy_from_slice(&seq.to_be_bytes());
        from.send_to(&datagram, to).expect("send");
    }
}

/// Reads datagrams from `socket` until as many came as `delivered` says
/// (once it knows: when the link has dealt with the whole burst), or
/// nothing came for a while; returns the numbers read.
fn read_burst(socket: &UdpSocket, delivered: impl Fn() -> Option<u64>) -> HashSet<u32> {
    let mut seen = HashSet::new();
    let mut buf = [0u8; 2048];
    let mut last_arrival = Instant::now();
    while delivered() != Some(seen.len() as u64) && last_arrival.elapsed() < Duration::from_secs(2)
    {
        if let Ok((len, _)) = socket.recv_from(&mut buf) {
            assert_eq!(len, DATAGRAM);
            seen.insert(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]));
            last_arrival = Instant::now();
        }
    }
    seen
}

/// What `link` forwarded of a burst, once it has dealt with all of it;
/// `earlier` datagrams it forwarded before the burst.
fn forwarded_of_burst(link: LinkStats, earlier: u64) -> Option<u64> {
    let forwarded = link.forwarded.checked_sub(earlier)?;
    let dealt = forwarded + link.queue_drops + link.random_drops + link.send_errors;
    (dealt == u64::from(BURST)).then_some(forwarded)
}

#[test]
fn a_burst_over_the_default_socket_buffer_loses_only_what_the_link_drops() {
    let server = endpoint("127.0.0.1");
    let client = endpoint("127.0.0.1");
    // Random losses on the way down, so that some drops are the link's.
    let relay = relay(
        server.local_addr().expect("addr"),
        fast_link(0.0),
        fast_link(0.01),
        DEFAULT_FLOW_IDLE_TIMEOUT,
    );
    let burst_bytes = BURST as usize * DATAGRAM;
    if relay.buffers().receive < burst_bytes {
        eprintln!(
            "skipped: the kernel granted the relay {:?}, less than the {burst_bytes} B burst \
             (raise net.core.rmem_max and wmem_max, or run as root)",
            relay.buffers()
        );
        return;
    }
    let upstream = open_flow(&client, &server, &relay);

    // Server to client: into an upstream socket.
    send_burst(&server, upstream);
    let seen = read_burst(&client, || forwarded_of_burst(relay.stats().down, 0));
    let stats = relay.stats();
    assert_eq!(stats.kernel_drops_down, Some(0), "{stats}");
    assert_eq!(stats.down.send_errors, 0, "{stats}");
    assert!(stats.down.random_drops > 0, "{stats}");
    assert_eq!(
        stats.down.forwarded + stats.down.queue_drops + stats.down.random_drops,
        u64::from(BURST),
        "{stats}"
    );
    assert_eq!(seen.len() as u64, stats.down.forwarded, "{stats}");

    // Client to server: into the client-facing socket.
    send_burst(&client, relay.local_addr());
    // The greeting that opened the flow went up too.
    let seen = read_burst(&server, || forwarded_of_burst(relay.stats().up, 1));
    let stats = relay.stats();
    assert_eq!(stats.kernel_drops_up, Some(0), "{stats}");
    assert_eq!(stats.up.send_errors, 0, "{stats}");
    assert_eq!(
        (
            stats.up.forwarded - 1,
            stats.up.queue_drops,
            stats.up.random_drops
        ),
        (u64::from(BURST), 0, 0),
        "{stats}"
    );
    assert_eq!(seen.len(), BURST as usize, "{stats}");
}

#[test]
fn upstream_sockets_are_on_the_servers_loopback() {
    for ip in ["127.0.0.1", "::1"] {
        let Ok(server) = UdpSocket::bind(SocketAddr::new(ip.parse().expect("ip"), 0)) else {
            eprintln!("skipped {ip}: no such loopback here");
            continue;
        };
        server
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let client = endpoint(if ip == "::1" { "[::1]" } else { ip });
        let link = fast_link(0.0);
        let relay = relay(
            server.local_addr().expect("addr"),
            link,
            link,
            DEFAULT_FLOW_IDLE_TIMEOUT,
        );
        let seen_by_server = open_flow(&client, &server, &relay);
        let flows = relay.flows();
        assert_eq!(flows.len(), 1);
        assert_eq!(flows[0].client, client.local_addr().expect("addr"));
        assert_eq!(flows[0].upstream, seen_by_server);
        assert_eq!(
            flows[0].upstream.ip(),
            ip.parse::<std::net::IpAddr>().expect("ip")
        );
    }
}

#[test]
fn clients_on_their_own_loopback_addresses_reach_the_server_from_them() {
    let server = endpoint("127.0.0.1");
    let link = fast_link(0.0);
    let relay = relay(
        server.local_addr().expect("addr"),
        link,
        link,
        DEFAULT_FLOW_IDLE_TIMEOUT,
    );
    for ip in ["127.1.0.1", "127.1.1.1", "127.0.0.1"] {
        let client = endpoint(ip);
        let seen_by_server = open_flow(&client, &server, &relay);
        assert_eq!(seen_by_server.ip().to_string(), ip);
        assert_ne!(seen_by_server, client.local_addr().expect("addr"));
    }
    assert_eq!(relay.flows().len(), 3);
}

#[test]
fn an_idle_flow_is_closed_with_its_thread_and_a_new_one_opens_after() {
    const IDLE: Duration = Duration::from_millis(300);
    let server = endpoint("127.0.0.1");
    let client = endpoint("127.0.0.1");
    let link = fast_link(0.0);
    let relay = relay(server.local_addr().expect("addr"), link, link, IDLE);
    let upstream = open_flow(&client, &server, &relay);
    assert_eq!(relay.stats().flows_open, 1);

    // The server's datagrams alone keep the flow open, for twice the timeout.
    let mut buf = [0u8; 64];
    let start = Instant::now();
    let mut last_sent = start;
    while start.elapsed() < 2 * IDLE {
        std::thread::sleep(IDLE / 6);
        // The relay sees the datagram after this instant.
        last_sent = Instant::now();
        server.send_to(b"still here", upstream).expect("send");
        assert_eq!(receive(&client, &mut buf).0, 10);
    }
    let stats = relay.stats();
    assert_eq!((stats.flows_open, stats.flows_expired), (1, 0), "{stats}");
    assert_eq!(relay.flows()[0].upstream, upstream);

    eventually("closed", || {
        let stats = relay.stats();
        (stats.flows_open, stats.flows_expired) == (0, 1) && relay.flows().is_empty()
    });
    assert!(last_sent.elapsed() >= IDLE);

    // The client comes back: a new flow, a new upstream socket.
    let reopened = open_flow(&client, &server, &relay);
    assert_eq!(relay.stats().flows_open, 1);
    assert_eq!(relay.flows()[0].upstream, reopened);
}

/// With `--schedule-per-flow` a new client's flow meets the schedule from
/// its start, as each connection does in cr-sim: 300 ms after the relay
/// started, the schedule's one-way delay has grown from 5 ms to a second,
/// yet a client that opens its flow then is forwarded after 5 ms (the
/// bound leaves a loaded machine nearly half a second).
#[test]
fn with_the_schedule_per_flow_a_new_flow_meets_the_schedule_from_its_start() {
    let server = endpoint("127.0.0.1");
    let bottleneck = Bottleneck {
        schedule: Some(
            "0s 200mbit 10ms\n0.3s 200mbit 2s"
                .parse()
                .expect("schedule"),
        ),
        schedule_per_flow: true,
        ..Bottleneck::default()
    };
    let link = fast_link(0.0);
    let addr = server.local_addr().expect("address");
    let relay = relay_behind(addr, link, link, DEFAULT_FLOW_IDLE_TIMEOUT, bottleneck);
    open_flow(&endpoint("127.0.0.1"), &server, &relay);
    std::thread::sleep(Duration::from_millis(400));
    let sent = Instant::now();
    open_flow(&endpoint("127.0.0.1"), &server, &relay);
    let took = sent.elapsed();
    assert!(
        took < Duration::from_millis(500),
        "forwarded after {took:?}"
    );
}
