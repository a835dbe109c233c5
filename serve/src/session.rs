//! One server-side connection as `cr-server` and the simulator both serve
//! it: the quiche connection with its token's outcome, the application
//! chosen by ALPN, the order in which Careful Resume's housekeeping, the
//! application and sending take turns, and what goes into its report.
//!
//! The caller owns the sockets (or the simulated link) and the clock: it
//! hands datagrams in with [`ServerSession::recv`], fires timers, and gives
//! [`ServerSession::serve`] a `flush` that sends what quiche has ready.

use std::time::{Duration, Instant, SystemTime};

use cr_endpoint::careful_resume::Phase;
use cr_endpoint::ex_token::{Rng, TokenGuard};
use cr_endpoint::{Accepted, ResumeServer};

use crate::app::{Protocol, ServerApp};
use crate::error::ServeError;
use crate::report::ConnectionReport;

/// Application error code for a peer that broke the application protocol
/// (H3_GENERAL_PROTOCOL_ERROR; hq-interop has no codes of its own).
const APP_PROTOCOL_ERROR: u64 = 0x101;

/// H3_NO_ERROR, the code of an HTTP/3 connection closed cleanly.
const H3_NO_ERROR: u64 = 0x100;

/// A connection being served.
pub struct ServerSession {
    accepted: Accepted,
    app: Option<ServerApp>,
    protocol: Option<Protocol>,
    started: Instant,
    /// Set while every response so far is acknowledged: the completion time.
    completed: Option<Instant>,
    /// The destination connection ID of the client's first Initial (hex).
    client_dcid: String,
    /// Why the application gave up on the peer, if it did.
    app_error: Option<ServeError>,
}

impl ServerSession {
    /// Wraps a connection [`ResumeServer::accept`] returned for a client
    /// whose first Initial was addressed to `client_dcid`; `started` is when
    /// that Initial arrived.
    pub fn new(accepted: Accepted, client_dcid: &[u8], started: Instant) -> ServerSession {
        ServerSession {
            accepted,
            app: None,
            protocol: None,
            started,
            completed: None,
            client_dcid: client_dcid.iter().map(|b| format!("{b:02x}")).collect(),
            app_error: None,
        }
    }

    /// The quiche connection.
    pub fn conn(&mut self) -> &mut quiche::Connection {
        &mut self.accepted.conn
    }

    /// The quiche connection, read-only.
    pub fn conn_ref(&self) -> &quiche::Connection {
        &self.accepted.conn
    }

    /// What became of the client's early data (0-RTT), as far as known.
    pub fn early_data(&self) -> cr_endpoint::EarlyData {
        self.accepted.session.early_data()
    }

    /// Why the application closed the connection, if the peer broke the
    /// application protocol.
    pub fn app_error(&self) -> Option<&ServeError> {
        self.app_error.as_ref()
    }

    /// Hands a datagram from the client to quiche, after the guard's answer
    /// to a pending claim of the saved set ([`ResumeServer::poll_claim`]),
    /// which must reach the connection before a packet that could make it
    /// jump. A datagram quiche rejects is dropped, as on a real socket; a
    /// fatal error closes the connection, which its report tells.
    pub fn recv<R: Rng, G: TokenGuard>(
        &mut self,
        resume: &ResumeServer<R, G>,
        datagram: &mut [u8],
        info: quiche::RecvInfo,
    ) {
        resume.poll_claim(&mut self.accepted.conn, &mut self.accepted.session);
        let _ = self.accepted.conn.recv(datagram, info);
    }

    /// Whether the guard's answer to the claim of the presented saved set is
    /// awaited (the jump waits for it): the loop should come back within a
    /// millisecond or so to hand it over ([`ResumeServer::poll_claim`]).
    pub fn claim_pending(&self) -> bool {
        self.accepted.session.claim_pending()
    }

    /// The connection is being dropped: Careful Resume's last word on it
    /// ([`ResumeServer::on_closed`]: an unused saved set is released).
    pub fn on_closed<R: Rng, G: TokenGuard>(
        &mut self,
        resume: &ResumeServer<R, G>,
        wall: SystemTime,
    ) {
        resume.on_closed(&mut self.accepted.conn, &mut self.accepted.session, wall);
    }

