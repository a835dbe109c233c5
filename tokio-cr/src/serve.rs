//! The example server's serving: tokio-quiche's HTTP/3 driver answering
//! `GET /<bytes>` with that many bytes, each connection wrapped in
//! [`CarefulResumeApp`]. `tokio-cr-server` runs it; the tests run the same
//! code in-process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use cr_apps::{AppError, CongestionControl};
use cr_endpoint::ex_token::{KeyRing, MemoryGuard, SystemRng, TokenServer};
use cr_endpoint::{ResumeServer, ResumeStats};
use futures::{SinkExt, StreamExt};
use tokio_quiche::buf_factory::BufFactory;
use tokio_quiche::http3::driver::{H3Event, IncomingH3Headers, OutboundFrame, ServerH3Event};
use tokio_quiche::http3::settings::Http3Settings;
use tokio_quiche::metrics::DefaultMetrics;
use tokio_quiche::quiche::h3;
use tokio_quiche::settings::{CertificateKind, Hooks, QuicSettings, TlsCertificatePaths};
use tokio_quiche::{ConnectionParams, QuicConnectionStream, ServerH3Controller, ServerH3Driver};

use cr_endpoint::SharedGuard;

use crate::{CarefulResumeApp, SharedResumeServer};

/// Everything the example server needs.
pub struct ServerOptions {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
    /// The keys sealing and opening tokens.
    pub token_keys: KeyRing,
    /// The congestion controller.
    pub cc: CongestionControl,
}

/// A bound example server.
pub struct Server {
    local: SocketAddr,
    incoming: QuicConnectionStream<DefaultMetrics>,
    resume: SharedResumeServer,
}

impl Server {
    /// Binds the socket and starts tokio-quiche's listener (inside a tokio
    /// runtime).
    pub async fn bind(options: ServerOptions) -> Result<Server, AppError> {
        let tokens = TokenServer::new(options.token_keys, SystemRng::new(), Default::default());
        let guard: SharedGuard = Arc::new(MemoryGuard::default());
        let resume = Arc::new(Mutex::new(ResumeServer::new(
            tokens,
            guard,
            Default::default(),
        )));

        let mut settings = QuicSettings::default();
        // tokio-quiche's Retry-based validation drops Initials carrying our
        // tokens; see the crate documentation.
        settings.disable_client_ip_validation = true;
        settings.cc_algorithm = options.cc.quiche_name().into();
        let path = |p: &PathBuf| {
            p.to_str()
                .map(str::to_owned)
                .ok_or_else(|| AppError::Invalid(format!("path {} is not UTF-8", p.display())))
        };
        let (cert, key) = (path(&options.cert)?, path(&options.key)?);
        let params = ConnectionParams::new_server(
            settings,
            TlsCertificatePaths {
                cert: &cert,
                private_key: &key,
                kind: CertificateKind::X509,
            },
            Hooks::default(),
        );
        let socket = tokio::net::UdpSocket::bind(options.listen)
            .await
            .map_err(|e| AppError::io(format!("binding {}", options.listen), e))?;
        let local = socket
            .local_addr()
            .map_err(|e| AppError::io("reading the bound address", e))?;
        let incoming = tokio_quiche::listen([socket], params, DefaultMetrics)
            .map_err(|e| AppError::io("starting tokio-quiche", e))?
            .pop()
            .ok_or_else(|| AppError::Invalid("tokio-quiche started no listener".into()))?;
        Ok(Server {
            local,
            incoming,
            resume,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Serves until the listener ends, handing each closed connection's
    /// Careful Resume figures to `on_report`.
    pub async fn run(
        mut self,
        on_report: impl Fn(SocketAddr, ResumeStats) + Clone + Send + 'static,
    ) {
        while let Some(accepted) = self.incoming.next().await {
            let conn = match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    log::warn!("connection not accepted: {e}");
                    continue;
                }
            };
            let (driver, controller) = ServerH3Driver::new(Http3Settings::default());
            let app = CarefulResumeApp::new(driver, self.resume.clone(), conn.peer_addr())
                .on_close(on_report.clone());
            conn.start(app);
            tokio::spawn(serve(controller));
        }
    }
}

/// One line about a connection's Careful Resume.
pub fn report_line(peer: SocketAddr, stats: &ResumeStats) -> String {
    let resumed = match (&stats.not_resumed, stats.token_presented) {
        (None, _) => "yes".to_string(),
        (Some(_), false) => "no (no token)".to_string(),
        (Some(why), true) => format!("no ({why})"),
    };
    let phases: Vec<&str> = stats.phases.iter().map(|(p, _)| p.as_str()).collect();
    format!(
        "peer={peer} token={} resumed={resumed} phases=[{}] jump={} saved-for-next={} \
         early-data={}",
        if stats.token_presented {
            "presented"
        } else {
            "none"
        },
        phases.join(","),
        stats.jump_window.map_or("-".into(), |j| format!("{j}B")),
        stats.saved_for_next.map_or("-".into(), |c| format!("{c}B")),
        stats.early_data.as_str(),
    )
}

/// Answers every request of one connection.
async fn serve(mut controller: ServerH3Controller) {
    let events = controller.event_receiver_mut();
    while let Some(event) = events.recv().await {
        match event {
            ServerH3Event::Headers {
                incoming_headers, ..
            } => {
                tokio::spawn(respond(incoming_headers));
            }
            ServerH3Event::Core(H3Event::ConnectionShutdown(_) | H3Event::ConnectionError(_)) => {
                break
            }
            _ => {}
        }
    }
}

/// `GET /<bytes>`: 200 and that many bytes; anything else: 404.
async fn respond(request: IncomingH3Headers) {
    let size = cr_serve::app::request_size(&request.headers)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut send = request.send;
    let status: &[u8] = if size.is_some() { b"200" } else { b"404" };
    let size = size.unwrap_or(0);
    let headers = vec![
        h3::Header::new(b":status", status),
        h3::Header::new(b"content-length", size.to_string().as_bytes()),
    ];
    if send
        .send(OutboundFrame::Headers(headers, None))
        .await
        .is_err()
    {
        return;
    }
    // One buffer, sliced: each chunk shares it.
    let chunk = Bytes::from(vec![0x42u8; BufFactory::MAX_BUF_SIZE]);
    let mut left = size;
    loop {
        let n = left.min(chunk.len());
        left -= n;
        let body = OutboundFrame::Body(chunk.slice(..n), left == 0);
        if send.send(body).await.is_err() || left == 0 {
            return;
        }
    }
}
