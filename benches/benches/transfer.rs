//! What Careful Resume costs quiche per packet: one bulk transfer over an
//! in-memory link, by the patched quiche without a saved set and with one,
//! measured side by side.
//!
//! The link runs on quiche's virtual clock with a fixed 10 ms round trip, so
//! the resumed connection really goes through Reconnaissance, Unvalidated,
//! Validating and Normal in every iteration; the wall time measured is
//! quiche's own processing.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quiche::careful_resume::SavedState;
use quiche::test_utils::{emit_flight, process_flight, Pipe};

const TRANSFER: usize = 2 * 1024 * 1024;
const ONE_WAY: Duration = Duration::from_millis(5);

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
fn transfer(saved: Option<SavedState>, body: &[u8]) -> usize {
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
        // Measure what was meant: a connection that jumped and validated.
        assert_eq!(resume.phase(), quiche::careful_resume::Phase::Normal);
        assert!(resume.pipesize() > 0, "Careful Resume never jumped");
    }
    pipe.server.stats().sent
}

fn bulk_transfer(c: &mut Criterion) {
    let body = vec![0x5a; TRANSFER];
    let saved = SavedState {
        cwnd: 4 * 1024 * 1024,
        rtt: 2 * ONE_WAY,
    };

    let mut group = c.benchmark_group("bulk_transfer_2MiB");
    group.sample_size(20);
    for (name, saved) in [("no_saved_set", None), ("saved_set", Some(saved))] {
        let packets = transfer(saved, &body);
        group.throughput(Throughput::Elements(packets as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &saved, |b, &saved| {
            b.iter(|| transfer(saved, &body))
        });
    }
    group.finish();
}

criterion_group!(benches, bulk_transfer);
criterion_main!(benches);
