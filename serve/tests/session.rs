//! A server session and a client application over a lossless in-memory
//! path: what the session serves, reports and counts as complete, for both
//! protocols. Datagrams cross at once; "time" is the loop's step number.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use cr_endpoint::ex_token::{KeyRing, MemoryGuard, SimRng, TokenKey, TokenServer};
use cr_endpoint::ResumeServer;
use cr_serve::app::ClientApp;
use cr_serve::{Protocol, ServerSession};
use quiche::h3::NameValue;

const CERT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/cert.pem");
const KEY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/key.pem");
const CREDIT: u64 = 16 << 20;

fn config(server: bool) -> quiche::Config {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("version");
    if server {
        config.load_cert_chain_from_pem_file(CERT).expect("cert");
        config.load_priv_key_from_pem_file(KEY).expect("key");
    }
    config
        .set_application_protos(&[Protocol::H3.alpn(), Protocol::Hq.alpn()])
        .expect("alpn");
    config.verify_peer(false);
    config.set_initial_max_data(CREDIT);
    config.set_initial_max_stream_data_bidi_local(CREDIT);
    config.set_initial_max_stream_data_bidi_remote(CREDIT);
    config.set_initial_max_stream_data_uni(CREDIT);
    config.set_initial_max_streams_bidi(8);
    config.set_initial_max_streams_uni(8);
    config
}

/// A server, a client connection to it, and the session serving it.
struct Pair {
    resume: ResumeServer<SimRng, MemoryGuard>,
    client: quiche::Connection,
    session: Option<ServerSession>,
    server_config: quiche::Config,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
}

impl Pair {
    fn new(protocol: Protocol) -> Pair {
        let mut rng = SimRng::new(1);
        let key = TokenKey::generate(0, &mut rng).expect("key");
        let tokens = TokenServer::new(KeyRing::new(key), rng, Default::default());
        let resume = ResumeServer::new(tokens, MemoryGuard::new(16), Default::default());
        let mut server_config = config(true);
        resume.configure(&mut server_config).expect("configure");
        let mut client_config = config(false);
        client_config
            .set_application_protos(&[protocol.alpn()])
            .expect("alpn");
        let client_addr = "192.0.2.1:4000".parse().expect("address");
        let server_addr = "198.51.100.1:443".parse().expect("address");
        let scid = quiche::ConnectionId::from_ref(&[7; 16]);
        let client = quiche::connect(
            Some("quiche-cr.test"),
            &scid,
            client_addr,
            server_addr,
            &mut client_config,
        )
        .expect("connect");
        Pair {
            resume,
            client,
            session: None,
            server_config,
            client_addr,
            server_addr,
        }
    }

    /// The session of a client whose first Initial is `initial`, started
    /// at `started`; and the destination connection ID the Initial carried.
    fn accept(&mut self, initial: &mut [u8], started: Instant) -> (ServerSession, Vec<u8>) {
        let header = quiche::Header::from_slice(initial, quiche::MAX_CONN_ID_LEN).expect("Initial");
        let scid = quiche::ConnectionId::from_ref(&[9; 16]);
        let accepted = self
            .resume
            .accept(
                &scid,
                None,
                self.server_addr,
                self.client_addr,
                &[],
                &mut self.server_config,
                SystemTime::now(),
            )
            .expect("accept");
        let dcid = header.dcid.to_vec();
        (ServerSession::new(accepted, &dcid, started), dcid)
    }

