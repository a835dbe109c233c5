//! HTTP/3 GET through quiche's h3 module.
//!
//! The client asks for `/<size>`; the server answers 200 with that many
//! bytes. Errors other than "would block" end the simulation with an error,
//! since they mean the endpoints disagree, which is a bug worth seeing.

use quiche::h3::NameValue;

use super::write_budget;
use super::Progress;
use super::Reply;
use super::READ_CHUNK;
use super::ZEROS;
use crate::error::SimError;
use crate::link::SimTime;

/// The HTTP/3 settings both sides use: quiche's defaults.
fn h3_config() -> Result<quiche::h3::Config, SimError> {
    Ok(quiche::h3::Config::new()?)
}

/// The client: one GET, then reads the body.
#[derive(Default)]
pub struct Client {
    h3: Option<quiche::h3::Connection>,
    request: Option<u64>,
    buf: Vec<u8>,
}

impl Client {
    /// Sends the request once possible and reads what arrived; true when the
    /// whole body is in.
    pub fn step(
        &mut self,
        conn: &mut quiche::Connection,
        size: u64,
        now: SimTime,
        progress: &mut Progress,
    ) -> Result<bool, SimError> {
        if self.h3.is_none() {
            if !conn.is_established() {
                return Ok(false);
            }
            self.h3 = Some(quiche::h3::Connection::with_transport(conn, &h3_config()?)?);
            self.buf = vec![0; READ_CHUNK];
        }
        let Some(h3) = self.h3.as_mut() else {
            return Ok(false);
        };
        if self.request.is_none() {
            let path = format!("/{size}");
            let headers = [
                quiche::h3::Header::new(b":method", b"GET"),
                quiche::h3::Header::new(b":scheme", b"https"),
                quiche::h3::Header::new(b":authority", crate::endpoint::SERVER_NAME.as_bytes()),
                quiche::h3::Header::new(b":path", path.as_bytes()),
            ];
            match h3.send_request(conn, &headers, true) {
                Ok(id) => self.request = Some(id),
                Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => {
                    return Ok(false)
                }
                Err(e) => return Err(e.into()),
            }
        }
        loop {
            match h3.poll(conn) {
                Ok((stream_id, quiche::h3::Event::Data)) => loop {
                    match h3.recv_body(conn, stream_id, &mut self.buf) {
                        Ok(read) => progress.add(now, read),
                        Err(quiche::h3::Error::Done) => break,
                        Err(e) => return Err(e.into()),
                    }
                },
                Ok((stream_id, quiche::h3::Event::Finished)) if Some(stream_id) == self.request => {
                    return Ok(true)
                }
                Ok((_, quiche::h3::Event::Reset(code))) => {
                    return Err(SimError::Stalled(format!(
                        "the server reset the request ({code})"
                    )))
                }
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The server: answers each GET `/<n>` with `n` zero bytes.
#[derive(Default)]
pub struct Server {
    h3: Option<quiche::h3::Connection>,
    /// Requests whose response headers are not sent yet.
    unanswered: Vec<Reply>,
    /// Responses whose body is still being sent.
    replies: Vec<Reply>,
    /// Body bytes handed to quiche so far.
    written: u64,
}

impl Server {
    /// Reads requests and writes as much of the replies as flow and
    /// congestion control allow.
    pub fn step(&mut self, conn: &mut quiche::Connection) -> Result<(), SimError> {
        if self.h3.is_none() {
            if !conn.is_established() {
                return Ok(());
            }
            self.h3 = Some(quiche::h3::Connection::with_transport(conn, &h3_config()?)?);
        }
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        loop {
            match h3.poll(conn) {
                Ok((stream_id, quiche::h3::Event::Headers { list, .. })) => {
                    let size = list
                        .iter()
                        .find(|h| h.name() == b":path")
                        .and_then(|h| std::str::from_utf8(h.value()).ok())
                        .and_then(|p| p.trim_start_matches('/').parse::<u64>().ok())
                        .unwrap_or(0);
                    self.unanswered.push(Reply {
                        stream_id,
                        remaining: size,
                    });
                }
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => break,
                Err(e) => return Err(e.into()),
            }
        }
        let mut still_unanswered = Vec::new();
        for reply in self.unanswered.drain(..) {
            let length = reply.remaining.to_string();
            let headers = [
                quiche::h3::Header::new(b":status", b"200"),
                quiche::h3::Header::new(b"content-length", length.as_bytes()),
            ];
            match h3.send_response(conn, reply.stream_id, &headers, reply.remaining == 0) {
                Ok(()) => self.replies.push(reply),
                Err(quiche::h3::Error::StreamBlocked | quiche::h3::Error::Done) => {
                    still_unanswered.push(reply)
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.unanswered = still_unanswered;
        for reply in &mut self.replies {
            while reply.remaining > 0 {
                let budget = write_budget(conn, self.written);
                if budget == 0 {
                    break;
                }
                let chunk = reply.remaining.min(ZEROS.len() as u64).min(budget) as usize;
                let fin = chunk as u64 == reply.remaining;
                match h3.send_body(conn, reply.stream_id, &ZEROS[..chunk], fin) {
                    Ok(0) => break,
                    Ok(written) => {
                        reply.remaining -= written as u64;
                        self.written += written as u64;
                    }
                    Err(quiche::h3::Error::Done | quiche::h3::Error::StreamBlocked) => break,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.replies.retain(|r| r.remaining > 0);
        Ok(())
    }
}
