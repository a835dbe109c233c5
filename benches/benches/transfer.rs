//! What Careful Resume costs quiche per packet: one bulk transfer over an
//! in-memory link, by the patched quiche without a saved set and with one,
//! measured side by side.
//!
//! The link runs on quiche's virtual clock with a fixed 10 ms round trip; the
//! wall time measured is quiche's own processing. Three variants:
//!
//! - `no_saved_set`: plain quiche-cr;
//! - `saved_set_not_validated`: Careful Resume runs, its RTT check fails at the
//!   first ACK and it ends without a jump, so the packets and their timing are
//!   exactly those of `no_saved_set`: the difference is the cost of the hooks;
//! - `saved_set_resumed`: the connection jumps and validates. It sends the same
//!   number of packets but with a flight of megabytes at once, and quiche's own
//!   per-packet work grows with the flight (ACK ranges, the sent-packet queue),
//!   so this variant measures the trajectory as much as Careful Resume.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quiche_cr_benches::{transfer, variants, TRANSFER};

fn bulk_transfer(c: &mut Criterion) {
    let body = vec![0x5a; TRANSFER];

    let mut group = c.benchmark_group("bulk_transfer_2MiB");
    group.sample_size(20);
    for (name, saved) in variants() {
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
