//! UDP plumbing shared by the server, the client and the relay: waiting for
//! a datagram until a deadline, holding datagrams until their pacing release
//! time, and sizing sockets' kernel buffers and counting the datagrams the
//! kernel drops (`net/kernel.rs`, re-exported here).
//!
//! quiche does not sleep: `send()` returns each packet with `SendInfo.at`,
//! the moment it should leave, and `timeout_instant()` says when a timer
//! fires. An event loop therefore waits for whichever comes first: a
//! datagram, the next release time, or the next timer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

mod kernel;

pub use kernel::{size_buffers, BufferSizes, DropCountingReceiver};

/// Largest UDP payload either program sends.
pub const MAX_DATAGRAM: usize = 1350;

/// Receive buffer: the largest UDP datagram, so nothing is ever truncated.
pub const RECV_BUFFER: usize = 65_535;

/// The smallest kernel buffer (receive and send) the programs ask for
/// their sockets. Linux's default, 208 KiB, holds about 90 full-size
/// datagrams: a burst of one congestion window at tens of Mbit/s and
/// hundreds of milliseconds overflows it, and the kernel drops the rest.
pub const SOCKET_BUFFER_FLOOR: usize = 4 << 20;

/// Below this, wait by sleeping rather than by a socket timeout: Linux
/// counts `SO_RCVTIMEO` in scheduler ticks (up to 4 ms), far coarser than
/// the sub-millisecond gaps pacing needs at tens of Mbit/s, while sleeps
/// are precise to tens of microseconds.
const FINE_WAIT: Duration = Duration::from_millis(5);

/// A datagram is released this early at most: sleeping to the exact
/// nanosecond buys nothing.
const RELEASE_SLACK: Duration = Duration::from_micros(100);

/// Waits for one datagram until `deadline` (returns `None` if none came).
pub fn recv_until(
    socket: &UdpSocket,
    buf: &mut [u8],
    deadline: Instant,
) -> io::Result<Option<(usize, SocketAddr)>> {
    let wait = deadline.saturating_duration_since(Instant::now());
    if wait >= FINE_WAIT {
        socket.set_read_timeout(Some(wait))?;
        return match socket.recv_from(buf) {
            Ok(received) => Ok(Some(received)),
            Err(e) if is_timeout(&e) => Ok(None),
            Err(e) => Err(e),
        };
    }
    if let Some(received) = try_recv(socket, buf)? {
        return Ok(Some(received));
    }
    std::thread::sleep(wait);
    try_recv(socket, buf)
}

/// Takes a datagram if one is queued, without waiting.
pub fn try_recv(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
    socket.set_nonblocking(true)?;
    let result = socket.recv_from(buf);
    socket.set_nonblocking(false)?;
    match result {
        Ok(received) => Ok(Some(received)),
        Err(e) if is_timeout(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether a receive error only means "nothing arrived" (or, on Linux, an
/// ICMP error from an earlier send, which QUIC's timers handle).
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
    )
}

/// One datagram waiting for its release time.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    at: Instant,
    /// Keeps datagrams released at the same instant in the order they came.
    seq: u64,
    to: SocketAddr,
    data: Vec<u8>,
}

/// Datagrams held until `SendInfo.at`, earliest first, so a paced sender
/// (Careful Resume's Unvalidated phase, BBR) leaves as quiche intends
/// rather than in one burst.
#[derive(Debug, Default)]
pub struct Outbox {
    held: BinaryHeap<Reverse<Held>>,
    seq: u64,
}

impl Outbox {
    /// Holds `data` for `to` until `at`.
    pub fn push(&mut self, at: Instant, to: SocketAddr, data: &[u8]) {
        self.seq += 1;
        self.held.push(Reverse(Held {
            at,
            seq: self.seq,
            to,
            data: data.to_vec(),
        }));
    }

    /// When the next datagram is due, if any is held.
    pub fn next_release(&self) -> Option<Instant> {
        self.held.peek().map(|Reverse(held)| held.at)
    }

    /// Datagrams held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Sends every datagram due by `now`. A datagram the kernel refuses
    /// (buffer full, unreachable) is dropped: to QUIC it is a lost packet.
    pub fn flush(&mut self, socket: &UdpSocket, now: Instant) {
        let horizon = now + RELEASE_SLACK;
        while self
            .held
            .peek()
            .is_some_and(|Reverse(held)| held.at <= horizon)
        {
            if let Some(Reverse(held)) = self.held.pop() {
                let _ = socket.send_to(&held.data, held.to);
            }
        }
    }
}

/// What [`drain_connection`] moved, and when to call it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// Datagrams moved into the outbox.
    pub sent: usize,
    /// When to call again, if the pacer holds the next packet back.
    pub next_send: Option<Instant>,
}

/// Moves the packets `conn` may send now into `outbox`.
///
/// As quiche's own event loops do, quiche is only asked for a packet while
/// its pacer's next release time lies within `max_release_into_future()`:
/// quiche takes a packet as sent when `send()` returns it, so handing over a
/// whole window at once would count the time the datagrams then wait here
/// as round-trip time (BBR2 measured seconds at 600 ms and 19 kB/s pacing).
pub fn drain_connection(conn: &mut quiche::Connection, outbox: &mut Outbox) -> Drained {
    let mut out = [0u8; MAX_DATAGRAM];
    let mut sent = 0;
    loop {
        let now = Instant::now();
        let horizon = conn.max_release_into_future();
        let release = conn
            .get_next_release_time()
            .and_then(|decision| decision.time(now));
        if let Some(release) = release.filter(|&at| at > now + horizon) {
            return Drained {
                sent,
                next_send: Some(release - horizon),
            };
        }
        // Stops at Done, or at a fatal error that closed the connection (the
        // caller sees that through is_closed()).
        let Ok((len, info)) = conn.send(&mut out) else {
            return Drained {
                sent,
                next_send: None,
            };
        };
        outbox.push(info.at, info.to, &out[..len]);
        sent += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbox_releases_in_time_order() {
        let sink = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let sender = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let to = sink.local_addr().expect("addr");
        let now = Instant::now();
        let mut outbox = Outbox::default();
        outbox.push(now + Duration::from_secs(10), to, b"late");
        outbox.push(now, to, b"first");
        outbox.push(now, to, b"second");
        assert_eq!(outbox.next_release(), Some(now));
        outbox.flush(&sender, now);
        assert_eq!(outbox.len(), 1);
        let mut buf = [0u8; 16];
        for expected in [&b"first"[..], b"second"] {
            let (len, _) = recv_until(&sink, &mut buf, Instant::now() + Duration::from_secs(2))
                .expect("recv")
                .expect("a datagram");
            assert_eq!(&buf[..len], expected);
        }
        assert_eq!(try_recv(&sink, &mut buf).expect("recv"), None);
    }
}
