//! HTTP/3 through quiche's h3 module: `GET /<n>` answered with status 200
//! and `n` bytes, any other request with 404 and no body, or, while it
//! arrived as early data (0-RTT) the server may not act on, 425 Too Early
//! (RFC 8470): only a GET is idempotent here.

use quiche::h3::NameValue;

use super::{requested_size, write_reply, Progress, Reply, Sent, Served, MAX_REQUEST, READ_CHUNK};
use crate::error::ServeError;

/// Both sides use quiche's default HTTP/3 settings.
fn h3_config() -> Result<quiche::h3::Config, ServeError> {
    Ok(quiche::h3::Config::new()?)
}

/// The size an HTTP/3 request's headers ask for, if it is a `GET /<n>`:
/// what every server of the project (tokio-quiche's included) answers with
/// status 200 and that many bytes.
pub fn request_size(headers: &[quiche::h3::Header]) -> Option<u64> {
    let value = |name: &[u8]| headers.iter().find(|h| h.name() == name).map(|h| h.value());
    if value(b":method")? != b"GET" {
        return None;
    }
    let path = value(b":path")?;
    (path.len() <= MAX_REQUEST).then(|| requested_size(path))?
}

/// The status of a response to a request the server will not act on
/// before the handshake completes (RFC 8470, section 5.2).
const TOO_EARLY: &[u8] = b"425";

/// The HTTP/3 server of one connection.
#[derive(Default)]
pub struct Server {
    h3: Option<quiche::h3::Connection>,
    /// Requests whose response headers are not sent yet, with their status.
    unanswered: Vec<(Reply, &'static [u8])>,
    /// Responses whose body is being sent.
    replies: Vec<Reply>,
    pub(super) served: Served,
}

impl Server {
    /// Reads requests and writes as much of the responses as allowed. The
    /// caller starts it once the handshake is complete, or once the early
    /// data it may act on has arrived.
    pub fn step(&mut self, conn: &mut quiche::Connection) -> Result<(), ServeError> {
        if self.h3.is_none() {
            self.h3 = Some(quiche::h3::Connection::with_transport(conn, &h3_config()?)?);
        }
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        loop {
            match h3.poll(conn) {
                Ok((stream_id, quiche::h3::Event::Headers { list, .. })) => {
                    self.served.start();
                    let (status, size) = match request_size(&list) {
                        Some(size) => (&b"200"[..], size),
                        None if !conn.is_established() => (TOO_EARLY, 0),
                        None => (&b"404"[..], 0),
                    };
                    self.unanswered.push((Reply::new(stream_id, size), status));
                }
                Ok((stream_id, quiche::h3::Event::Data)) => {
                    // Request bodies are not used: read and drop them.
                    let mut sink = [0u8; 4096];
                    while h3.recv_body(conn, stream_id, &mut sink).is_ok() {}
                }
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => break,
                Err(e) => return Err(e.into()),
            }
        }

        let served = &mut self.served;
        let replies = &mut self.replies;
        self.unanswered.retain_mut(|(reply, status)| {
            let length = reply.remaining;
            let length_text = length.to_string();
            let headers = [
                quiche::h3::Header::new(b":status", status),
                quiche::h3::Header::new(b"content-length", length_text.as_bytes()),
            ];
            let empty = length == 0;
            match h3.send_response(conn, reply.stream_id, &headers, empty) {
                Ok(()) if empty => {
                    served.finish(reply.stream_id);
                    false
                }
                Ok(()) => {
                    replies.push(*reply);
                    false
                }
                // No room for the headers yet: try again on the next step.
                Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => true,
                // The client reset the request: nothing to answer.
                Err(_) => {
                    served.pending -= 1;
                    false
                }
            }
        });

        self.replies.retain_mut(|reply| {
            !write_reply(conn, reply, served, |conn, id, body, fin| {
                match h3.send_body(conn, id, body, fin) {
                    Ok(written) => Sent::Wrote(written),
                    Err(quiche::h3::Error::Done | quiche::h3::Error::StreamBlocked) => {
                        Sent::Blocked
                    }
                    Err(_) => Sent::Abandoned,
                }
            })
        });
        Ok(())
    }
}

/// The HTTP/3 client: one GET.
pub struct Client {
    h3: Option<quiche::h3::Connection>,
    path: String,
    authority: String,
    request: Option<u64>,
    buf: Vec<u8>,
}

impl Client {
    /// A client fetching `size` bytes from `authority`.
    pub fn new(size: u64, authority: &str) -> Client {
        Client {
            h3: None,
            path: format!("/{size}"),
            authority: authority.to_string(),
            request: None,
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
        if self.h3.is_none() && (conn.is_established() || conn.is_in_early_data()) {
            self.h3 = Some(quiche::h3::Connection::with_transport(conn, &h3_config()?)?);
        }
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        if self.request.is_none() {
            let headers = [
                quiche::h3::Header::new(b":method", b"GET"),
                quiche::h3::Header::new(b":scheme", b"https"),
                quiche::h3::Header::new(b":authority", self.authority.as_bytes()),
                quiche::h3::Header::new(b":path", self.path.as_bytes()),
            ];
            match h3.send_request(conn, &headers, true) {
                Ok(stream_id) => self.request = Some(stream_id),
                Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        loop {
            match h3.poll(conn) {
                Ok((stream_id, quiche::h3::Event::Headers { list, .. }))
                    if Some(stream_id) == self.request =>
                {
                    progress.status = list
                        .iter()
                        .find(|h| h.name() == b":status")
                        .and_then(|h| std::str::from_utf8(h.value()).ok())
                        .and_then(|s| s.parse().ok());
                }
                Ok((stream_id, quiche::h3::Event::Data)) => loop {
                    match h3.recv_body(conn, stream_id, &mut self.buf) {
                        Ok(read) if Some(stream_id) == self.request => {
                            progress.add(&self.buf[..read], now)
                        }
                        Ok(_) => {}
                        Err(quiche::h3::Error::Done) => break,
                        Err(e) => return Err(e.into()),
                    }
                },
                Ok((stream_id, quiche::h3::Event::Finished)) if Some(stream_id) == self.request => {
                    progress.finish(now);
                    return Ok(());
                }
                Ok((stream_id, quiche::h3::Event::Reset(code)))
                    if Some(stream_id) == self.request =>
                {
                    return Err(ServeError::Peer(format!(
                        "the server reset the request (error {code})"
                    )));
                }
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    }
}
