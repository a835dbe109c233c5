//! One client's flow through the relay: the upstream socket opened for it
//! (the server sees that socket's address as the client's, as through a
//! NAT; on loopback, on the client's own address), the thread returning the server's datagrams from it through the
//! down link, and when the flow last carried a datagram either way, which
//! decides when the relay closes it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::link::Link;
use super::stats::{Counters, FlowRunning};
use super::STOP_CHECK;
use crate::error::AppError;
use crate::net::{size_buffers, DropCountingReceiver, RECV_BUFFER};

/// A flow as the relay reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowInfo {
    /// The client's address.
    pub client: SocketAddr,
    /// The upstream socket's address: the client as the server sees it.
    pub upstream: SocketAddr,
    /// Time since the flow last carried a datagram.
    pub idle: Duration,
}

/// What every flow shares with the relay.
#[derive(Clone)]
pub(super) struct FlowContext {
    /// Where the server listens; datagrams from elsewhere are ignored.
    pub(super) server: SocketAddr,
    /// Kernel buffer size to ask for the upstream socket.
    pub(super) socket_buffer: usize,
    /// Server to client.
    pub(super) down: Arc<Link>,
    /// The client-facing socket, which the down link sends from.
    pub(super) back: Arc<UdpSocket>,
    /// Set when the relay stops.
    pub(super) stop: Arc<AtomicBool>,
    pub(super) counters: Arc<Counters>,
}

