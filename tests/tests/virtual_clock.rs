//! The clock patch: quiche runs entirely in virtual time.
//!
//! A client and a server are joined by an in-memory link with a 300 ms one-way delay and no
//! serialisation delay. Time only moves when the test moves it, to the next datagram arrival or
//! the next connection timer, so the handshake must complete at exactly one round trip on the
//! virtual clock while the test itself takes milliseconds of wall time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const ONE_WAY_DELAY: Duration = Duration::from_millis(300);

fn config(is_server: bool) -> quiche::Config {
    quiche_cr_tests::config(is_server, quiche::CongestionControlAlgorithm::CUBIC)
}

/// A datagram in flight, ordered by arrival time then by send order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    arrival: Instant,
    seq: u64,
    to_server: bool,
    bytes: Vec<u8>,
}

struct Link {
    in_flight: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
}

impl Link {
    fn flush(&mut self, conn: &mut quiche::Connection, to_server: bool, now: Instant) {
        let mut buf = [0; 1500];
        while let Ok((len, _)) = conn.send(&mut buf) {
            self.seq += 1;
            self.in_flight.push(Reverse(InFlight {
                arrival: now + ONE_WAY_DELAY,
                seq: self.seq,
                to_server,
                bytes: buf[..len].to_vec(),
            }));
        }
    }
}

#[test]
fn handshake_completes_one_virtual_round_trip_after_the_first_initial() {
    let wall_start = Instant::now();
    // Virtual time starts far from the real clock so any real-time read would stand out.
    let start = Instant::now() + Duration::from_secs(86_400);
    quiche::clock::set(start);

    let client_addr: SocketAddr = "192.0.2.1:4433".parse().unwrap();
    let server_addr: SocketAddr = "198.51.100.1:443".parse().unwrap();
    let mut client_config = config(false);
    let mut server_config = config(true);
    let scid = quiche::ConnectionId::from_ref(&[0xc1; 16]);
    let mut client = quiche::connect(
        Some("quiche-cr.test"),
        &scid,
        client_addr,
        server_addr,
        &mut client_config,
    )
    .unwrap();
    let mut server: Option<quiche::Connection> = None;
    let mut link = Link {
        in_flight: BinaryHeap::new(),
        seq: 0,
    };

    link.flush(&mut client, true, start);
    // The first PTO (about 1 s with quiche's 333 ms initial RTT) is armed from the virtual instant.
    let pto = client.timeout_instant().unwrap();
    assert!(
        pto > start && pto <= start + Duration::from_secs(1),
        "timer not virtual: {pto:?}"
    );

    let mut established_at = None;
    while established_at.is_none() {
        let Reverse(datagram) = link.in_flight.pop().expect("the handshake stalled");
        assert!(datagram.arrival < start + Duration::from_secs(5));
        quiche::clock::set(datagram.arrival);
        let now = datagram.arrival;
        let mut bytes = datagram.bytes;
        if datagram.to_server {
            let server = server.get_or_insert_with(|| {
                let hdr = quiche::Header::from_slice(&mut bytes, quiche::MAX_CONN_ID_LEN).unwrap();
                let scid = quiche::ConnectionId::from_ref(&[0x5e; 16]);
                quiche::accept(
                    &scid,
                    Some(&hdr.dcid),
                    server_addr,
                    client_addr,
                    &mut server_config,
                )
                .unwrap()
            });
            let info = quiche::RecvInfo {
                from: client_addr,
                to: server_addr,
            };
            server.recv(&mut bytes, info).unwrap();
            link.flush(server, false, now);
        } else {
            let info = quiche::RecvInfo {
                from: server_addr,
                to: client_addr,
            };
            client.recv(&mut bytes, info).unwrap();
            if client.is_established() {
                established_at = Some(now);
            }
            link.flush(&mut client, true, now);
        }
    }

    let handshake = established_at.unwrap() - start;
    let expected = 2 * ONE_WAY_DELAY;
    let error = handshake.abs_diff(expected);
    assert!(
        error <= Duration::from_millis(1),
        "handshake took {handshake:?}, expected {expected:?}"
    );

    // quiche measured the round trip on the virtual clock: exactly two one-way delays.
    let rtt = client.path_stats().next().unwrap().rtt;
    assert_eq!(rtt, expected, "RTT sample taken from the virtual clock");

    // The connection's timers are virtual too: the next one is relative to the virtual instant.
    let timer = client.timeout_instant().unwrap();
    assert!(timer > established_at.unwrap() && timer < start + Duration::from_secs(60));

    quiche::clock::unset();
    assert!(
        wall_start.elapsed() < Duration::from_secs(1),
        "virtual time must not take real time"
    );
}
