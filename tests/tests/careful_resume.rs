//! Careful Resume in the patched quiche, end to end in virtual time: a first
//! connection leaves a BDP token with the client, the second presents it and
//! the server resumes (or refuses to) exactly as RFC 9959 says.

use std::time::Duration;

use quiche::careful_resume::Phase;
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{lose_fifth_unvalidated, newest_token, opaque_client, Harness};

const RTT: Duration = Duration::from_millis(600);
const FIRST: usize = 2 * 1024 * 1024;
const MSS: u64 = 1200;

/// The phase changes the server logged, as (from, to, trigger) strings.
fn phases(trace: &qlog_cr::Trace) -> Vec<(String, String, String)> {
    trace
        .phase_changes
        .iter()
        .map(|c| {
            let u = &c.update;
            let from = u.old.map(|p| p.as_str().to_string()).unwrap_or_default();
            let trigger = u
                .trigger
                .map(|t| t.as_str().to_string())
                .unwrap_or_default();
            (from, u.new.as_str().to_string(), trigger)
        })
        .collect()
}

fn phase(from: &str, to: &str, trigger: &str) -> (String, String, String) {
    (from.into(), to.into(), trigger.into())
}

/// A first download that leaves a token, and the token.
fn first_connection(harness: &mut Harness) -> (Duration, Vec<u8>) {
    let mut first = harness.download(opaque_client(None, 1), FIRST, |_| false);
    assert!(
        first.trace.phase_changes.is_empty(),
        "no saved set, no Careful Resume"
    );
    (first.completion, newest_token(&mut first.client))
}

#[test]
fn an_opaque_client_resumes_and_the_transfer_finishes_sooner_with_every_controller() {
    for cc in [Cc::Reno, Cc::CUBIC, Cc::Bbr2Gcongestion] {
        let mut harness = Harness::new(cc, RTT);
        let (first, token) = first_connection(&mut harness);

        let second = harness.download(opaque_client(Some(&token), 2), FIRST, |_| false);

        assert!(second.server.session.address_validated, "{cc:?}");
        let saved = second
            .server
            .session
            .resume
            .expect("the token carries a saved set");
        let resume = second.server.conn.careful_resume().expect("resumed");
        assert_eq!(resume.jump_window() as u64, saved.saved_cwnd / 2, "{cc:?}");
        // No bandwidth limit: the whole jump leaves before any of it is
        // acknowledged, so the window fills first. BBR2's jump (RFC 9959's
        // appendix) has no window to fill: it lasts a round.
        let unvalidated_ends = match cc {
            Cc::Bbr2Gcongestion => "first_unvalidated_packet_acknowledged",
            _ => "last_unvalidated_packet_sent",
        };
        assert_eq!(
            phases(&second.trace)[..3],
            [
                phase("reconnaissance", "unvalidated", "congestion_window_limited"),
                phase("unvalidated", "validating", unvalidated_ends),
                phase(
                    "validating",
                    "normal",
                    "last_unvalidated_packet_acknowledged"
                ),
            ],
            "{cc:?}"
        );
        assert!(
            second.completion < first,
            "{cc:?}: resumed {:?} vs first {first:?}",
            second.completion
        );
    }
}

