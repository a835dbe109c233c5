//! Every trigger of RFC 9959 through the patched quiche, with the phase path
//! and the windows the RFC defines, to the byte.
//!
//! Most tests drive a client and a resuming server over an in-memory path
//! ([`Path`]) whose every datagram, and every step of virtual time, the test
//! moves itself: which packets arrive, when, and which are lost. The server
//! resumes from a saved set of 200 datagrams over 100 ms (a jump window of
//! 100 datagrams, paced one per millisecond); quiche sends 1200-byte
//! datagrams and starts from ten (IW). Tests of the token layer's refusals
//! run a whole download through [`Harness`] instead.
//!
//! The triggers the other test files cover: `congestion_window_limited`,
//! `last_unvalidated_packet_sent` and `last_unvalidated_packet_acknowledged`
//! (careful_resume.rs, every controller), `rtt_not_validated` at both
//! bounds (careful_resume.rs), `saved_set_not_granted` (careful_resume.rs,
//! saved_sets.rs), `path_changed` in Validating and persistent congestion
//! (careful_resume.rs). `ECN_CE` cannot occur: quiche 0.30 has no ECN.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cr_endpoint::ex_token::NoResume;
use cr_endpoint::{ClientConfig, RequestedCapacity, ResumeClient};
use quiche::careful_resume::{Phase, SavedState};
use quiche::test_utils::{create_cid_and_reset_token, emit_flight, process_flight, Pipe};
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{
    opaque_client, opaque_client_at, resuming_client, Harness, QlogSink, SERVER, SERVER_NAME,
};

/// The RTT of the path, and of the saved set.
const RTT: Duration = Duration::from_millis(100);
/// quiche's datagram size before path MTU discovery.
const MSS: u64 = 1200;
/// quiche's initial window: ten datagrams.
const IW: u64 = 10 * MSS;
/// The saved set: 200 datagrams over [`RTT`].
const SAVED: SavedState = SavedState {
    cwnd: 200 * MSS as usize,
    rtt: RTT,
};
/// The jump window: saved_cwnd / 2.
const JUMP: u64 = 100 * MSS;
/// A response that fills the initial window and 34 datagrams more, a third
/// of the jump window: the server stays Unvalidated once it is sent.
const RESPONSE: usize = 50_000;

/// A datagram the server sent, and the phase Careful Resume was in when the
/// server sent it.
#[derive(Clone)]
struct Sent {
    bytes: Vec<u8>,
    info: quiche::SendInfo,
    phase: Option<Phase>,
}

/// The bytes of `datagrams`.
fn bytes(datagrams: &[Sent]) -> u64 {
    datagrams.iter().map(|d| d.bytes.len() as u64).sum()
}

/// RFC 9959's Safe Retreat window for a PipeSize: PipeSize / 2 (in whole
/// datagrams here), at least two datagrams, at most the jump window.
fn retreat_window(pipesize: u64) -> u64 {
    (pipesize / 2 / MSS * MSS).clamp(2 * MSS, JUMP)
}

/// A client and a resuming server over an in-memory path on quiche's
/// virtual clock. Nothing moves unless the test moves it: datagrams are
/// handed over explicitly, time advances explicitly (and expired timers
/// fire as it does).
struct Path {
    pipe: Pipe,
    qlog: QlogSink,
    now: Instant,
    body: Vec<u8>,
    written: usize,
}

impl Path {
    /// A path whose server runs `cc`, not resuming yet.
    fn new(cc: Cc) -> Path {
        let now = Instant::now() + Duration::from_secs(86_400);
        quiche::clock::set(now);
        quiche::seeded_random::seed(3);
        let mut client_config = quiche_cr_tests::config(false, cc);
        let mut server_config = quiche_cr_tests::config(true, cc);
        for config in [&mut client_config, &mut server_config] {
            // Room for spare connection IDs, so that the client can move.
            config.set_active_connection_id_limit(3);
        }
        let mut pipe = Pipe::with_client_and_server_config(&mut client_config, &mut server_config)
            .expect("a pipe");
        let qlog = QlogSink::default();
        qlog.attach(&mut pipe.server, "server");
        Path {
            pipe,
            qlog,
            now,
            body: Vec::new(),
            written: 0,
        }
    }

    /// A path whose server runs `cc` and resumes from [`SAVED`], its
    /// handshake done over [`RTT`].
    fn resuming(cc: Cc) -> Path {
        Path::resuming_over(cc, RTT)
    }

    /// [`Path::resuming`] with the handshake done over `rtt`.
    fn resuming_over(cc: Cc, rtt: Duration) -> Path {
        let mut path = Path::new(cc);
        path.pipe
            .server
            .setup_careful_resume(SAVED)
            .expect("resume");
        path.handshake(rtt);
        path
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        quiche::clock::set(self.now);
        for conn in [&mut self.pipe.client, &mut self.pipe.server] {
            if conn.timeout_instant().is_some_and(|at| at <= self.now) {
                conn.on_timeout();
            }
        }
    }

