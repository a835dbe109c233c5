//! The application both sides speak: `GET /<bytes>` over HTTP/3 (quiche's
//! h3 module) or over hq-interop (the interop runner's HTTP/0.9 over QUIC:
//! `GET /<n>\r\n` on a bidirectional stream, the body, FIN). The body is
//! `<n>` bytes of [`crate::body`]'s pattern, which the client checks as it
//! reads ([`Progress::verified`]).
//!
//! The server never lets the sender go short of data and never buffers the
//! whole object: it keeps about two congestion windows queued.

mod h3;
mod hq;

pub use h3::request_size;

use crate::body;
use crate::error::ServeError;

/// Scratch space a client reads bodies into and discards.
const READ_CHUNK: usize = 64 * 1024;

/// Longest request (hq-interop request line or HTTP/3 path) a server reads;
/// anything longer is answered with an empty body.
const MAX_REQUEST: usize = 1024;

/// The application protocol, chosen by ALPN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// HTTP/3 (ALPN `h3`).
    H3,
    /// hq-interop (ALPN `hq-interop`), which quinn and most interop
    /// clients speak without an HTTP/3 stack: the transport with the least
    /// framing on top.
    Hq,
}

impl Protocol {
    /// The ALPN identifier.
    pub fn alpn(self) -> &'static [u8] {
        match self {
            Protocol::H3 => b"h3",
            Protocol::Hq => b"hq-interop",
        }
    }

    /// The protocol a negotiated ALPN identifier names.
    pub fn from_alpn(alpn: &[u8]) -> Option<Protocol> {
        [Protocol::H3, Protocol::Hq]
            .into_iter()
            .find(|p| p.alpn() == alpn)
    }

    /// Its name in logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::H3 => "h3",
            Protocol::Hq => "hq-interop",
        }
    }
}

/// The object size a request path `/<n>` asks for, if it is one.
fn requested_size(path: &[u8]) -> Option<u64> {
    let path = std::str::from_utf8(path).ok()?;
    path.strip_prefix('/')?.parse().ok()
}

/// The application's part of the early-data context of a server running
/// these applications (`quiche::Config::set_early_data_context`): a client
/// sends 0-RTT under the HTTP/3 SETTINGS it remembers (RFC 9114, section
/// 7.2.4.2), so this changes whenever the SETTINGS do, and a server with
/// new ones refuses early data sent under the old.
pub const EARLY_DATA_CONTEXT: &[u8] = b"cr-serve: h3 with quiche's default SETTINGS; hq-interop";

/// A response body still being written.
#[derive(Clone, Copy, Debug)]
struct Reply {
    stream_id: u64,
    /// Body bytes written so far: the offset of the next ones.
    offset: u64,
    remaining: u64,
}

impl Reply {
    /// A reply of `size` bytes on `stream_id`, none written yet.
    fn new(stream_id: u64, size: u64) -> Reply {
        Reply {
            stream_id,
            offset: 0,
            remaining: size,
        }
    }
}

/// Least unsent data a server keeps queued in quiche.
const MIN_WRITE_AHEAD: u64 = 1 << 20;

/// How many more body bytes a server may hand to quiche, having handed
/// `written` so far: enough to keep about two congestion windows (at least
/// [`MIN_WRITE_AHEAD`]) queued beyond what was sent, so the sender is never
/// application-limited (a resumed window would otherwise go unused), while
/// quiche's send buffer, whose cost grows with the data it holds, stays
/// small however large the object is.
fn write_budget(conn: &quiche::Connection, written: u64) -> u64 {
    let sent = conn.stats().sent_bytes;
    let window = conn.path_stats().next().map_or(0, |p| p.cwnd as u64);
    let ahead = window.saturating_mul(2).max(MIN_WRITE_AHEAD);
    sent.saturating_add(ahead).saturating_sub(written)
}

/// What handing body bytes to the transport did.
enum Sent {
    /// This many bytes were taken (FIN too when all were).
    Wrote(usize),
    /// No room now; try again after the next ACK.
    Blocked,
    /// The client stopped or reset the stream: give up on the response.
    Abandoned,
}