/// A packet sent while unvalidated is lost. Without a bandwidth limit the
/// whole jump leaves at once, so Unvalidated ends as the window fills and
/// the loss shows in Validating (a loss seen while still Unvalidated:
/// `loss_while_unvalidated_retreats_and_the_window_stays_frozen_through_quiche`
/// in tests/tests/triggers.rs).
#[test]
fn loss_while_unvalidated_retreats_to_half_the_validated_pipe() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let (_, token) = first_connection(&mut harness);

    // The path loses the fifth packet sent after the jump.
    let second = harness.download(
        opaque_client(Some(&token), 2),
        FIRST,
        lose_fifth_unvalidated(),
    );

    let changes = &second.trace.phase_changes;
    let retreat = changes
        .iter()
        .find(|c| c.update.new == qlog_cr::Phase::SafeRetreat)
        .expect("a retreat");
    assert_eq!(retreat.update.trigger, Some(qlog_cr::Trigger::PacketLoss));
    let state = retreat.update.state_data;
    // RFC 9959: the window is at most PipeSize/2 (whole datagrams here),
    // never under two datagrams.
    let expected = (state.pipesize / 2 / MSS * MSS).max(2 * MSS);
    assert_eq!(state.congestion_window, Some(expected));

    let exit = changes.last().expect("an exit");
    assert_eq!(exit.update.old, Some(qlog_cr::Phase::SafeRetreat));
    assert_eq!(exit.update.new, qlog_cr::Phase::Normal);
    assert_eq!(exit.update.trigger, Some(qlog_cr::Trigger::ExitRecovery));
    // Leaving it, ssthresh = PipeSize x Beta (0.5 by default).
    assert_eq!(
        exit.update.state_data.ssthresh,
        Some(exit.update.state_data.pipesize / 2)
    );
    assert_eq!(
        phases(&second.trace),
        [
            phase("reconnaissance", "unvalidated", "congestion_window_limited"),
            phase("unvalidated", "validating", "last_unvalidated_packet_sent"),
            phase("validating", "safe_retreat", "packet_loss"),
            phase("safe_retreat", "normal", "exit_recovery"),
        ]
    );
    let resume = second.server.conn.careful_resume().unwrap();
    assert_eq!(resume.phase(), Phase::Normal);
    assert!(resume.saved_set_consumed());
}

#[test]
fn no_jump_when_the_rtt_disagrees_with_the_saved_one() {
    for factor in [0.25, 11.0] {
        let mut harness = Harness::new(Cc::CUBIC, RTT);
        let (_, token) = first_connection(&mut harness);

        harness.one_way = RTT.mul_f64(factor) / 2;
        let second = harness.download(opaque_client(Some(&token), 2), FIRST, |_| false);

        assert_eq!(
            phases(&second.trace),
            [phase("reconnaissance", "normal", "rtt_not_validated")],
            "RTT x {factor}"
        );
        assert_eq!(second.server.conn.careful_resume().unwrap().pipesize(), 0);
    }
}

#[test]
fn an_application_limited_sender_does_not_jump() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let (_, token) = first_connection(&mut harness);

    // Less than the initial window: the sender never fills its window.
    let second = harness.download(opaque_client(Some(&token), 2), 4 * MSS as usize, |_| false);

    assert!(
        second.server.session.resume.is_ok(),
        "the saved set was accepted"
    );
    let resume = second.server.conn.careful_resume().unwrap();
    assert_eq!(resume.phase(), Phase::Reconnaissance);
    assert!(second.trace.phase_changes.is_empty());
}

#[test]
fn a_token_is_good_for_one_resumption_only() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let (_, token) = first_connection(&mut harness);

    let resumed = harness.download(opaque_client(Some(&token), 2), FIRST, |_| false);
    let replayed = harness.download(opaque_client(Some(&token), 3), FIRST, |_| false);

    assert!(resumed.server.session.resume.is_ok());
    // The resumed connection jumped, and went on observing once Careful
    // Resume had ended.
    let resume = resumed.server.conn.careful_resume().expect("resumed");
    assert!(resume.jumped());
    assert_eq!(resume.phase(), Phase::Normal);
    // It measured the path anew: its own set is the network's newest, and
    // the replayed one is superseded.
    assert_eq!(
        replayed.server.session.resume.unwrap_err(),
        cr_endpoint::ex_token::NoResume::Superseded
    );
    assert_not_resumed(&replayed);
}

/// Careful Resume was set up for the token, then ended without a jump when
/// the guard refused the set.
fn assert_not_resumed(download: &quiche_cr_tests::Download) {
    let resume = download.server.conn.careful_resume().expect("set up");
    assert!(!resume.jumped());
    assert_eq!(
        phases(&download.trace),
        [phase("reconnaissance", "normal", "saved_set_not_granted")]
    );
}

