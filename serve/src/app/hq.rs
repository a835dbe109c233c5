//! hq-interop: the request is the line `GET /<n>\r\n` on a client-initiated
//! bidirectional stream (then FIN), the response is the body, then FIN.
//! There is no status and no header: a request the server does not
//! understand gets an empty body.

use std::collections::{HashMap, HashSet};

use super::{requested_size, write_reply, Progress, Reply, Sent, Served, MAX_REQUEST, READ_CHUNK};
use crate::error::ServeError;

/// Whether a stream id is bidirectional and opened by the client.
fn is_client_bidi(stream_id: u64) -> bool {
    stream_id.is_multiple_of(4)
}

/// The size a complete request line asks for (0 when unparseable).
fn parse_request(line: &[u8]) -> u64 {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"GET ")
        .and_then(|path| requested_size(path.split(|&b| b == b' ').next().unwrap_or(path)))
        .unwrap_or(0)
}

/// The hq-interop server of one connection.
#[derive(Default)]
pub struct Server {
    /// Request bytes read so far, per stream, until the line is complete.
    partial: HashMap<u64, Vec<u8>>,
    /// Streams whose request was taken; later bytes on them are discarded.
    answered: HashSet<u64>,
    /// Responses still being written.
    replies: Vec<Reply>,
    pub(super) served: Served,
}

impl Server {
    /// Reads requests and writes as much of the responses as allowed.
    pub fn step(&mut self, conn: &mut quiche::Connection) -> Result<(), ServeError> {
        let mut buf = [0u8; 2048];
        let readable: Vec<u64> = conn.readable().collect();
        for stream_id in readable {
            // Stops at Done, or when the peer reset the stream.
            while let Ok((read, fin)) = conn.stream_recv(stream_id, &mut buf) {
                if !is_client_bidi(stream_id) || self.answered.contains(&stream_id) {
                    continue;
                }
                let line = self.partial.entry(stream_id).or_default();
                let room = MAX_REQUEST.saturating_sub(line.len());
                line.extend_from_slice(&buf[..read.min(room)]);
                let complete = fin || line.contains(&b'\n') || line.len() >= MAX_REQUEST;
                if complete {
                    let line = self.partial.remove(&stream_id).unwrap_or_default();
                    self.answered.insert(stream_id);
                    self.served.start();
                    self.replies
                        .push(Reply::new(stream_id, parse_request(&line)));
                }
            }
        }
        let served = &mut self.served;
        self.replies.retain_mut(|reply| {
            !write_reply(conn, reply, served, |conn, id, body, fin| {
                match conn.stream_send(id, body, fin) {
                    Ok(written) => Sent::Wrote(written),
                    Err(quiche::Error::Done) => Sent::Blocked,
                    // Stopped or reset by the client.
                    Err(_) => Sent::Abandoned,
                }
            })
        });
        Ok(())
    }
}

/// The hq-interop client: one request on stream 0.
pub struct Client {
    request: Vec<u8>,
    sent: usize,
    buf: Vec<u8>,
}

/// The stream the client's one request goes on.
const STREAM: u64 = 0;

impl Client {
    /// A client fetching `size` bytes.
    pub fn new(size: u64) -> Client {
        Client {
            request: format!("GET /{size}\r\n").into_bytes(),
            sent: 0,
            buf: vec![0; READ_CHUNK],
        }
    }

    /// Sends the request once the handshake is done, or at once in early
    /// data when resuming a TLS session, and reads the body.
    pub fn step<T: Copy + Ord>(
        &mut self,
        conn: &mut quiche::Connection,
        now: T,
        progress: &mut Progress<T>,
    ) -> Result<(), ServeError> {
        if !conn.is_established() && !conn.is_in_early_data() {
            return Ok(());
        }
        if self.sent < self.request.len() {
            match conn.stream_send(STREAM, &self.request[self.sent..], true) {
                Ok(written) => self.sent += written,
                Err(quiche::Error::Done) => {}
                Err(e) => return Err(e.into()),
            }
        }
        loop {
            match conn.stream_recv(STREAM, &mut self.buf) {
                Ok((read, fin)) => {
                    progress.add(&self.buf[..read], now);
                    if fin {
                        progress.finish(now);
                        return Ok(());
                    }
                }
                Err(quiche::Error::Done) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(parse_request(b"GET /1000\r\n"), 1000);
        assert_eq!(parse_request(b"GET /1000\n"), 1000);
        assert_eq!(parse_request(b"GET /1000"), 1000);
        assert_eq!(parse_request(b"GET /1000 HTTP/1.0\r\n"), 1000);
        assert_eq!(parse_request(b"PUT /1000\r\n"), 0);
        assert_eq!(parse_request(b"GET /x\r\n"), 0);
        assert_eq!(parse_request(&[0xff; 40]), 0);
    }
}