/// Writes as much of `reply` as the budget and `send` take; true once the
/// response is over (FIN handed over, or abandoned).
///
/// `send(conn, stream_id, body, fin)` is the protocol's body writer.
fn write_reply(
    conn: &mut quiche::Connection,
    reply: &mut Reply,
    served: &mut Served,
    mut send: impl FnMut(&mut quiche::Connection, u64, &[u8], bool) -> Sent,
) -> bool {
    loop {
        let budget = write_budget(conn, served.body_bytes);
        // The largest piece handed to quiche at once, and so, over
        // HTTP/3, the largest DATA frame, is body::MAX_SLICE.
        let chunk = reply.remaining.min(body::MAX_SLICE as u64).min(budget) as usize;
        let fin = chunk as u64 == reply.remaining;
        if chunk == 0 && !fin {
            return false;
        }
        match send(conn, reply.stream_id, body::slice(reply.offset, chunk), fin) {
            Sent::Wrote(written) => {
                reply.offset += written as u64;
                reply.remaining -= written as u64;
                served.body_bytes += written as u64;
                if fin && written == chunk {
                    served.finish(reply.stream_id);
                    return true;
                }
                if written < chunk || written == 0 {
                    return false;
                }
            }
            Sent::Blocked => return false,
            Sent::Abandoned => {
                served.pending -= 1;
                return true;
            }
        }
    }
}

/// What a server application did on one connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// Requests answered or being answered.
    pub requests: u32,
    /// Body bytes handed to quiche.
    pub body_bytes: u64,
    /// Streams whose whole response (with FIN) is handed to quiche.
    finished_streams: Vec<u64>,
    /// Responses not fully handed to quiche yet.
    pending: usize,
}

impl Served {
    /// Counts a request whose response is about to be written.
    fn start(&mut self) {
        self.requests += 1;
        self.pending += 1;
    }

    /// Counts a response handed to quiche up to its FIN.
    fn finish(&mut self, stream_id: u64) {
        self.pending -= 1;
        self.finished_streams.push(stream_id);
    }

    /// Whether at least one response was written completely and the peer
    /// acknowledged all of every response: quiche drops a stream's state
    /// once both directions are done and acknowledged.
    pub fn all_acknowledged(&self, conn: &mut quiche::Connection) -> bool {
        self.pending == 0
            && !self.finished_streams.is_empty()
            && self.finished_streams.iter().all(|&id| {
                matches!(
                    conn.stream_capacity(id),
                    Err(quiche::Error::InvalidStreamState(_))
                )
            })
    }
}

/// The server side of one connection.
pub enum ServerApp {
    /// Serving HTTP/3.
    H3(Box<h3::Server>),
    /// Serving hq-interop.
    Hq(hq::Server),
}

impl ServerApp {
    /// The server for `protocol`.
    pub fn new(protocol: Protocol) -> ServerApp {
        match protocol {
            Protocol::H3 => ServerApp::H3(Box::default()),
            Protocol::Hq => ServerApp::Hq(hq::Server::default()),
        }
    }

    /// Reads requests and writes responses as far as quiche accepts them.
    /// Errors mean the peer broke the protocol; the caller closes.
    pub fn step(&mut self, conn: &mut quiche::Connection) -> Result<(), ServeError> {
        match self {
            ServerApp::H3(server) => server.step(conn),
            ServerApp::Hq(server) => server.step(conn),
        }
    }

    /// What was served so far.
    pub fn served(&self) -> &Served {
        match self {
            ServerApp::H3(server) => &server.served,
            ServerApp::Hq(server) => &server.served,
        }
    }
}

/// How far a download has come, with times of the caller's clock `T` (an
/// `Instant` on real sockets, virtual time in the simulator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress<T> {
    /// Body bytes received.
    pub received: u64,
    /// Body bytes, from the first, that are [`crate::body`]'s pattern at
    /// their offset: equal to `received` while the whole body so far is
    /// what cr-server sends; it stops growing at the first byte that
    /// differs (from a server sending something else, or corrupted).
    pub verified: u64,
    /// When the first body byte arrived (or the empty body ended).
    pub first_byte: Option<T>,
    /// When the body ended (FIN).
    pub done: Option<T>,
    /// The HTTP status (HTTP/3 only).
    pub status: Option<u16>,
    /// `(time, bytes received so far)` after each read, kept only when
    /// asked for ([`ClientApp::sampled`]), to measure throughput over time.
    pub samples: Option<Vec<(T, u64)>>,
}

impl<T> Default for Progress<T> {
    /// Nothing received yet, no samples kept.
    fn default() -> Self {
        Progress {
            received: 0,
            verified: 0,
            first_byte: None,
            done: None,
            status: None,
            samples: None,
        }
    }
}

impl<T: Copy + Ord> Progress<T> {
    fn add(&mut self, data: &[u8], now: T) {
        if data.is_empty() {
            return;
        }
        if self.verified == self.received {
            self.verified += body::matching(self.received, data) as u64;
        }
        self.received += data.len() as u64;
        self.first_byte.get_or_insert(now);
        if let Some(samples) = &mut self.samples {
            samples.push((now, self.received));
        }
    }

    fn finish(&mut self, now: T) {
        self.first_byte.get_or_insert(now);
        self.done.get_or_insert(now);
    }