#[test]
fn sibling_tokens_of_one_connection_resume_at_most_one_connection() {
    use cr_endpoint::ex_token::{ExToken, NoResume};

    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let mut first = harness.download(opaque_client(None, 1), FIRST, |_| false);
    let bdp_tokens: Vec<(u64, Vec<u8>)> = std::iter::from_fn(|| first.client.new_token_next())
        .filter_map(|token| {
            let capacity = ExToken::decode(&token).ok()?.bdp()?.ok()?.capacity;
            Some((capacity, token))
        })
        .collect();
    // The estimate grew during the connection: several tokens, several
    // capacities, one saved set.
    assert!(bdp_tokens.len() >= 2, "{} BDP tokens", bdp_tokens.len());
    let (smallest, largest) = (&bdp_tokens[0], &bdp_tokens[bdp_tokens.len() - 1]);
    assert!(smallest.0 < largest.0, "{} then {}", smallest.0, largest.0);

    let resumed = harness.download(opaque_client(Some(&largest.1), 2), FIRST, |_| false);
    let sibling = harness.download(opaque_client(Some(&smallest.1), 3), FIRST, |_| false);

    assert_eq!(
        resumed.server.session.resume.map(|s| s.saved_cwnd),
        Ok(largest.0)
    );
    assert_eq!(
        sibling.server.session.resume.unwrap_err(),
        NoResume::Superseded
    );
    assert_not_resumed(&sibling);
}

#[test]
fn tokens_survive_a_lossy_path_and_resume_over_a_real_bottleneck() {
    use cr_sim::units::{Probability, Rate};

    let scenario = cr_sim::Scenario {
        rate: Rate::mbit(10),
        rtt: RTT,
        size: FIRST as u64,
        loss: Probability::new(0.02).unwrap(),
        seed: 3,
        ..cr_sim::Scenario::default()
    };
    let outcome = cr_sim::run_session(&scenario, false).expect("the session runs");
    let report = cr_sim::Report::of(&outcome);

    assert!(
        report.connections[0].packets_lost > 0,
        "the first connection saw loss"
    );
    assert!(
        report.connections[1].cr.engaged,
        "{:?}",
        report.connections[1].cr
    );
}

#[test]
fn quiche_traces_read_back_with_every_phase_and_plot() {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let (_, token) = first_connection(&mut harness);
    let second = harness.download(opaque_client(Some(&token), 2), FIRST, |_| false);

    let summary = second.trace.summary();
    let visited: Vec<_> = summary.phases.iter().map(|p| p.phase.as_str()).collect();
    assert_eq!(
        visited,
        ["reconnaissance", "unvalidated", "validating", "normal"]
    );
    let restored = summary.restored.expect("the saved set is in the trace");
    let saved = second.server.session.resume.unwrap();
    assert_eq!(restored.saved_congestion_window, saved.saved_cwnd);
    assert_eq!(restored.saved_rtt, saved.saved_rtt.as_secs_f64() * 1000.0);
    assert!(summary.max_congestion_window >= Some(saved.saved_cwnd / 2));

    let svg = qlog_cr::render_svg(std::slice::from_ref(&second.trace)).expect("a plot");
    for label in ["unvalidated", "validating", "congestion_window_limited"] {
        assert!(svg.contains(label), "the plot names {label}");
    }
}