/// One client's upstream socket and the thread reading it.
pub(super) struct Flow {
    upstream: Arc<UdpSocket>,
    local: SocketAddr,
    last_seen: Arc<LastSeen>,
    closed: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Flow {
    /// Opens `client`'s upstream socket and starts its thread.
    pub(super) fn open(client: SocketAddr, context: FlowContext) -> Result<Flow, AppError> {
        let bind = upstream_bind_addr(context.server, client);
        let upstream = UdpSocket::bind(bind)
            .and_then(|s| s.set_read_timeout(Some(STOP_CHECK)).map(|()| s))
            .map_err(|e| AppError::io(format!("opening an upstream socket on {bind}"), e))?;
        size_buffers(&upstream, context.socket_buffer);
        let local = upstream
            .local_addr()
            .map_err(|e| AppError::io("reading an upstream socket's address", e))?;
        let upstream = Arc::new(upstream);
        // Counting from before the first datagram reaches the server.
        let receiver = DropCountingReceiver::new(Arc::clone(&upstream));
        context.counters.kernel_drops_down.watch(&receiver);
        let returning = Returning {
            client,
            receiver,
            last_seen: Arc::new(LastSeen::new()),
            closed: Arc::new(AtomicBool::new(false)),
            running: context.counters.flow_running(),
            context,
        };
        let (last_seen, closed) = (
            Arc::clone(&returning.last_seen),
            Arc::clone(&returning.closed),
        );
        let thread = thread::Builder::new()
            .name("cr-relay-flow".into())
            .spawn(move || returning.run())
            .map_err(|e| AppError::io("starting a relay flow thread", e))?;
        log::debug!("relay: flow {client} opened on {local}");
        Ok(Flow {
            upstream,
            local,
            last_seen,
            closed,
            thread,
        })
    }

    /// The socket that sends the client's datagrams to the server.
    pub(super) fn upstream(&self) -> &Arc<UdpSocket> {
        &self.upstream
    }

    /// Notes a datagram from the client.
    pub(super) fn touch(&self) {
        self.last_seen.touch();
    }

    /// Time since the flow last carried a datagram.
    pub(super) fn idle_for(&self, now: Instant) -> Duration {
        self.last_seen.idle_for(now)
    }

    pub(super) fn info(&self, client: SocketAddr, now: Instant) -> FlowInfo {
        FlowInfo {
            client,
            upstream: self.local,
            idle: self.idle_for(now),
        }
    }

    /// Tells the flow's thread to end (within [`STOP_CHECK`]) and returns
    /// it, to join. Datagrams already on the down link are still delivered.
    pub(super) fn close(self) -> JoinHandle<()> {
        self.closed.store(true, Ordering::Relaxed);
        self.thread
    }
}

/// The address to bind a flow's upstream socket to: the server's family,
/// and on loopback a loopback address, so that the relay's per-client
/// ports are not open on every interface. A client on a loopback address
/// of the server's family gets its own address (another port): the server
/// then sees each client's network (its /24, its /56) as it would without
/// the relay, which matters to whatever it keys by address prefix (saved
/// Careful Resume state, jump budgets).
pub(super) fn upstream_bind_addr(server: SocketAddr, client: SocketAddr) -> SocketAddr {
    let ip: IpAddr = match (server.ip(), client.ip()) {
        (IpAddr::V4(ip), IpAddr::V4(own)) if ip.is_loopback() && own.is_loopback() => own.into(),
        (IpAddr::V6(ip), IpAddr::V6(own)) if ip.is_loopback() && own.is_loopback() => own.into(),
        (IpAddr::V4(ip), _) if ip.is_loopback() => Ipv4Addr::LOCALHOST.into(),
        (IpAddr::V4(_), _) => Ipv4Addr::UNSPECIFIED.into(),
        (IpAddr::V6(ip), _) if ip.is_loopback() => Ipv6Addr::LOCALHOST.into(),
        (IpAddr::V6(_), _) => Ipv6Addr::UNSPECIFIED.into(),
    };
    (ip, 0).into()
}

/// A flow's thread: returns the server's datagrams to the client.
struct Returning {
    client: SocketAddr,
    receiver: DropCountingReceiver,
    last_seen: Arc<LastSeen>,
    closed: Arc<AtomicBool>,
    running: FlowRunning,
    context: FlowContext,
}

impl Returning {
    fn run(mut self) {
        let mut buf = vec![0u8; RECV_BUFFER];
        while !self.context.stop.load(Ordering::Relaxed) && !self.closed.load(Ordering::Relaxed) {
            // A timeout, or an ICMP error from an earlier send, to ignore.
            let Ok((len, from, dropped)) = self.receiver.recv_from(&mut buf) else {
                continue;
            };
            self.context.counters.kernel_drops_down.add(dropped);
            if from == self.context.server {
                self.last_seen.touch();
                self.context.down.send(
                    Instant::now(),
                    self.client,
                    &buf[..len],
                    &self.context.back,
                    self.client,
                );
            }
        }
        log::debug!("relay: flow {} closed", self.client);
        drop(self.running);
    }
}

/// When a flow last carried a datagram, either way: written by the two
/// threads reading its sockets, read by the one expiring flows, no lock.
struct LastSeen {
    origin: Instant,
    /// Since `origin`.
    micros: AtomicU64,
}

impl LastSeen {
    fn new() -> LastSeen {
        LastSeen {
            origin: Instant::now(),
            micros: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let micros = u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.micros.store(micros, Ordering::Relaxed);
    }

    fn idle_for(&self, now: Instant) -> Duration {
        let last = self.origin + Duration::from_micros(self.micros.load(Ordering::Relaxed));
        now.saturating_duration_since(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_sockets_bind_to_the_servers_family_and_loopback() {
        let bind = |server: &str, client: &str| {
            upstream_bind_addr(
                server.parse().expect("server address"),
                client.parse().expect("client address"),
            )
        };
        let remote_v4 = "198.51.100.7:5000";
        let remote_v6 = "[2001:db8::7]:5000";
        assert_eq!(
            bind("127.0.0.1:4433", remote_v4),
            "127.0.0.1:0".parse().expect("v4")
        );
        assert_eq!(
            bind("127.0.0.2:4433", remote_v6),
            "127.0.0.1:0".parse().expect("v4")
        );
        assert_eq!(
            bind("[::1]:4433", remote_v4),
            "[::1]:0".parse().expect("v6")
        );
        assert_eq!(
            bind("192.0.2.1:4433", remote_v4),
            "0.0.0.0:0".parse().expect("v4")
        );
        assert_eq!(
            bind("[2001:db8::1]:4433", remote_v6),
            "[::]:0".parse().expect("v6")
        );
    }

    #[test]
    fn loopback_clients_keep_their_own_address_towards_a_loopback_server() {
        let bind = |server: &str, client: &str| {
            upstream_bind_addr(
                server.parse().expect("server address"),
                client.parse().expect("client address"),
            )
        };
        // Each its own network: the server sees the client's address.
        assert_eq!(
            bind("127.0.0.1:4433", "127.1.2.1:5000"),
            "127.1.2.1:0".parse().expect("v4")
        );
        assert_eq!(
            bind("127.0.0.1:4433", "127.0.0.1:5000"),
            "127.0.0.1:0".parse().expect("v4")
        );
        assert_eq!(
            bind("[::1]:4433", "[::1]:5000"),
            "[::1]:0".parse().expect("v6")
        );
        // Another family, or a server off loopback: as for any client.
        assert_eq!(
            bind("[::1]:4433", "127.1.2.1:5000"),
            "[::1]:0".parse().expect("v6")
        );
        assert_eq!(
            bind("127.0.0.1:4433", "[::1]:5000"),
            "127.0.0.1:0".parse().expect("v4")
        );
        assert_eq!(
            bind("192.0.2.1:4433", "127.1.2.1:5000"),
            "0.0.0.0:0".parse().expect("v4")
        );
    }

    #[test]
    fn a_touch_restarts_the_idle_time() {
        let seen = LastSeen::new();
        let later = Instant::now() + Duration::from_secs(5);
        assert!(seen.idle_for(later) >= Duration::from_secs(5));
        seen.touch();
        assert!(seen.idle_for(Instant::now()) < Duration::from_secs(1));
        assert!(seen.idle_for(seen.origin).is_zero());
    }
}
