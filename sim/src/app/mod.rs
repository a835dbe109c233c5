//! The applications run over a connection: a client fetching one object of
//! a given size and a server sending it, over HTTP/3 or one raw stream.

mod h3;
mod stream;

use crate::choices::AppKind;
use crate::error::SimError;
use crate::link::SimTime;

/// A zero-filled chunk the servers send from; body content does not matter.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// Scratch space the clients read into and discard.
const READ_CHUNK: usize = 64 * 1024;

/// How far the client's download has come.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    /// Body bytes received so far.
    pub received: u64,
    /// When the first body byte arrived.
    pub first_byte_at: Option<SimTime>,
    /// When the last body byte arrived.
    pub done_at: Option<SimTime>,
    /// `(time, bytes received so far)` after each read, kept only for flows
    /// whose throughput over time is measured.
    pub samples: Option<Vec<(SimTime, u64)>>,
}

impl Progress {
    /// Records `bytes` of body read at `now`.
    fn add(&mut self, now: SimTime, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.received += bytes as u64;
        self.first_byte_at.get_or_insert(now);
        if let Some(samples) = &mut self.samples {
            samples.push((now, self.received));
        }
    }

    /// Bytes received by `t` (from the samples; 0 without them).
    pub fn received_by(&self, t: SimTime) -> u64 {
        let Some(samples) = &self.samples else {
            return 0;
        };
        let after = samples.partition_point(|&(at, _)| at <= t);
        after.checked_sub(1).map_or(0, |i| samples[i].1)
    }
}

/// The client side: requests `size` bytes once the handshake is done and
/// reads the reply.
pub struct ClientApp {
    inner: ClientKind,
    size: u64,
    progress: Progress,
}

enum ClientKind {
    H3(Box<h3::Client>),
    Stream(stream::Client),
}

impl ClientApp {
    /// A client of `kind` that will fetch `size` bytes; `sample` keeps the
    /// progress over time.
    pub fn new(kind: AppKind, size: u64, sample: bool) -> ClientApp {
        let inner = match kind {
            AppKind::H3 => ClientKind::H3(Box::default()),
            AppKind::Stream => ClientKind::Stream(stream::Client::default()),
        };
        ClientApp {
            inner,
            size,
            progress: Progress {
                samples: sample.then(Vec::new),
                ..Progress::default()
            },
        }
    }

    /// Moves the application on after the connection changed.
    pub fn step(&mut self, conn: &mut quiche::Connection, now: SimTime) -> Result<(), SimError> {
        if self.progress.done_at.is_some() {
            return Ok(());
        }
        let finished = match &mut self.inner {
            ClientKind::H3(c) => c.step(conn, self.size, now, &mut self.progress)?,
            ClientKind::Stream(c) => c.step(conn, self.size, now, &mut self.progress)?,
        };
        if finished {
            self.progress.done_at = Some(now);
        }
        Ok(())
    }

    /// The download's progress.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Whether the whole object arrived.
    pub fn is_done(&self) -> bool {
        self.progress.done_at.is_some()
    }
}

/// The server side: answers requests with the number of bytes asked for.
pub struct ServerApp {
    inner: ServerKind,
}

enum ServerKind {
    H3(Box<h3::Server>),
    Stream(stream::Server),
}

impl ServerApp {
    /// A server of `kind`.
    pub fn new(kind: AppKind) -> ServerApp {
        let inner = match kind {
            AppKind::H3 => ServerKind::H3(Box::default()),
            AppKind::Stream => ServerKind::Stream(stream::Server::default()),
        };
        ServerApp { inner }
    }

    /// Moves the application on after the connection changed.
    pub fn step(&mut self, conn: &mut quiche::Connection) -> Result<(), SimError> {
        match &mut self.inner {
            ServerKind::H3(s) => s.step(conn),
            ServerKind::Stream(s) => s.step(conn),
        }
    }
}

/// A reply being written: which stream and how many bytes are left.
#[derive(Clone, Copy, Debug)]
struct Reply {
    stream_id: u64,
    remaining: u64,
}

/// Least a server keeps buffered in quiche beyond what it has sent.
const MIN_WRITE_AHEAD: u64 = 1 << 20;

/// Bytes a server may hand to quiche now, having written `written` so far.
///
/// Servers keep about two congestion windows (at least 1 MiB) of unsent
/// data in quiche rather than the whole object: always more than the
/// sender can use, so it is never application-limited, while quiche's send
/// buffer, whose cost grows with the data it holds, stays small.
fn write_budget(conn: &quiche::Connection, written: u64) -> u64 {
    let sent = conn.stats().sent_bytes;
    let window = conn.path_stats().next().map_or(0, |p| p.cwnd as u64);
    let ahead = window.saturating_mul(2).max(MIN_WRITE_AHEAD);
    sent.saturating_add(ahead).saturating_sub(written)
}