/// One round trip over `pipe`, each way one `one_way` long; the server
/// writes `body` as its window allows, one packet at a time (a jump opens the
/// window on a packet sent). Returns the server's flight undelivered when
/// `keep` says so for the server connection once the flight is built.
fn round_trip(
    pipe: &mut quiche::test_utils::Pipe,
    now: &mut std::time::Instant,
    one_way: Duration,
    body: &[u8],
    written: &mut usize,
    keep: impl Fn(&quiche::Connection) -> bool,
) -> bool {
    use quiche::test_utils::{emit_flight, process_flight};

    let to_server = emit_flight(&mut pipe.client);
    *now += one_way;
    quiche::clock::set(*now);
    if let Ok(flight) = to_server {
        process_flight(&mut pipe.server, flight).expect("server receives");
    }
    let mut to_client = Vec::new();
    let mut buf = [0; 1500];
    loop {
        if pipe.server.is_established() {
            *written += pipe
                .server
                .stream_send(0, &body[*written..], true)
                .unwrap_or(0);
        }
        let Ok((len, info)) = pipe.server.send(&mut buf) else {
            break;
        };
        to_client.push((buf[..len].to_vec(), info));
    }
    *now += one_way;
    quiche::clock::set(*now);
    if keep(&pipe.server) {
        return true;
    }
    if !to_client.is_empty() {
        process_flight(&mut pipe.client, to_client).expect("client receives");
    }
    false
}

/// A client and a server on the virtual clock whose server resumes from a
/// saved set matching the path's `PIPE_RTT`, its qlog kept; clients may
/// migrate (spare connection IDs allowed).
fn resuming_pipe() -> (
    quiche::test_utils::Pipe,
    quiche_cr_tests::QlogSink,
    std::time::Instant,
) {
    let now = std::time::Instant::now() + Duration::from_secs(86_400);
    quiche::clock::set(now);
    let mut client_config = quiche_cr_tests::config(false, Cc::CUBIC);
    let mut server_config = quiche_cr_tests::config(true, Cc::CUBIC);
    for config in [&mut client_config, &mut server_config] {
        config.set_active_connection_id_limit(3);
    }
    let mut pipe = quiche::test_utils::Pipe::with_client_and_server_config(
        &mut client_config,
        &mut server_config,
    )
    .expect("a pipe");
    let saved = quiche::careful_resume::SavedState {
        cwnd: 4 << 20,
        rtt: PIPE_RTT,
    };
    pipe.server.setup_careful_resume(saved).expect("resume");
    let qlog = quiche_cr_tests::QlogSink::default();
    qlog.attach(&mut pipe.server, "server");
    (pipe, qlog, now)
}

/// Round trips until the server's flight carries the jump, which the
/// network then loses: nothing of the jump is acknowledged yet.
fn lose_the_jump(
    pipe: &mut quiche::test_utils::Pipe,
    now: &mut std::time::Instant,
    body: &[u8],
    written: &mut usize,
) {
    let jumped = |server: &quiche::Connection| {
        server.careful_resume().expect("resuming").phase() != Phase::Reconnaissance
    };
    while !round_trip(pipe, now, PIPE_RTT / 2, body, written, jumped) {}
}

/// Round-trip time of the in-memory pipes.
const PIPE_RTT: Duration = Duration::from_millis(20);

#[test]
fn a_migration_during_the_jump_is_a_path_change() {
    use quiche::test_utils::{create_cid_and_reset_token, emit_flight, process_flight, Pipe};

    let rtt = PIPE_RTT;
    let (mut pipe, qlog, mut now) = resuming_pipe();
    let body = vec![0; 4 << 20];
    let mut written = 0;
    let never = |_: &quiche::Connection| false;
    while !pipe.client.is_established() || !pipe.server.is_established() {
        round_trip(&mut pipe, &mut now, rtt / 2, &body, &mut written, never);
    }
    // Spare connection IDs, so the client can move.
    for _ in 0..2 {
        let (cid, token) = create_cid_and_reset_token(16);
        pipe.client.new_scid(&cid, token, true).expect("client CID");
        let (cid, token) = create_cid_and_reset_token(16);
        pipe.server.new_scid(&cid, token, true).expect("server CID");
    }
    round_trip(&mut pipe, &mut now, rtt / 2, &body, &mut written, never);
    pipe.client.stream_send(0, b"GET", true).expect("request");

    lose_the_jump(&mut pipe, &mut now, &body, &mut written);
    let phase = pipe.server.careful_resume().expect("resuming").phase();
    assert_eq!(phase, Phase::Validating, "the whole jump left at once");

    // The client moves to a new address; its first packets from there are
    // the server's first sign of it.
    let new_address = "192.0.2.99:5678".parse().expect("address");
    pipe.client
        .migrate(new_address, Pipe::server_addr())
        .expect("migration");
    pipe.client.stream_send(4, b"moved", true).expect("data");
    let to_server = emit_flight(&mut pipe.client).expect("a flight");
    now += rtt / 2;
    quiche::clock::set(now);
    process_flight(&mut pipe.server, to_server).expect("server receives");
    // The server answers (qlog records phase changes as it sends).
    emit_flight(&mut pipe.server).expect("the server answers");
    quiche::clock::unset();

    let trace = qlog.trace("server");
    let last = trace.phase_changes.last().expect("phase changes").update;
    assert_eq!(last.old, Some(qlog_cr::Phase::Validating));
    assert_eq!(last.new, qlog_cr::Phase::SafeRetreat);
    assert_eq!(last.trigger, Some(qlog_cr::Trigger::PathChanged));
    // The new path starts without the saved set.
    assert!(pipe.server.careful_resume().is_none());
}