    /// What the client sends now (its ACKs, mostly).
    fn client_flight(&mut self) -> Vec<(Vec<u8>, quiche::SendInfo)> {
        emit_flight(&mut self.pipe.client).unwrap_or_default()
    }

    /// The server receives `flight` and sends what it can, writing the
    /// response as its window allows.
    fn deliver_to_server(&mut self, flight: Vec<(Vec<u8>, quiche::SendInfo)>) -> Vec<Sent> {
        process_flight(&mut self.pipe.server, flight).expect("server receives");
        self.server_flight()
    }

    fn server_flight(&mut self) -> Vec<Sent> {
        let server = &mut self.pipe.server;
        let mut buf = [0; 65_535];
        if server.stream_readable(0) {
            while server.stream_recv(0, &mut buf).is_ok() {}
        }
        let mut flight = Vec::new();
        loop {
            // One packet at a time: the window can open on a packet sent.
            if self.written < self.body.len() {
                self.written += server
                    .stream_send(0, &self.body[self.written..], true)
                    .unwrap_or(0);
            }
            let phase = server.careful_resume().map(|r| r.phase());
            let Ok((len, info)) = server.send(&mut buf) else {
                break;
            };
            flight.push(Sent {
                bytes: buf[..len].to_vec(),
                info,
                phase,
            });
        }
        flight
    }

    /// The client receives `datagrams`.
    fn deliver_to_client(&mut self, datagrams: &[Sent]) {
        for sent in datagrams {
            let mut bytes = sent.bytes.clone();
            let info = quiche::RecvInfo {
                from: sent.info.from,
                to: sent.info.to,
            };
            self.pipe
                .client
                .recv(&mut bytes, info)
                .expect("client receives");
        }
    }

    /// `datagrams` reach the client after `out`, and its ACK the server
    /// after `back`; returns what the server sends then.
    fn round_trip(&mut self, datagrams: &[Sent], out: Duration, back: Duration) -> Vec<Sent> {
        self.advance(out);
        self.deliver_to_client(datagrams);
        let acks = self.client_flight();
        self.advance(back);
        self.deliver_to_server(acks)
    }

    /// The handshake over a path of `rtt`, then spare connection IDs for
    /// both sides, and a last round trip to exchange them.
    fn handshake(&mut self, rtt: Duration) {
        let exchange = |path: &mut Path| {
            let flight = path.client_flight();
            path.advance(rtt / 2);
            let flight = path.deliver_to_server(flight);
            path.advance(rtt / 2);
            path.deliver_to_client(&flight);
        };
        while !self.pipe.client.is_established() || !self.pipe.server.is_established() {
            exchange(self);
        }
        for _ in 0..2 {
            let (cid, token) = create_cid_and_reset_token(16);
            self.pipe
                .client
                .new_scid(&cid, token, true)
                .expect("client CID");
            let (cid, token) = create_cid_and_reset_token(16);
            self.pipe
                .server
                .new_scid(&cid, token, true)
                .expect("server CID");
        }
        exchange(self);
    }

    /// The client asks for `size` bytes; the request arrives half an RTT
    /// later and the server sends what it can: the initial window, and
    /// the jump once it has filled it. Returns the datagrams sent before
    /// the jump and those sent after it.
    fn request(&mut self, size: usize, rtt: Duration) -> (Vec<Sent>, Vec<Sent>) {
        self.body = vec![0x42; size];
        self.pipe
            .client
            .stream_send(0, b"GET", true)
            .expect("request");
        let flight = self.client_flight();
        self.advance(rtt / 2);
        let flight = self.deliver_to_server(flight);
        flight
            .into_iter()
            .partition(|d| d.phase == Some(Phase::Reconnaissance))
    }

    /// The client moves to another address and sends from there.
    fn migrate_client(&mut self) {
        let moved: SocketAddr = "192.0.2.99:5678".parse().expect("address");
        self.pipe
            .client
            .migrate(moved, Pipe::server_addr())
            .expect("migration");
        self.pipe
            .client
            .stream_send(4, b"moved", true)
            .expect("data");
    }

    /// The server's congestion window now.
    fn cwnd(&self) -> u64 {
        self.pipe.server.path_stats().next().expect("a path").cwnd as u64
    }

    /// The server's smoothed RTT now.
    fn srtt(&self) -> Duration {
        self.pipe.server.path_stats().next().expect("a path").rtt
    }