    /// Bytes received by `t` (from the samples; 0 without them).
    pub fn received_by(&self, t: T) -> u64 {
        let Some(samples) = &self.samples else {
            return 0;
        };
        let after = samples.partition_point(|&(at, _)| at <= t);
        after.checked_sub(1).map_or(0, |i| samples[i].1)
    }
}

/// The client side: one GET of `/<size>`.
pub struct ClientApp<T> {
    protocol: ClientProtocol,
    progress: Progress<T>,
}

enum ClientProtocol {
    H3(Box<h3::Client>),
    Hq(hq::Client),
}

impl<T: Copy + Ord> ClientApp<T> {
    /// A client that will fetch `size` bytes from `authority` over
    /// `protocol` once the handshake completes.
    pub fn new(protocol: Protocol, size: u64, authority: &str) -> ClientApp<T> {
        let protocol = match protocol {
            Protocol::H3 => ClientProtocol::H3(Box::new(h3::Client::new(size, authority))),
            Protocol::Hq => ClientProtocol::Hq(hq::Client::new(size)),
        };
        ClientApp {
            protocol,
            progress: Progress::default(),
        }
    }

    /// Also records the bytes received after each read
    /// ([`Progress::samples`]).
    pub fn sampled(mut self) -> ClientApp<T> {
        self.progress.samples = Some(Vec::new());
        self
    }

    /// Sends the request when possible and reads what arrived; does nothing
    /// once the body is complete.
    pub fn step(&mut self, conn: &mut quiche::Connection, now: T) -> Result<(), ServeError> {
        if self.is_done() {
            return Ok(());
        }
        match &mut self.protocol {
            ClientProtocol::H3(client) => client.step(conn, now, &mut self.progress),
            ClientProtocol::Hq(client) => client.step(conn, now, &mut self.progress),
        }
    }

    /// The download so far.
    pub fn progress(&self) -> &Progress<T> {
        &self.progress
    }

    /// Whether the whole body arrived.
    pub fn is_done(&self) -> bool {
        self.progress.done.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_sizes() {
        assert_eq!(requested_size(b"/2097152"), Some(2_097_152));
        assert_eq!(requested_size(b"/0"), Some(0));
        assert_eq!(requested_size(b"2097152"), None);
        assert_eq!(requested_size(b"/index.html"), None);
        assert_eq!(requested_size(&[b'/', 0xff]), None);
    }

    /// Only `GET /<n>` asks for a body; any other method, a missing path or
    /// one longer than a size can be is answered 404.
    #[test]
    fn only_a_get_of_a_size_is_a_request() {
        use quiche::h3::Header;
        let request = |method: &[u8], path: Option<&[u8]>| {
            let mut headers = vec![Header::new(b":method", method)];
            headers.extend(path.map(|p| Header::new(b":path", p)));
            h3::request_size(&headers)
        };
        assert_eq!(request(b"GET", Some(b"/65536")), Some(65_536));
        assert_eq!(request(b"POST", Some(b"/65536")), None);
        assert_eq!(request(b"GET", None), None);
        let long = [b"/".as_slice(), &[b'1'; MAX_REQUEST]].concat();
        assert_eq!(request(b"GET", Some(&long)), None);
    }

    #[test]
    fn alpn_round_trips() {
        for p in [Protocol::H3, Protocol::Hq] {
            assert_eq!(Protocol::from_alpn(p.alpn()), Some(p));
        }
        assert_eq!(Protocol::from_alpn(b"h2"), None);
    }

    #[test]
    fn samples_tell_the_bytes_by_a_time() {
        let mut progress = Progress::<u32> {
            samples: Some(Vec::new()),
            ..Progress::default()
        };
        progress.add(body::slice(0, 100), 10);
        progress.add(&[], 15);
        progress.add(body::slice(100, 50), 20);
        assert_eq!(progress.first_byte, Some(10));
        assert_eq!(progress.verified, 150);
        assert_eq!(progress.received_by(9), 0);
        assert_eq!(progress.received_by(19), 100);
        assert_eq!(progress.received_by(20), 150);
        progress.finish(30);
        assert_eq!((progress.first_byte, progress.done), (Some(10), Some(30)));
    }

    #[test]
    fn verified_stops_at_the_first_wrong_byte() {
        let mut progress = Progress::<u32>::default();
        progress.add(body::slice(0, 1000), 1);
        let mut wrong = body::slice(1000, 500).to_vec();
        wrong[20] ^= 0xff;
        progress.add(&wrong, 2);
        // Right bytes after a wrong one do not count.
        progress.add(body::slice(1500, 500), 3);
        assert_eq!((progress.received, progress.verified), (2000, 1020));
    }
}