#[test]
fn persistent_congestion_during_the_jump_ends_careful_resume() {
    use quiche::test_utils::{emit_flight, process_flight};

    let rtt = PIPE_RTT;
    let (mut pipe, qlog, mut now) = resuming_pipe();

    let body = vec![0; 4 << 20];
    let mut written = 0;
    while !pipe.client.is_established() || !pipe.server.is_established() {
        round_trip(&mut pipe, &mut now, rtt / 2, &body, &mut written, |_| false);
    }
    pipe.client.stream_send(0, b"GET", true).expect("request");
    lose_the_jump(&mut pipe, &mut now, &body, &mut written);

    // The path goes dark: the jump and the probes of three probe timeouts
    // are lost. A probe timeout alone declares nothing lost.
    for _ in 0..3 {
        now = pipe.server.timeout_instant().expect("a probe timer");
        quiche::clock::set(now);
        pipe.server.on_timeout();
        emit_flight(&mut pipe.server).expect("probes, which are lost");
    }
    let resume = pipe.server.careful_resume().expect("resuming");
    assert_eq!(resume.phase(), Phase::Validating, "no loss declared yet");

    // The path comes back: the next probes arrive and the client's ACK
    // shows everything since the jump lost, over more than three probe
    // timeouts: persistent congestion (RFC 9002, 7.6).
    now = pipe.server.timeout_instant().expect("a probe timer");
    quiche::clock::set(now);
    pipe.server.on_timeout();
    let probes = emit_flight(&mut pipe.server).expect("probes");
    now += rtt / 2;
    quiche::clock::set(now);
    process_flight(&mut pipe.client, probes).expect("client receives");
    let ack = emit_flight(&mut pipe.client).expect("an ACK");
    now += rtt / 2;
    quiche::clock::set(now);
    process_flight(&mut pipe.server, ack).expect("server receives");
    quiche::clock::unset();

    let resume = pipe.server.careful_resume().expect("resuming");
    assert_eq!(resume.phase(), Phase::Normal);
    assert!(
        resume.saved_set_consumed(),
        "a failed jump discredits the saved set"
    );
    let last = qlog
        .trace("server")
        .phase_changes
        .last()
        .expect("changes")
        .update;
    assert_eq!(last.old, Some(qlog_cr::Phase::Validating));
    assert_eq!(last.trigger, Some(qlog_cr::Trigger::PersistentCongestion));

    // The window collapsed to RFC 9002's minimum of two packets; the ACK
    // that revealed it may add what it acknowledged in slow start.
    let path = pipe.server.path_stats().next().expect("a path");
    assert!(
        path.cwnd >= 2 * path.pmtu && path.cwnd <= 4 * path.pmtu,
        "cwnd {} after persistent congestion (pmtu {})",
        path.cwnd,
        path.pmtu
    );
    assert_eq!(path.persistent_congestion_count, 1);
}