    /// The server's Careful Resume phase now (on its active path).
    fn phase(&self) -> Phase {
        self.pipe.server.careful_resume().expect("resuming").phase()
    }

    /// Every phase change the server logged.
    fn changes(&self) -> Vec<qlog_cr::CarefulResumePhaseUpdated> {
        let trace = self.qlog.trace("server");
        trace.phase_changes.iter().map(|c| c.update).collect()
    }
}

impl Drop for Path {
    fn drop(&mut self) {
        quiche::clock::unset();
        quiche::seeded_random::unseed();
    }
}

/// The phase changes, as (from, to, trigger) qlog names.
fn path_of(changes: &[qlog_cr::CarefulResumePhaseUpdated]) -> Vec<(&str, &str, &str)> {
    changes
        .iter()
        .map(|u| {
            (
                u.old.map_or("", |p| p.as_str()),
                u.new.as_str(),
                u.trigger.map_or("", |t| t.as_str()),
            )
        })
        .collect()
}

/// Checks the jump: RFC 9959 sets the window to saved_cwnd / 2 and PipeSize
/// to the flight when the sender, having filled the initial window, jumps.
fn assert_jumped(change: &qlog_cr::CarefulResumePhaseUpdated, initial: &[Sent]) {
    assert_eq!(change.state_data.congestion_window, Some(JUMP));
    assert_eq!(bytes(initial), IW, "the initial window was full");
    assert_eq!(change.state_data.pipesize, IW);
}

#[test]
fn rtt_exceeded_ends_unvalidated_through_quiche() {
    for cc in [Cc::Reno, Cc::CUBIC] {
        // The initial window's ACK takes exactly one RTT, then 20 ms more
        // (a queue built up): only the second is more than one RTT.
        for delay in [Duration::ZERO, Duration::from_millis(20)] {
            let mut path = Path::resuming(cc);
            let (initial, jump) = path.request(RESPONSE, RTT);
            // The jump is made, and in flight.
            assert!(
                matches!(path.phase(), Phase::Unvalidated | Phase::Validating),
                "{cc:?}"
            );
            assert!(bytes(&jump) < JUMP - MSS, "the window never fills");
            // The jump's packets are delayed longer: the ACK covers the
            // initial window only.
            path.round_trip(&initial, RTT / 2 + delay, RTT / 2);

            let changes = path.changes();
            if delay.is_zero() {
                assert_eq!(path.srtt(), RTT);
                assert_eq!(path.phase(), Phase::Unvalidated, "{cc:?}: one RTT");
                assert_eq!(changes.len(), 1);
                // The ACK reached the server while Unvalidated: PipeSize
                // took in every byte it acknowledged, and the window did not
                // grow.
                let resume = path.pipe.server.careful_resume().expect("resuming");
                assert_eq!(resume.pipesize() as u64, 2 * IW, "{cc:?}");
                assert_eq!(path.cwnd(), JUMP, "{cc:?}");
                continue;
            }
            // 120 ms since the jump, against a current RTT of 100 ms x 7/8
            // + 120 ms x 1/8.
            assert_eq!(path.srtt(), Duration::from_micros(102_500));
            assert_eq!(
                path_of(&changes),
                [
                    ("reconnaissance", "unvalidated", "congestion_window_limited"),
                    ("unvalidated", "validating", "rtt_exceeded"),
                ],
                "{cc:?}"
            );
            assert_jumped(&changes[0], &initial);
            // PipeSize: the flight at the jump, then the initial window
            // acknowledged; the window is the flight (the jump's packets),
            // more than PipeSize, so the jump is validated.
            let state = changes[1].state_data;
            assert_eq!(state.pipesize, 2 * IW);
            assert_eq!(state.congestion_window, Some(bytes(&jump)));
            assert!(bytes(&jump) > state.pipesize);
            assert_eq!(path.cwnd(), bytes(&jump));

            path.round_trip(&jump, RTT / 2, RTT / 2);
            let changes = path.changes();
            assert_eq!(
                path_of(&changes[2..]),
                [(
                    "validating",
                    "normal",
                    "last_unvalidated_packet_acknowledged"
                )]
            );
            assert_eq!(changes[2].state_data.pipesize, 2 * IW + bytes(&jump));
        }
    }
}

