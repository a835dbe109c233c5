//! One server-side connection: the quiche connection with its token
//! outcome, the application serving it, and what goes into its report.

use std::path::Path;
use std::time::{Instant, SystemTime};

use cr_endpoint::careful_resume::Phase;
use cr_endpoint::ex_token::{SystemRng, TokenGuard};
use cr_endpoint::{Accepted, ResumeServer};

use crate::app::{Protocol, ServerApp};
use crate::error::AppError;
use crate::net::{drain_connection, Outbox};
use crate::report::ConnectionReport;

/// Application error code for a peer that broke the application protocol
/// (H3_GENERAL_PROTOCOL_ERROR; hq-interop has no codes of its own).
const APP_PROTOCOL_ERROR: u64 = 0x101;

/// A connection being served.
pub struct Session {
    accepted: Accepted,
    app: Option<ServerApp>,
    protocol: Option<Protocol>,
    started: Instant,
    /// Set while every response so far is acknowledged: the completion time.
    completed: Option<Instant>,
    /// The destination connection ID of the client's first Initial (hex).
    client_dcid: String,
    /// When the pacer lets the connection send again, if it held a packet.
    next_send: Option<Instant>,
}

impl Session {
    /// Wraps a connection `ResumeServer::accept` returned; `started` is when
    /// its first datagram arrived.
    pub fn new(
        accepted: Accepted,
        client_dcid: &[u8],
        qlog_dir: Option<&Path>,
        started: Instant,
    ) -> Result<Session, AppError> {
        let client_dcid = client_dcid.iter().map(|b| format!("{b:02x}")).collect();
        let mut session = Session {
            accepted,
            app: None,
            protocol: None,
            started,
            completed: None,
            client_dcid,
            next_send: None,
        };
        if let Some(dir) = qlog_dir {
            crate::qlog::attach(&mut session.accepted.conn, dir, "server")?;
        }
        Ok(session)
    }

    /// The quiche connection.
    pub fn conn(&mut self) -> &mut quiche::Connection {
        &mut self.accepted.conn
    }

    /// When quiche's next timer fires.
    pub fn timeout_instant(&self) -> Option<Instant> {
        self.accepted.conn.timeout_instant()
    }

    /// When the connection's pacer lets it send its next packet, if the last
    /// [`Session::progress`] left one held back.
    pub fn next_send(&self) -> Option<Instant> {
        self.next_send
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.accepted.conn.is_closed()
    }

    /// Hands the guard's answer to a connection whose claim of a saved set
    /// was pending ([`ResumeServer::poll_claim`]).
    pub fn poll_claim<G: TokenGuard>(&mut self, resume: &ResumeServer<SystemRng, G>) {
        resume.poll_claim(&mut self.accepted.conn, &mut self.accepted.session);
    }

    /// Brings the connection forward after a receive or timeout: runs the
    /// application, sends tokens, records Careful Resume's phase, and
    /// queues whatever quiche wants to send.
    pub fn progress<G: TokenGuard>(
        &mut self,
        resume: &mut ResumeServer<SystemRng, G>,
        outbox: &mut Outbox,
        now: Instant,
    ) {
        self.run_app(now);
        resume.on_progress(
            &mut self.accepted.conn,
            &mut self.accepted.session,
            SystemTime::now(),
        );
        self.next_send = drain_connection(&mut self.accepted.conn, outbox);
    }

    fn run_app(&mut self, now: Instant) {
        let conn = &mut self.accepted.conn;
        if self.app.is_none() && conn.is_established() {
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
            let reason = e.to_string();
            let _ = conn.close(true, APP_PROTOCOL_ERROR, reason.as_bytes());
            return;
        }
        if app.served().all_acknowledged(conn) {
            self.completed.get_or_insert(now);
        } else {
            self.completed = None;
        }
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
            .filter(|(_, e)| !(e.error_code == 0 || e.is_app && e.error_code == 0x100))
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
            token_presented: resume.token_presented,
            address_validated: self.accepted.session.address_validated,
            resume: self.accepted.session.resume,
            phases,
            jump_window: resume.jump_window,
            requests: served.map_or(0, |s| s.requests),
            body_bytes: served.map_or(0, |s| s.body_bytes),
            completion: self.completed.map(|at| at - self.started),
            lifetime: now - self.started,
            packets: (stats.sent, stats.lost),
            error,
        }
    }
}
