//! The applications both programs speak: `GET /<bytes>` over HTTP/3
//! (quiche's h3 module) or over hq-interop (the interop runner's
//! HTTP/0.9-over-QUIC: `GET /<n>\r\n` on a bidirectional stream, the body,
//! FIN). The body is `<n>` zero bytes; only its size matters.

mod h3;
mod hq;

use std::time::Instant;

use crate::error::AppError;

/// A zero-filled chunk every response body is cut from.
static ZEROS: [u8; 32 * 1024] = [0; 32 * 1024];

/// Longest request (hq-interop request line or HTTP/3 path) a server reads;
/// anything longer is answered with an empty body.
const MAX_REQUEST: usize = 1024;

/// The application protocol, chosen by ALPN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// HTTP/3 (ALPN `h3`).
    H3,
    /// hq-interop (ALPN `hq-interop`), which quinn and most interop
    /// clients speak without an HTTP/3 stack.
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

    /// Its name in logs.
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

/// A response body still being written.
#[derive(Clone, Copy, Debug)]
struct Reply {
    stream_id: u64,
    remaining: u64,
}

/// Least unsent data a server keeps queued in quiche.
const MIN_QUEUED: u64 = 512 * 1024;

/// How many more body bytes a server may hand to quiche, having handed
/// `written` so far: enough to keep about two congestion windows queued
/// beyond what was sent, so the sender is never application-limited (a
/// resumed window would otherwise go unused) while quiche's send buffers
/// stay small however large the object is.
fn write_allowance(conn: &quiche::Connection, written: u64) -> u64 {
    let cwnd = conn.path_stats().next().map_or(0, |p| p.cwnd as u64);
    let target = conn.stats().sent_bytes + (2 * cwnd).max(MIN_QUEUED);
    target.saturating_sub(written)
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

/// Writes as much of `reply` as the allowance and `send` take; true once
/// the response is over (FIN handed over, or abandoned).
///
/// `send(conn, stream_id, body, fin)` is the protocol's body writer.
fn write_reply(
    conn: &mut quiche::Connection,
    reply: &mut Reply,
    served: &mut Served,
    mut send: impl FnMut(&mut quiche::Connection, u64, &[u8], bool) -> Sent,
) -> bool {
    loop {
        let allowance = write_allowance(conn, served.body_bytes);
        let chunk = reply.remaining.min(ZEROS.len() as u64).min(allowance) as usize;
        let fin = chunk as u64 == reply.remaining;
        if chunk == 0 && !fin {
            return false;
        }
        match send(conn, reply.stream_id, &ZEROS[..chunk], fin) {
            Sent::Wrote(written) => {
                reply.remaining -= written as u64;
                served.body_bytes += written as u64;
                if fin && written == chunk {
                    served.pending -= 1;
                    served.finished_streams.push(reply.stream_id);
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
    pub fn step(&mut self, conn: &mut quiche::Connection) -> Result<(), AppError> {
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

/// How far a download has come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Body bytes received.
    pub received: u64,
    /// When the first body byte arrived (or the empty body ended).
    pub first_byte: Option<Instant>,
    /// When the body ended (FIN).
    pub done: Option<Instant>,
    /// The HTTP status (HTTP/3 only).
    pub status: Option<u16>,
}

impl Progress {
    fn add(&mut self, bytes: usize, now: Instant) {
        if bytes > 0 {
            self.received += bytes as u64;
            self.first_byte.get_or_insert(now);
        }
    }

    fn finish(&mut self, now: Instant) {
        self.first_byte.get_or_insert(now);
        self.done.get_or_insert(now);
    }
}

/// The client side: one GET of `/<size>`.
pub enum ClientApp {
    /// Over HTTP/3.
    H3(Box<h3::Client>),
    /// Over hq-interop.
    Hq(hq::Client),
}

impl ClientApp {
    /// A client that will fetch `size` bytes from `authority` over
    /// `protocol` once the handshake completes.
    pub fn new(protocol: Protocol, size: u64, authority: &str) -> ClientApp {
        match protocol {
            Protocol::H3 => ClientApp::H3(Box::new(h3::Client::new(size, authority))),
            Protocol::Hq => ClientApp::Hq(hq::Client::new(size)),
        }
    }

    /// Sends the request when possible and reads what arrived.
    pub fn step(&mut self, conn: &mut quiche::Connection, now: Instant) -> Result<(), AppError> {
        match self {
            ClientApp::H3(client) => client.step(conn, now),
            ClientApp::Hq(client) => client.step(conn, now),
        }
    }

    /// The download so far.
    pub fn progress(&self) -> &Progress {
        match self {
            ClientApp::H3(client) => &client.progress,
            ClientApp::Hq(client) => &client.progress,
        }
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

    #[test]
    fn alpn_round_trips() {
        for p in [Protocol::H3, Protocol::Hq] {
            assert_eq!(Protocol::from_alpn(p.alpn()), Some(p));
        }
        assert_eq!(Protocol::from_alpn(b"h2"), None);
    }
}