#[test]
fn first_unvalidated_packet_acknowledged_moves_to_validating_through_quiche() {
    for cc in [Cc::Reno, Cc::CUBIC] {
        let mut path = Path::resuming(cc);
        let (initial, jump) = path.request(RESPONSE, RTT);
        // The initial window and the first five packets of the jump arrive
        // one RTT after the jump; the rest later.
        let (early, late) = jump.split_at(5);
        let arrived = [&initial[..], early].concat();
        path.round_trip(&arrived, RTT / 2, RTT / 2);

        let changes = path.changes();
        assert_eq!(
            path_of(&changes),
            [
                ("reconnaissance", "unvalidated", "congestion_window_limited"),
                (
                    "unvalidated",
                    "validating",
                    "first_unvalidated_packet_acknowledged"
                ),
            ],
            "{cc:?}"
        );
        assert_jumped(&changes[0], &initial);
        // PipeSize: the flight at the jump plus everything acknowledged;
        // the window: the flight left, more than PipeSize and than IW.
        let state = changes[1].state_data;
        assert_eq!(state.pipesize, IW + bytes(&arrived));
        assert_eq!(state.congestion_window, Some(bytes(late)));
        assert!(bytes(late) > state.pipesize);
        assert_eq!(path.cwnd(), bytes(late));

        path.round_trip(late, RTT / 2, RTT / 2);
        assert_eq!(
            path_of(&path.changes()[2..]),
            [(
                "validating",
                "normal",
                "last_unvalidated_packet_acknowledged"
            )]
        );
    }
}

#[test]
fn rate_limited_ends_careful_resume_at_the_validated_pipesize_through_quiche() {
    for cc in [Cc::Reno, Cc::CUBIC] {
        let mut path = Path::resuming(cc);
        // The response fills the initial window and three datagrams more.
        let (initial, jump) = path.request(15_000, RTT);
        assert_eq!(jump.len(), 3, "{cc:?}");
        path.round_trip(&[&initial[..], &jump[..]].concat(), RTT / 2, RTT / 2);

        let changes = path.changes();
        assert_eq!(
            path_of(&changes),
            [
                ("reconnaissance", "unvalidated", "congestion_window_limited"),
                ("unvalidated", "normal", "rate_limited"),
            ],
            "{cc:?}"
        );
        assert_jumped(&changes[0], &initial);
        // The first unvalidated packet is acknowledged with nothing left in
        // flight (less than IW): the window is max(PipeSize, IW), PipeSize
        // being the flight at the jump and every byte acknowledged.
        let state = changes[1].state_data;
        let pipesize = IW + IW + bytes(&jump);
        assert_eq!(state.pipesize, pipesize);
        assert_eq!(state.congestion_window, Some(pipesize.max(IW)));
        assert_eq!(path.cwnd(), pipesize);
    }
}

#[test]
fn loss_while_unvalidated_retreats_and_the_window_stays_frozen_through_quiche() {
    for cc in [Cc::Reno, Cc::CUBIC] {
        let mut path = Path::resuming(cc);
        let (initial, jump) = path.request(RESPONSE, RTT);
        let last = jump.len() - 1;
        // The first packet of the jump is lost; the initial window and the
        // next nine arrive, three of them past the lost one: a loss.
        let arrived = [&initial[..], &jump[1..10]].concat();
        path.round_trip(&arrived, RTT / 2, RTT / 2);

        let changes = path.changes();
        assert_eq!(
            path_of(&changes),
            [
                ("reconnaissance", "unvalidated", "congestion_window_limited"),
                ("unvalidated", "safe_retreat", "packet_loss"),
            ],
            "{cc:?}"
        );
        // The loss is handled before what the same ACK acknowledges: PipeSize
        // is still the flight at the jump. Safe Retreat: max(PipeSize / 2,
        // 2 datagrams).
        let state = changes[1].state_data;
        assert_eq!(state.pipesize, IW);
        let frozen = retreat_window(IW);
        assert_eq!(frozen, 5 * MSS);
        assert_eq!(state.congestion_window, Some(frozen));
        assert_eq!(path.cwnd(), frozen, "{cc:?}");

        // The rest of the jump is acknowledged ten packets at a time: the
        // window never grows while Safe Retreat lasts.
        for chunk in jump[10..last].chunks(10) {
            let sent = path.round_trip(chunk, RTT / 2, RTT / 2);
            assert_eq!(path.phase(), Phase::SafeRetreat, "{cc:?}");
            assert_eq!(path.cwnd(), frozen, "{cc:?}");
            assert!(
                bytes(&sent) <= frozen,
                "{cc:?}: {} bytes sent",
                bytes(&sent)
            );
        }
        // The last packet of the jump is acknowledged: Safe Retreat ends
        // with ssthresh = PipeSize x Beta (0.5), PipeSize having grown by
        // every byte acknowledged since the jump.
        path.round_trip(&jump[last..], RTT / 2, RTT / 2);
        let changes = path.changes();
        assert_eq!(
            path_of(&changes[2..]),
            [("safe_retreat", "normal", "exit_recovery")]
        );
        let state = changes[2].state_data;
        let pipesize = IW + bytes(&initial) + bytes(&jump[1..]);
        assert_eq!(state.pipesize, pipesize, "{cc:?}");
        assert_eq!(state.ssthresh, Some(pipesize / 2), "{cc:?}");
        let resume = path.pipe.server.careful_resume().expect("resuming");
        assert!(resume.saved_set_consumed());
    }
}

