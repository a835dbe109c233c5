//! Careful Resume (RFC 9959) for servers built on
//! [tokio-quiche](https://crates.io/crates/tokio-quiche): wrap the
//! application, keep the rest.
//!
//! tokio-quiche accepts connections itself and hands the application a
//! `quiche::Connection` once the handshake is complete, through the
//! [`ApplicationOverQuic`] trait. [`CarefulResumeApp`] wraps any such
//! application (tokio-quiche's HTTP/3 driver, or your own): when the
//! connection is established it reads the token of the client's first
//! Initial (`Connection::initial_token()`, quiche-cr's patch 0013),
//! validates it, claims its saved set in the guard and starts Careful
//! Resume; as the connection runs it sends BDP tokens with NEW_TOKEN, with
//! exactly the lifecycle of [`cr_endpoint::ResumeServer`] (which it drives:
//! nothing is copied). Every call is then handed to the wrapped application
//! unchanged.
//!
//! ```no_run
//! # async fn serve(
//! #     mut incoming: tokio_quiche::QuicConnectionStream<tokio_quiche::metrics::DefaultMetrics>,
//! #     resume: tokio_cr::SharedResumeServer,
//! # ) {
//! use futures::StreamExt;
//! use tokio_quiche::http3::settings::Http3Settings;
//! use tokio_quiche::ServerH3Driver;
//!
//! while let Some(Ok(conn)) = incoming.next().await {
//!     let (driver, controller) = ServerH3Driver::new(Http3Settings::default());
//!     // The one line Careful Resume needs:
//!     let app = tokio_cr::CarefulResumeApp::new(driver, resume.clone(), conn.peer_addr());
//!     conn.start(app);
//!     // ... serve requests from `controller` as usual.
//! #   drop(controller);
//! }
//! # }
//! ```
//!
//! # Settings a tokio-quiche server needs
//!
//! - `QuicSettings::disable_client_ip_validation = true`. tokio-quiche's
//!   default validates client addresses with a stateless Retry and drops
//!   every Initial whose token is not one of its own Retry tokens, so a
//!   returning client that echoes a NEW_TOKEN token would get no answer at
//!   all. With validation disabled, tokio-quiche ignores the token and
//!   quiche keeps it for us. The address is then validated by the
//!   handshake, as for any client without a token: a valid token cannot
//!   lift the anti-amplification limit earlier, because the connection
//!   reaches us only after the handshake.
//! - The `ex_token` transport parameter (draft-misell-quic-ex-token)
//!   cannot be announced: tokio-quiche builds the `quiche::Config` itself
//!   and offers no hook to it. Unmodified clients do not need it (they echo
//!   tokens as RFC 9000 asks).
//! - `QuicSettings::enable_early_data` stays `false` (tokio-quiche's
//!   default). With it, tokio-quiche would hand requests that arrive as
//!   early data to the application before the handshake completes, and the
//!   connection reaches us only after it: there is no moment at which the
//!   guard could record the first flight as new, so a replayed flight would
//!   be served again (RFC 8446, section 8). Tickets are not sealed with the
//!   ring's key either, for the same want of a hook to the `quiche::Config`.
//!
//! The smallest upstream change that would lift both limits: a hook in
//! tokio-quiche's connection acceptor that sees the Initial's token before
//! its Retry logic (accept, validate the address, or fall back to Retry),
//! and one that may adjust the `quiche::Config`.
//!
//! # The example server
//!
//! [`serve`] is a whole server built this way (`GET /<bytes>` over HTTP/3),
//! and [`program`] is `tokio-cr-server`, the command that runs it; read
//! them as the model for your own loop.

pub mod program;
pub mod serve;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use cr_endpoint::ex_token::{Rng, SystemRng, TokenGuard};
use cr_endpoint::{ResumeServer, ResumeSession, ResumeStats, SharedGuard};
use tokio_quiche::metrics::Metrics;
use tokio_quiche::quic::{HandshakeInfo, QuicheConnection};
use tokio_quiche::{ApplicationOverQuic, QuicResult};

