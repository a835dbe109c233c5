//! Shared pieces of the benchmarks.
//!
//! [`transfer`] is one bulk download over an in-memory link on quiche's
//! virtual clock, used by the criterion benchmark `transfer` (wall time per
//! packet) and by the example `transfer_instructions` (instruction counts
//! under valgrind, which repeat exactly where wall time is noisy).

use std::time::{Duration, Instant};

use quiche::careful_resume::SavedState;
use quiche::test_utils::{emit_flight, process_flight, Pipe};

/// Bytes downloaded by [`transfer`].
pub const TRANSFER: usize = 2 * 1024 * 1024;
/// One-way delay of the in-memory link.
pub const ONE_WAY: Duration = Duration::from_millis(5);

fn config(is_server: bool) -> quiche::Config {
    quiche_cr_tests::config(is_server, quiche::CongestionControlAlgorithm::CUBIC)
}

/// One flight each way, each arriving one one-way delay after it was sent.
fn step(pipe: &mut Pipe, now: &mut Instant) {
    let to_server = emit_flight(&mut pipe.client);
    *now += ONE_WAY;
    quiche::clock::set(*now);
    if let Ok(flight) = to_server {
        process_flight(&mut pipe.server, flight).unwrap();
    }

    let to_client = emit_flight(&mut pipe.server);
    *now += ONE_WAY;
    quiche::clock::set(*now);
    if let Ok(flight) = to_client {
        process_flight(&mut pipe.client, flight).unwrap();
    }
}

/// One download of `TRANSFER` bytes; returns the number of packets the
/// server sent.
pub fn transfer(saved: Option<SavedState>, body: &[u8]) -> usize {
    let expect_jump = saved.is_some_and(|s| s.rtt == 2 * ONE_WAY);
    let mut now = Instant::now();
    quiche::clock::set(now);
    let mut pipe =
        Pipe::with_client_and_server_config(&mut config(false), &mut config(true)).unwrap();
    if let Some(saved) = saved {
        pipe.server.setup_careful_resume(saved).unwrap();
    }

    while !pipe.client.is_established() {
        step(&mut pipe, &mut now);
    }
    pipe.client.stream_send(0, b"GET", true).unwrap();

    let mut sent = 0;
    let mut received = 0;
    let mut buf = vec![0; 65536];
    while received < TRANSFER {
        if sent < TRANSFER {
            sent += pipe.server.stream_send(0, &body[sent..], true).unwrap_or(0);
        }
        step(&mut pipe, &mut now);
        while let Ok((len, _)) = pipe.client.stream_recv(0, &mut buf) {
            received += len;
        }
    }

    quiche::clock::unset();
    if let Some(resume) = pipe.server.careful_resume() {
        // Measure what was meant: Careful Resume ran to its end, with a jump
        // exactly when the saved RTT matches the path.
        assert_eq!(resume.phase(), quiche::careful_resume::Phase::Normal);
        assert_eq!(resume.pipesize() > 0, expect_jump);
    }
    pipe.server.stats().sent
}

/// The variants measured side by side, by name: no saved set; a saved set
/// whose RTT check fails at the first ACK (the same packets and timing as
/// without one, so the difference is the cost of the hooks); a saved set the
/// connection resumes from (a different trajectory: megabytes in flight).
pub fn variants() -> [(&'static str, Option<SavedState>); 3] {
    let resumed = SavedState {
        cwnd: 4 * 1024 * 1024,
        rtt: 2 * ONE_WAY,
    };
    // A saved RTT over twice the path's: RFC 9959 does not jump.
    let not_validated = SavedState {
        rtt: 10 * ONE_WAY,
        ..resumed
    };
    [
        ("no_saved_set", None),
        ("saved_set_not_validated", Some(not_validated)),
        ("saved_set_resumed", Some(resumed)),
    ]
}