    /// Brings the connection forward after a receive or a timeout: Careful
    /// Resume's housekeeping (tokens for the next connection, the claim's
    /// answer), then the application, then `flush`, which sends what quiche
    /// has ready and says how many datagrams that was.
    ///
    /// quiche lets the application write only what the congestion window
    /// has room for, and sending can open the window (a Careful Resume jump
    /// happens on a packet sent): after a flush that sent something, the
    /// application gets one more turn to use the room.
    pub fn serve<R: Rng, G: TokenGuard, E>(
        &mut self,
        resume: &mut ResumeServer<R, G>,
        now: Instant,
        wall: SystemTime,
        mut flush: impl FnMut(&mut quiche::Connection) -> Result<usize, E>,
    ) -> Result<(), E> {
        resume.on_progress(&mut self.accepted.conn, &mut self.accepted.session, wall);
        for _ in 0..2 {
            self.run_app(now);
            if flush(&mut self.accepted.conn)? == 0 {
                break;
            }
        }
        Ok(())
    }

    fn run_app(&mut self, now: Instant) {
        let conn = &mut self.accepted.conn;
        // Early data is acted on before the handshake completes only once
        // the guard has recorded its first flight as new (a replay waits
        // for a handshake it never completes).
        let early = conn.is_in_early_data() && self.accepted.session.early_data_accepted();
        if self.app.is_none() && (conn.is_established() || early) {
            match Protocol::from_alpn(conn.application_proto()) {
                Some(protocol) => {
                    self.protocol = Some(protocol);
                    self.app = Some(ServerApp::new(protocol));
                }
                // quiche only completes handshakes on an offered ALPN.
                None => return,
            }
        }
        let Some(app) = self.app.as_mut() else {
            return;
        };
        if let Err(e) = app.step(conn) {
            let _ = conn.close(true, APP_PROTOCOL_ERROR, e.to_string().as_bytes());
            self.app_error.get_or_insert(e);
            return;
        }
        if app.served().all_acknowledged(conn) {
            self.completed.get_or_insert(now);
        } else {
            self.completed = None;
        }
    }

    /// From the client's first packet to the moment every response so far
    /// was acknowledged, if all are.
    pub fn completion(&self) -> Option<Duration> {
        self.completed.map(|at| at - self.started)
    }

    /// The report of a connection that ended at `now`.
    pub fn report(&self, now: Instant) -> ConnectionReport {
        let conn = &self.accepted.conn;
        let served = self.app.as_ref().map(ServerApp::served);
        let stats = conn.stats();
        let error = conn
            .peer_error()
            .map(|e| ("peer", e))
            .or(conn.local_error().map(|e| ("local", e)))
            .filter(|(_, e)| !(e.error_code == 0 || e.is_app && e.error_code == H3_NO_ERROR))
            .map(|(side, e)| {
                format!(
                    "{side}:{}{:#x}:{}",
                    if e.is_app { "app" } else { "" },
                    e.error_code,
                    String::from_utf8_lossy(&e.reason)
                )
            })
            .or_else(|| conn.is_timed_out().then(|| "idle timeout".to_string()));
        // The phases entered, after the Reconnaissance every resumed
        // connection starts in.
        let resume = self.accepted.stats();
        let phases = conn
            .careful_resume()
            .map(|_| Phase::Reconnaissance)
            .into_iter()
            .chain(resume.phases.iter().map(|&(phase, _)| phase))
            .collect();
        ConnectionReport {
            peer: self.accepted.session.peer,
            trace_id: conn.trace_id().to_string(),
            client_dcid: self.client_dcid.clone(),
            protocol: self.protocol,
            established: conn.is_established(),
            token_presented: resume.token_presented,
            address_validated: self.accepted.session.address_validated,
            resume: self.accepted.session.resume,
            phases,
            jump_window: resume.jump_window,
            requests: served.map_or(0, |s| s.requests),
            body_bytes: served.map_or(0, |s| s.body_bytes),
            completion: self.completion(),
            lifetime: now.saturating_duration_since(self.started),
            packets: (stats.sent, stats.lost),
            error,
            early_data: self.accepted.session.early_data(),
        }
    }
}
