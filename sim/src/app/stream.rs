//! One raw bidirectional stream: the client sends the size it wants as 8
//! big-endian bytes and a FIN; the server replies with that many bytes and
//! a FIN. No framing, so the transport alone is measured.

use super::write_budget;
use super::Progress;
use super::Reply;
use super::READ_CHUNK;
use super::ZEROS;
use crate::error::SimError;
use crate::link::SimTime;

/// The client-initiated bidirectional stream used for the request.
const STREAM_ID: u64 = 0;

/// The client: one request, then reads the reply.
#[derive(Default)]
pub struct Client {
    requested: bool,
    buf: Vec<u8>,
}

impl Client {
    /// Sends the request once possible and reads what arrived; true when the
    /// whole reply is in.
    pub fn step(
        &mut self,
        conn: &mut quiche::Connection,
        size: u64,
        now: SimTime,
        progress: &mut Progress,
    ) -> Result<bool, SimError> {
        if !conn.is_established() {
            return Ok(false);
        }
        if !self.requested {
            match conn.stream_send(STREAM_ID, &size.to_be_bytes(), true) {
                Ok(8) => self.requested = true,
                Ok(_) | Err(quiche::Error::Done) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
            self.buf = vec![0; READ_CHUNK];
        }
        loop {
            match conn.stream_recv(STREAM_ID, &mut self.buf) {
                Ok((read, fin)) => {
                    progress.add(now, read);
                    if fin {
                        return Ok(true);
                    }
                }
                Err(quiche::Error::Done) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The server: reads 8-byte requests and replies with that many bytes.
#[derive(Default)]
pub struct Server {
    request: Vec<u8>,
    reply: Option<Reply>,
    /// Reply bytes handed to quiche so far.
    written: u64,
}

impl Server {
    /// Reads the request and writes as much of the reply as allowed.
    pub fn step(&mut self, conn: &mut quiche::Connection) -> Result<(), SimError> {
        if self.reply.is_none() {
            let mut buf = [0u8; 64];
            loop {
                match conn.stream_recv(STREAM_ID, &mut buf) {
                    Ok((read, fin)) => {
                        self.request.extend_from_slice(&buf[..read]);
                        if fin {
                            let mut size = [0u8; 8];
                            let n = self.request.len().min(8);
                            size[8 - n..].copy_from_slice(&self.request[..n]);
                            self.reply = Some(Reply {
                                stream_id: STREAM_ID,
                                remaining: u64::from_be_bytes(size),
                            });
                            break;
                        }
                    }
                    Err(quiche::Error::Done | quiche::Error::InvalidStreamState(_)) => break,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let Some(reply) = self.reply.as_mut() else {
            return Ok(());
        };
        while reply.remaining > 0 {
            let budget = write_budget(conn, self.written);
            if budget == 0 {
                break;
            }
            let chunk = reply.remaining.min(ZEROS.len() as u64).min(budget) as usize;
            let fin = chunk as u64 == reply.remaining;
            match conn.stream_send(reply.stream_id, &ZEROS[..chunk], fin) {
                Ok(0) | Err(quiche::Error::Done) => break,
                Ok(written) => {
                    reply.remaining -= written as u64;
                    self.written += written as u64;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