/// The [`ResumeServer`] every connection of a tokio-quiche server shares:
/// tokens are minted and claims started under its lock, briefly, never
/// across an await.
pub type SharedResumeServer = Arc<Mutex<ResumeServer<SystemRng, SharedGuard>>>;

/// Called once per connection, as it closes, with what Careful Resume did.
pub type OnClose = Box<dyn FnOnce(SocketAddr, ResumeStats) + Send>;

/// An [`ApplicationOverQuic`] with Careful Resume around it.
pub struct CarefulResumeApp<A, R: Rng = SystemRng, G: TokenGuard = SharedGuard> {
    inner: A,
    server: Arc<Mutex<ResumeServer<R, G>>>,
    peer: SocketAddr,
    /// Set once the connection is established.
    session: Option<ResumeSession>,
    on_close: Option<OnClose>,
}

impl<A, R: Rng, G: TokenGuard> CarefulResumeApp<A, R, G> {
    /// Wraps `inner`, the application of the connection from `peer`
    /// (`InitialQuicConnection::peer_addr()`), resuming through `server`.
    pub fn new(inner: A, server: Arc<Mutex<ResumeServer<R, G>>>, peer: SocketAddr) -> Self {
        CarefulResumeApp {
            inner,
            server,
            peer,
            session: None,
            on_close: None,
        }
    }

    /// Calls `report` with the connection's Careful Resume figures when it
    /// closes (for a log line, or metrics of your own).
    pub fn on_close(
        mut self,
        report: impl FnOnce(SocketAddr, ResumeStats) + Send + 'static,
    ) -> Self {
        self.on_close = Some(Box::new(report));
        self
    }

    fn server(&self) -> MutexGuard<'_, ResumeServer<R, G>> {
        // The server's state stays consistent even if a holder panicked.
        self.server.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the guard's answer to the connection and sends the tokens due.
    fn progress(&mut self, qconn: &mut QuicheConnection) {
        let Some(mut session) = self.session.take() else {
            return;
        };
        self.server()
            .on_progress(qconn, &mut session, SystemTime::now());
        self.session = Some(session);
    }
}

impl<A, R, G> ApplicationOverQuic for CarefulResumeApp<A, R, G>
where
    A: ApplicationOverQuic,
    R: Rng + Send + 'static,
    G: TokenGuard + Send + 'static,
{
    fn on_conn_established(
        &mut self,
        qconn: &mut QuicheConnection,
        handshake_info: &HandshakeInfo,
    ) -> QuicResult<()> {
        let token = qconn.initial_token().unwrap_or_default().to_vec();
        let started = self
            .server()
            .resume_connection(qconn, self.peer, &token, SystemTime::now());
        match started {
            Ok(session) => self.session = Some(session),
            // The connection goes on, without Careful Resume.
            Err(e) => log::warn!("{}: Careful Resume not set up: {e}", self.peer),
        }
        self.progress(qconn);
        self.inner.on_conn_established(qconn, handshake_info)
    }

    fn should_act(&self) -> bool {
        self.inner.should_act()
    }

    fn wait_for_data(
        &mut self,
        qconn: &mut QuicheConnection,
    ) -> impl std::future::Future<Output = QuicResult<()>> + Send {
        self.inner.wait_for_data(qconn)
    }

    fn process_reads(&mut self, qconn: &mut QuicheConnection) -> QuicResult<()> {
        self.progress(qconn);
        self.inner.process_reads(qconn)
    }

    fn process_writes(&mut self, qconn: &mut QuicheConnection) -> QuicResult<()> {
        self.progress(qconn);
        self.inner.process_writes(qconn)
    }

    fn on_conn_close<M: Metrics>(
        &mut self,
        qconn: &mut QuicheConnection,
        metrics: &M,
        connection_result: &QuicResult<()>,
    ) {
        if let (Some(session), Some(report)) = (&self.session, self.on_close.take()) {
            report(self.peer, session.stats(qconn));
        }
        self.inner.on_conn_close(qconn, metrics, connection_result);
    }
}