#[test]
fn loss_in_reconnaissance_ends_careful_resume_without_touching_the_window_through_quiche() {
    for (cc, reduced) in [(Cc::Reno, IW / 2), (Cc::CUBIC, IW * 7 / 10)] {
        let mut path = Path::resuming(cc);
        // Six datagrams: less than the initial window, no jump.
        let (initial, jump) = path.request(6_500, RTT);
        assert!(jump.is_empty());
        assert_eq!(initial.len(), 6);
        // The first is lost, the next five arrive.
        path.round_trip(&initial[1..], RTT / 2, RTT / 2);

        let changes = path.changes();
        assert_eq!(
            path_of(&changes),
            [("reconnaissance", "normal", "packet_loss")],
            "{cc:?}"
        );
        // Careful Resume leaves the window to the controller's own
        // reduction (half of IW for Reno, 0.7 of it for CUBIC).
        let state = changes[0].state_data;
        assert_eq!(
            (state.congestion_window, state.ssthresh),
            (Some(reduced), None)
        );
        assert_eq!(path.cwnd(), reduced, "{cc:?}");
        let resume = path.pipe.server.careful_resume().expect("resuming");
        assert!(!resume.saved_set_consumed(), "nothing was jumped");
    }
}

#[test]
fn a_path_change_in_reconnaissance_ends_careful_resume_through_quiche() {
    let mut path = Path::resuming(Cc::CUBIC);
    // The client moves before it asks for anything.
    path.migrate_client();
    let flight = path.client_flight();
    path.advance(RTT / 2);
    path.deliver_to_server(flight);

    let changes = path.changes();
    assert_eq!(
        path_of(&changes),
        [("reconnaissance", "normal", "path_changed")]
    );
    // Careful Resume leaves the window as it was: the initial window.
    assert_eq!(changes[0].state_data.congestion_window, Some(IW));
    assert_eq!(changes[0].state_data.ssthresh, None);
    // The new path starts without the saved set.
    assert!(path.pipe.server.careful_resume().is_none());
}

#[test]
fn a_path_change_while_unvalidated_retreats_through_quiche() {
    let mut path = Path::resuming(Cc::CUBIC);
    let (initial, _jump) = path.request(RESPONSE, RTT);
    assert_eq!(path.phase(), Phase::Unvalidated);
    // Before anything of the response arrives, the client moves.
    path.migrate_client();
    let flight = path.client_flight();
    path.advance(RTT / 2);
    path.deliver_to_server(flight);

    let changes = path.changes();
    assert_eq!(
        path_of(&changes),
        [
            ("reconnaissance", "unvalidated", "congestion_window_limited"),
            ("unvalidated", "safe_retreat", "path_changed"),
        ]
    );
    assert_jumped(&changes[0], &initial);
    // Nothing was acknowledged since the jump: PipeSize is its flight.
    let state = changes[1].state_data;
    assert_eq!(state.pipesize, IW);
    assert_eq!(state.congestion_window, Some(retreat_window(IW)));
    assert!(path.pipe.server.careful_resume().is_none());
}

#[test]
fn an_rtt_above_ten_times_the_saved_rtt_while_unvalidated_is_a_path_change_through_quiche() {
    // The jump starts on the saved path; the initial window's ACK then
    // takes 7.3 s, which moves the smoothed RTT to ten times the saved RTT
    // (100 ms x 7/8 + 7.3 s x 1/8 = 1 s), or 8 ms more, which moves it
    // above. (A path whose minimum RTT is already that far above the saved
    // one gets no jump: see the next test.)
    for delay in [Duration::ZERO, Duration::from_millis(8)] {
        let mut path = Path::resuming(Cc::CUBIC);
        let (initial, _jump) = path.request(RESPONSE, RTT);
        assert_eq!(path.phase(), Phase::Unvalidated);
        let back = Duration::from_millis(7_300) - RTT / 2 + delay;
        path.round_trip(&initial, RTT / 2, back);

        let changes = path.changes();
        if delay.is_zero() {
            // 10 x saved_rtt exactly: the same path, where more than a
            // round trip has passed since the jump.
            assert_eq!(path.srtt(), Duration::from_secs(1));
            assert_eq!(
                path_of(&changes)[1],
                ("unvalidated", "validating", "rtt_exceeded")
            );
            continue;
        }
        assert_eq!(path.srtt(), Duration::from_millis(1_001));
        assert_eq!(
            path_of(&changes),
            [
                ("reconnaissance", "unvalidated", "congestion_window_limited"),
                ("unvalidated", "safe_retreat", "path_changed"),
            ]
        );
        assert_jumped(&changes[0], &initial);
        // PipeSize: the flight at the jump and the initial window's ACK.
        let state = changes[1].state_data;
        assert_eq!(state.pipesize, 2 * IW);
        assert_eq!(state.congestion_window, Some(retreat_window(2 * IW)));
        assert_eq!(path.cwnd(), retreat_window(2 * IW));
        let resume = path.pipe.server.careful_resume().expect("resuming");
        assert!(resume.saved_set_consumed());
    }
}

