//! Per-event cost of Careful Resume in each phase, and of SEARCH's record:
//! what the recovery hot path pays per packet sent and per ACK.

use std::hint::black_box;
use std::time::{Duration, Instant};

use careful_resume::search::Search;
use careful_resume::{Ack, CarefulResume, Config, Congestion, PacketSent, Phase, SavedState};
use criterion::{criterion_group, criterion_main, Criterion};

const MSS: usize = 1200;
const IW: usize = 10 * MSS;
const RTT: Duration = Duration::from_millis(100);

fn sent(pn: u64, flight: usize, cwnd_limited: bool, now: Instant) -> PacketSent {
    PacketSent {
        pn,
        bytes: MSS,
        bytes_in_flight: flight,
        cwnd: IW,
        cwnd_limited,
        now,
    }
}

fn ack(largest: Option<u64>, acked: usize, flight: usize, now: Instant) -> Ack {
    Ack {
        largest_acked: largest,
        acked_bytes: acked,
        bytes_in_flight: flight,
        cwnd: IW,
        min_rtt: RTT,
        smoothed_rtt: RTT,
        now,
    }
}

/// A state machine driven into `phase` with pn 0..=99 sent.
fn in_phase(phase: Phase, start: Instant) -> CarefulResume {
    let config = Config::new(IW, MSS).expect("valid config");
    let saved = SavedState {
        cwnd: 400 * MSS,
        rtt: RTT,
    };
    let mut cr = CarefulResume::new(config, saved);
    let now = start + RTT;
    cr.on_ack(&ack(None, 3 * MSS, 0, now));
    if phase == Phase::Reconnaissance {
        return cr;
    }
    cr.on_packet_sent(&sent(9, IW, true, now));
    for pn in 10..100 {
        cr.on_packet_sent(&sent(pn, (pn as usize + 1) * MSS, true, now));
    }
    match phase {
        Phase::Unvalidated => {}
        Phase::Validating => {
            cr.on_ack(&ack(Some(10), 11 * MSS, 89 * MSS, now));
        }
        Phase::SafeRetreat => {
            cr.on_congestion(Congestion::Loss, now);
        }
        Phase::Normal => {
            cr.on_persistent_congestion(now);
        }
        Phase::Reconnaissance => unreachable!(),
    }
    assert_eq!(cr.phase(), phase);
    cr
}

fn per_event(c: &mut Criterion) {
    let start = Instant::now();
    let now = start + RTT + Duration::from_millis(1);
    let phases = [
        Phase::Normal,
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Phase::Validating,
        Phase::SafeRetreat,
    ];
    let mut group = c.benchmark_group("careful_resume");
    for phase in phases {
        let mut cr = in_phase(phase, start);
        // pn 5 is below the first unvalidated packet: no event ends the phase.
        let quiet_ack = ack(Some(5), MSS, 50 * MSS, now);
        group.bench_function(format!("on_ack/{}", phase.as_str()), |b| {
            b.iter(|| black_box(cr.on_ack(black_box(&quiet_ack))))
        });
        assert_eq!(cr.phase(), phase);

        let mut cr = in_phase(phase, start);
        let quiet_send = sent(100, 50 * MSS, false, now);
        group.bench_function(format!("on_packet_sent/{}", phase.as_str()), |b| {
            b.iter(|| black_box(cr.on_packet_sent(black_box(&quiet_send))))
        });
        assert_eq!(cr.phase(), phase);

        let cr = in_phase(phase, start);
        group.bench_function(format!("hot_path_queries/{}", phase.as_str()), |b| {
            b.iter(|| {
                let cr = black_box(&cr);
                let window = cr.window().map_or(IW, |w| w.apply(IW));
                black_box((window, cr.suppresses_growth(), cr.pacing_rate()))
            })
        });
    }
    group.finish();
}

/// SEARCH's cost per ACK in a steady flow: one packet sent and one
/// acknowledged every 100 us (10,000 packets a second) at an RTT of 100 ms,
/// so that a bin boundary (a fortieth of its two-RTT window, 5 ms) is
/// crossed every fiftieth ACK. quiche hands SEARCH every ACK, in slow
/// start and in congestion avoidance alike (so that its record is current
/// when slow start reopens after a Careful Resume jump).
fn search_per_ack(c: &mut Criterion) {
    let mut search = Search::new();
    let mut now = Instant::now();
    let step = Duration::from_micros(100);
    // Fill the record: two RTTs of history, so that every ACK reads.
    for _ in 0..2_000 {
        search.on_packet_sent(MSS, now);
        search.on_ack(MSS, RTT, now);
        now += step;
    }
    let mut group = c.benchmark_group("search");
    group.bench_function("sent_and_acked_in_a_steady_flow", |b| {
        b.iter(|| {
            search.on_packet_sent(black_box(MSS), now);
            let verdict = search.on_ack(black_box(MSS), RTT, now);
            now += step;
            black_box(verdict)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = per_event, search_per_ack
}
criterion_main!(benches);