    /// Moves everything the client has to send to the server, serves, and
    /// moves the answer back.
    fn exchange(&mut self) {
        let mut out = [0u8; 1500];
        while let Ok((len, _)) = self.client.send(&mut out) {
            let datagram = &mut out[..len];
            if self.session.is_none() {
                self.session = Some(self.accept(datagram, Instant::now()).0);
            }
            let session = self.session.as_mut().expect("accepted above");
            let info = quiche::RecvInfo {
                from: self.client_addr,
                to: self.server_addr,
            };
            session.recv(&self.resume, datagram, info);
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let mut to_client = Vec::new();
        session
            .serve(
                &mut self.resume,
                Instant::now(),
                SystemTime::now(),
                |conn| {
                    let mut sent = 0;
                    while let Ok((len, _)) = conn.send(&mut out) {
                        to_client.push(out[..len].to_vec());
                        sent += 1;
                    }
                    Ok::<_, ()>(sent)
                },
            )
            .expect("flush");
        let info = quiche::RecvInfo {
            from: self.server_addr,
            to: self.client_addr,
        };
        for mut datagram in to_client {
            self.client.recv(&mut datagram, info).expect("client recv");
        }
    }
}

/// Fetches `size` bytes over `protocol` and returns the client's app and
/// the pair once the server saw every response acknowledged.
fn fetch(protocol: Protocol, size: u64) -> (ClientApp<u32>, Pair) {
    let mut pair = Pair::new(protocol);
    let mut app = ClientApp::new(protocol, size, "quiche-cr.test");
    for step in 0..10_000 {
        app.step(&mut pair.client, step).expect("client app");
        pair.exchange();
        let complete = pair
            .session
            .as_ref()
            .is_some_and(|s| s.completion().is_some());
        if app.is_done() && complete {
            return (app, pair);
        }
    }
    panic!("the download did not finish");
}

#[test]
fn hq_interop_serves_the_size_asked_for_and_reports_it() {
    let (app, pair) = fetch(Protocol::Hq, 300_000);
    assert_eq!(app.progress().received, 300_000);
    // Every byte is the body pattern at its offset.
    assert_eq!(app.progress().verified, 300_000);
    assert_eq!(app.progress().status, None);
    let session = pair.session.as_ref().expect("a session");
    let report = session.report(Instant::now());
    assert_eq!(report.protocol, Some(Protocol::Hq));
    assert_eq!((report.requests, report.body_bytes), (1, 300_000));
    assert_eq!(
        report.client_dcid.len(),
        2 * pair.client.destination_id().len()
    );
    assert!(!report.token_presented && !report.engaged());
    assert!(report.completion.is_some_and(|c| c <= report.lifetime));
    assert_eq!(report.error, None);
    assert_eq!(session.app_error(), None);
}

#[test]
fn http3_serves_the_size_asked_for_with_status_200() {
    let (app, pair) = fetch(Protocol::H3, 2 << 20);
    assert_eq!(app.progress().received, 2 << 20);
    assert_eq!(app.progress().verified, 2 << 20);
    assert_eq!(app.progress().status, Some(200));
    let report = pair
        .session
        .as_ref()
        .expect("a session")
        .report(Instant::now());
    assert_eq!(report.protocol, Some(Protocol::H3));
    assert_eq!((report.requests, report.body_bytes), (1, 2 << 20));
    let (first, done) = (app.progress().first_byte, app.progress().done);
    assert!(first.is_some_and(|first| done.is_some_and(|done| first <= done)));
}

#[test]
fn an_hq_request_that_names_no_size_gets_an_empty_body() {
    let mut pair = Pair::new(Protocol::Hq);
    let mut sent = false;
    let mut buf = [0u8; 64];
    for _ in 0..1000 {
        if pair.client.is_established() && !sent {
            pair.client
                .stream_send(0, b"GET /index.html\r\n", true)
                .expect("request");
            sent = true;
        }
        pair.exchange();
        if let Ok((read, fin)) = pair.client.stream_recv(0, &mut buf) {
            assert_eq!((read, fin), (0, true), "an empty body, then FIN");
            let report = pair
                .session
                .as_ref()
                .expect("a session")
                .report(Instant::now());
            assert_eq!((report.requests, report.body_bytes), (1, 0));
            return;
        }
    }
    panic!("no answer");
}

#[test]
fn a_session_without_a_handshake_reports_no_protocol() {
    let mut pair = Pair::new(Protocol::H3);
    let mut out = [0u8; 1500];
    let (len, _) = pair.client.send(&mut out).expect("an Initial");
    let started = Instant::now();
    let (session, dcid) = pair.accept(&mut out[..len], started);
    let report = session.report(started + Duration::from_secs(3));
    assert_eq!(report.protocol, None);
    assert_eq!((report.requests, report.body_bytes), (0, 0));
    assert_eq!(report.completion, None);
    assert_eq!(report.lifetime, Duration::from_secs(3));
    let dcid: String = dcid.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(report.client_dcid, dcid);
}

/// One request's answer as the client saw it.
#[derive(Debug, Default)]
struct Answer {
    stream: u64,
    status: Vec<u8>,
    body_bytes: usize,
    finished: bool,
}

/// The client's side of an HTTP/3 exchange over the pair: requests the
/// paths, then steps until each response finished; returns each one's
/// status and body length.
fn h3_requests(pair: &mut Pair, paths: &[&str]) -> Vec<(Vec<u8>, usize)> {
    let mut h3: Option<quiche::h3::Connection> = None;
    let mut answers: Vec<Answer> = Vec::new();
    let mut buf = [0u8; 4096];
    for _ in 0..1000 {
        if pair.client.is_established() && h3.is_none() {
            let config = quiche::h3::Config::new().expect("h3 config");
            let mut conn = quiche::h3::Connection::with_transport(&mut pair.client, &config)
                .expect("h3 connection");
            for path in paths {
                let headers = [
                    quiche::h3::Header::new(b":method", b"GET"),
                    quiche::h3::Header::new(b":scheme", b"https"),
                    quiche::h3::Header::new(b":authority", b"quiche-cr.test"),
                    quiche::h3::Header::new(b":path", path.as_bytes()),
                ];
                let stream = conn
                    .send_request(&mut pair.client, &headers, true)
                    .expect("request");
                answers.push(Answer {
                    stream,
                    ..Answer::default()
                });
            }
            h3 = Some(conn);
        }
        pair.exchange();
        let Some(conn) = h3.as_mut() else {
            continue;
        };
        loop {
            let (id, event) = match conn.poll(&mut pair.client) {
                Ok(polled) => polled,
                Err(quiche::h3::Error::Done) => break,
                Err(e) => panic!("client h3: {e}"),
            };
            let answer = answers
                .iter_mut()
                .find(|a| a.stream == id)
                .expect("our request");
            match event {
                quiche::h3::Event::Headers { list, .. } => {
                    let status = list.iter().find(|h| h.name() == b":status");
                    answer.status = status.expect("a status").value().to_vec();
                }
                quiche::h3::Event::Data => {
                    while let Ok(read) = conn.recv_body(&mut pair.client, id, &mut buf) {
                        answer.body_bytes += read;
                    }
                }
                quiche::h3::Event::Finished => answer.finished = true,
                _ => {}
            }
        }
        if answers.iter().all(|a| a.finished) {
            return answers
                .into_iter()
                .map(|a| (a.status, a.body_bytes))
                .collect();
        }
    }
    panic!("no answer to {paths:?}");
}

#[test]
fn http3_answers_a_path_without_a_size_404_and_size_0_with_an_empty_200() {
    let mut pair = Pair::new(Protocol::H3);
    let answers = h3_requests(&mut pair, &["/index.html", "/0"]);
    assert_eq!(answers, [(b"404".to_vec(), 0), (b"200".to_vec(), 0)]);
    let session = pair.session.as_ref().expect("a session");
    let report = session.report(Instant::now());
    assert_eq!((report.requests, report.body_bytes), (2, 0));
    assert_eq!(session.app_error(), None);
}

/// A client that breaks HTTP/3 (a DATA frame where the request's HEADERS
/// must come first) loses its connection with an application error, and
/// the session keeps what went wrong for its report.
#[test]
fn a_client_breaking_http3_is_closed_with_an_application_error() {
    let mut pair = Pair::new(Protocol::H3);
    let mut sent = false;
    for _ in 0..1000 {
        if pair.client.is_established() && !sent {
            // DATA (type 0x00), one byte long.
            pair.client
                .stream_send(0, &[0x00, 0x01, 0x42], true)
                .expect("raw stream data");
            sent = true;
        }
        pair.exchange();
        if let Some(error) = pair.client.peer_error() {
            assert!(error.is_app, "{error:?}");
            let session = pair.session.as_ref().expect("a session");
            assert_eq!(
                session.app_error(),
                Some(&cr_serve::ServeError::Http3(
                    quiche::h3::Error::FrameUnexpected
                ))
            );
            let report = session.report(Instant::now());
            let reported = report.error.expect("the close is reported");
            assert!(reported.starts_with("local:app"), "{reported}");
            return;
        }
    }
    panic!("the connection stayed open");
}