/// A minimum RTT above the saved one shows a standing queue of others'
/// data; the jump leaves room for it: 100 ms saved, 12.5 ms of it allowed
/// for jitter, and the excess at the saved rate (2.4 MB/s) is queued. The
/// handshake over 137.5 ms leaves 60 kB of the 120 kB jump, over 162.5 ms
/// nothing: Careful Resume ends without a jump, the set unused.
#[test]
fn a_min_rtt_that_shows_a_standing_queue_lowers_the_jump_through_quiche() {
    for (handshake_rtt, jump) in [(137_500, Some(60_000)), (162_500, None)] {
        let handshake_rtt = Duration::from_micros(handshake_rtt);
        let mut path = Path::resuming_over(Cc::CUBIC, handshake_rtt);
        let (initial, _jump) = path.request(RESPONSE, handshake_rtt);
        let changes = path.changes();
        match jump {
            Some(window) => {
                assert_eq!(
                    path_of(&changes),
                    [("reconnaissance", "unvalidated", "congestion_window_limited")]
                );
                assert_eq!(changes[0].state_data.congestion_window, Some(window));
                assert_eq!(path.cwnd(), window);
            }
            None => {
                assert_eq!(
                    path_of(&changes),
                    [("reconnaissance", "normal", "congestion_window_limited")]
                );
                assert!(bytes(&initial) <= IW);
                let resume = path.pipe.server.careful_resume();
                assert!(resume.is_none_or(|r| !r.saved_set_consumed()));
            }
        }
    }
}

/// What a [`ResumeClient`] keeps between connections and how it presents it.
fn resume_client(requested: RequestedCapacity) -> ResumeClient {
    ResumeClient::new(ClientConfig {
        requested_capacity: requested,
        ..ClientConfig::default()
    })
}

/// A first download by `client` through `harness`, whose tokens the client
/// keeps.
fn first_download(harness: &mut Harness, client: &mut ResumeClient) {
    let conn = resuming_client(client, 1);
    let mut first = harness.download(conn, 2 << 20, |_| false);
    let wall = quiche_cr_tests::wall_start();
    client.on_progress(
        &mut first.client,
        SERVER_NAME,
        SERVER.parse().expect("address"),
        wall,
    );
}

#[test]
fn requested_capacity_zero_means_no_resume_through_quiche() {
    for (requested, resumes) in [
        (RequestedCapacity::AsSaved, true),
        (RequestedCapacity::OptOut, false),
    ] {
        let mut harness = Harness::new(Cc::CUBIC, RTT * 6);
        let mut client = resume_client(requested);
        first_download(&mut harness, &mut client);

        let second = harness.download(resuming_client(&mut client, 2), 2 << 20, |_| false);

        if resumes {
            assert!(second.server.session.resume.is_ok());
            let resume = second.server.conn.careful_resume().expect("resumed");
            assert!(resume.jumped());
            continue;
        }
        // The client lowered Requested Capacity to 0: a fresh start.
        assert_eq!(second.server.session.resume, Err(NoResume::RequestedZero));
        assert!(second.server.conn.careful_resume().is_none());
        assert!(second.trace.phase_changes.is_empty());
    }
}

#[test]
fn a_client_from_another_network_does_not_resume_through_quiche() {
    // The saved set belongs to the client's network (its /24): another
    // host of 192.0.2.0/24 resumes, one of 192.0.3.0/24 does not.
    for (moved_to, resumes) in [("192.0.2.77:4433", true), ("192.0.3.10:4433", false)] {
        let mut harness = Harness::new(Cc::CUBIC, RTT * 6);
        let mut first = harness.download(opaque_client(None, 1), 2 << 20, |_| false);
        let token = std::iter::from_fn(|| first.client.new_token_next())
            .last()
            .expect("a token");

        let moved: SocketAddr = moved_to.parse().expect("address");
        harness.client = moved;
        let second = harness.download(opaque_client_at(moved, Some(&token), 2), 2 << 20, |_| false);

        if resumes {
            let resume = second.server.conn.careful_resume().expect("resumed");
            assert!(resume.jumped(), "{moved_to}");
            continue;
        }
        assert_eq!(second.server.session.resume, Err(NoResume::AddressMismatch));
        assert!(second.server.conn.careful_resume().is_none());
        assert!(second.trace.phase_changes.is_empty());
    }
}

#[test]
fn bbr2_loss_while_unvalidated_retreats_to_drain_through_quiche() {
    let mut path = Path::resuming(Cc::Bbr2Gcongestion);
    let (initial, jump) = path.request(RESPONSE, RTT);
    assert_eq!(path.phase(), Phase::Unvalidated);
    let changes = path.changes();
    // RFC 9959's appendix: no window of Careful Resume's own, but BBR's is
    // at least max(bandwidth, probing rate) x min RTT x Startup's window
    // gain (2), the probing rate being the jump window over the current
    // RTT: twice the jump window here.
    assert_eq!(changes[0].state_data.congestion_window, Some(2 * JUMP));
    assert_eq!(changes[0].state_data.pipesize, bytes(&initial));

    // The jump's first packet is lost, the next nine arrive.
    let arrived = [&initial[..], &jump[1..10]].concat();
    path.round_trip(&arrived, RTT / 2, RTT / 2);
    assert_eq!(path.phase(), Phase::SafeRetreat);
    path.round_trip(&jump[10..], RTT / 2, RTT / 2);

    let changes = path.changes();
    assert_eq!(
        path_of(&changes),
        [
            ("reconnaissance", "unvalidated", "congestion_window_limited"),
            ("unvalidated", "safe_retreat", "packet_loss"),
            ("safe_retreat", "normal", "exit_recovery"),
        ]
    );
    // Safe Retreat is BBR's Drain (not observable from outside quiche:
    // quiche's own test `bbr2_retreats_to_drain_when_the_jump_meets_loss`
    // checks it); Careful Resume halves no window and sets no ssthresh.
    assert_eq!(changes[1].state_data.congestion_window, Some(2 * JUMP));
    assert_eq!(changes[2].state_data.ssthresh, None);
    let resume = path.pipe.server.careful_resume().expect("resuming");
    assert!(resume.saved_set_consumed());
}

#[test]
fn bbr2_rtt_exceeded_ends_the_probing_round_through_quiche() {
    let mut path = Path::resuming(Cc::Bbr2Gcongestion);
    let (initial, jump) = path.request(RESPONSE, RTT);
    // The initial window's ACK comes 20 ms after one RTT, before any of the
    // jump's: the probing round (RFC 9959's appendix: Unvalidated lasts a
    // round) has run longer than the current RTT.
    path.round_trip(&initial, RTT / 2 + Duration::from_millis(20), RTT / 2);
    assert_eq!(path.srtt(), Duration::from_micros(102_500));
    let changes = path.changes();
    assert_eq!(
        path_of(&changes),
        [
            ("reconnaissance", "unvalidated", "congestion_window_limited"),
            ("unvalidated", "validating", "rtt_exceeded"),
        ]
    );
    // PipeSize as for any controller; the window stays BBR's own, at least
    // twice the jump window (probing rate x min RTT x Startup's gain).
    let state = changes[1].state_data;
    assert_eq!(state.pipesize, 2 * bytes(&initial));
    assert_eq!(state.congestion_window, Some(2 * JUMP));

    path.round_trip(&jump, RTT / 2, RTT / 2);
    assert_eq!(
        path_of(&path.changes()[2..]),
        [(
            "validating",
            "normal",
            "last_unvalidated_packet_acknowledged"
        )]
    );
}

/// What a resumed server sent while in Safe Retreat, the window Safe Retreat
/// froze, and the bytes acknowledged since it began. The jump's first packet is
/// lost, with most of a 1 MB response still queued; the rest of the jump,
/// and whatever the server sends meanwhile, is acknowledged ten packets at a
/// time until Safe Retreat ends.
fn sent_in_safe_retreat(cc: Cc) -> Retreat {
    let mut path = Path::resuming(cc);
    let (initial, jump) = path.request(1_000_000, RTT);
    // The jump is made, and in flight.
    assert!(
        matches!(path.phase(), Phase::Unvalidated | Phase::Validating),
        "{cc:?}"
    );

    let arrived = [&initial[..], &jump[1..10]].concat();
    let mut unacked = path.round_trip(&arrived, RTT / 2, RTT / 2);
    unacked.extend_from_slice(&jump[10..]);
    let changes = path.changes();
    let retreat = changes.last().expect("a phase change");
    assert_eq!(retreat.new.as_str(), "safe_retreat", "{cc:?}");
    let frozen = retreat.state_data.congestion_window.expect("window");

    let mut in_retreat = unacked.clone();
    in_retreat.retain(|sent| sent.phase == Some(Phase::SafeRetreat));
    let mut acked = bytes(&arrived);
    let mut windows = Vec::new();
    while path.phase() == Phase::SafeRetreat {
        windows.push(path.cwnd());
        // Less than the response has left: the rest is queued.
        let sent_so_far = bytes(&initial) + bytes(&jump) + bytes(&in_retreat);
        assert!(sent_so_far < path.body.len() as u64, "{cc:?}: nothing left");
        let chunk: Vec<Sent> = unacked.drain(..10.min(unacked.len())).collect();
        assert!(!chunk.is_empty(), "{cc:?}: Safe Retreat outlived the jump");
        acked += bytes(&chunk);
        let sent = path.round_trip(&chunk, RTT / 2, RTT / 2);
        in_retreat.extend(
            sent.iter()
                .filter(|sent| sent.phase == Some(Phase::SafeRetreat))
                .cloned(),
        );
        unacked.extend(sent);
    }
    Retreat {
        path,
        sent: in_retreat,
        frozen,
        windows,
        acked,
        unacked,
    }
}

/// What [`sent_in_safe_retreat`] saw, and the path once Safe Retreat ended.
struct Retreat {
    path: Path,
    /// Sent while in Safe Retreat.
    sent: Vec<Sent>,
    /// The window Safe Retreat set.
    frozen: u64,
    /// The server's window at each ACK that found it still in Safe Retreat,
    /// the data still queued.
    windows: Vec<u64>,
    /// Acknowledged from the ACK that began Safe Retreat to the one that
    /// ended it.
    acked: u64,
    /// Sent and not yet acknowledged.
    unacked: Vec<Sent>,
}

/// RFC 9959, 4.8: Safe Retreat holds the window it set while the queue the
/// jump built drains: no growth, and no Proportional Rate Reduction credit
/// (CUBIC's PRR sent 14 datagrams beyond the frozen window). Reno and CUBIC
/// send no more than that window in all of Safe Retreat, with most of the
/// response still queued; BBR2 (Drain, RFC 9959's appendix) sends less than
/// was acknowledged since the retreat began: what is in flight only shrinks.
#[test]
fn safe_retreat_sends_no_more_than_its_frozen_window_with_data_queued_through_quiche() {
    for cc in [Cc::Reno, Cc::CUBIC] {
        let Retreat {
            sent,
            frozen,
            windows,
            ..
        } = sent_in_safe_retreat(cc);
        assert_eq!(frozen, retreat_window(IW), "{cc:?}");
        // The window never grew, at any ACK of Safe Retreat.
        assert!(windows.len() > 1, "{cc:?}: {windows:?}");
        assert!(windows.iter().all(|&w| w == frozen), "{cc:?}: {windows:?}");
        assert!(
            bytes(&sent) <= frozen,
            "{cc:?}: {} bytes sent",
            bytes(&sent)
        );
    }

    let Retreat { sent, acked, .. } = sent_in_safe_retreat(Cc::Bbr2Gcongestion);
    assert!(acked > 0);
    assert!(
        bytes(&sent) < acked,
        "{} sent, {acked} acknowledged",
        bytes(&sent)
    );
}

/// RFC 9959, 3.5 and 4.8: leaving Safe Retreat, ssthresh is PipeSize x Beta
/// and PipeSize does not reinitialise the window, which stays where Safe
/// Retreat held it; 3.7: back in normal congestion control below ssthresh,
/// Reno and CUBIC slow start (the window grows by every byte acknowledged,
/// up to ssthresh).
#[test]
fn leaving_safe_retreat_keeps_the_window_and_slow_starts_below_ssthresh_through_quiche() {
    for cc in [Cc::Reno, Cc::CUBIC] {
        let Retreat {
            mut path,
            frozen,
            unacked: chunk,
            ..
        } = sent_in_safe_retreat(cc);
        let changes = path.changes();
        let exit = changes.last().expect("a phase change");
        assert_eq!(
            (exit.old.map(|p| p.as_str()), exit.new.as_str()),
            (Some("safe_retreat"), "normal"),
            "{cc:?}"
        );
        let ssthresh = exit.state_data.ssthresh.expect("ssthresh");
        assert_eq!(ssthresh, exit.state_data.pipesize / 2, "{cc:?}");
        assert_eq!(path.cwnd(), frozen, "{cc:?}");
        assert!(frozen < ssthresh, "{cc:?}");

        // The next ACK, of what is in flight, in slow start.
        assert!(!chunk.is_empty(), "{cc:?}");
        path.round_trip(&chunk, RTT / 2, RTT / 2);
        // Slow start, up to ssthresh at most; congestion avoidance would add
        // about one datagram per window.
        let slow_started = (frozen + bytes(&chunk)).min(ssthresh);
        assert!(path.cwnd() >= slow_started, "{cc:?}: {}", path.cwnd());
    }
}
