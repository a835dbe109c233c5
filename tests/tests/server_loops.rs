//! Careful Resume whatever the order of a server loop's calls: the loop of
//! cr-server (stream data written before each packet sent), the loop of
//! upstream quiche's examples (one write after each recv, then send until
//! done), and a misplaced call (`on_progress` only after sending). Each
//! downloads 2 MiB over a 600 ms path, first without a token, then
//! resuming, in virtual time.

use std::time::Duration;

use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{newest_token, opaque_client, Download, Harness, ServerLoop};

const RTT: Duration = Duration::from_millis(600);
const SIZE: usize = 2 * 1024 * 1024;

/// A first download and a resumed one, through a server looping as
/// `server_loop` does.
fn first_and_resumed(server_loop: ServerLoop) -> (Download, Download) {
    let mut harness = Harness::new(Cc::CUBIC, RTT);
    harness.server_loop = server_loop;
    let mut first = harness.download(opaque_client(None, 1), SIZE, |_| false);
    let token = newest_token(&mut first.client);
    let resumed = harness.download(opaque_client(Some(&token), 2), SIZE, |_| false);
    (first, resumed)
}

fn seconds(download: &Download) -> f64 {
    download.completion.as_secs_f64()
}

#[test]
fn upstreams_loop_order_resumes_as_fast_as_cr_servers() {
    let (first, interleaved) = first_and_resumed(ServerLoop::Interleaved);
    let (_, upstream) = first_and_resumed(ServerLoop::WriteThenSend);
    eprintln!(
        "first {:.3} s; resumed: interleaved {:.3} s, write then send {:.3} s",
        seconds(&first),
        seconds(&interleaved),
        seconds(&upstream)
    );
    assert!(seconds(&first) / seconds(&interleaved) > 1.5);
    let stats = upstream.server.stats();
    assert!(
        stats.jump_window.is_some() && !stats.jump_unused,
        "{stats:?}"
    );
    assert!(
        seconds(&upstream) <= seconds(&interleaved) * 1.02,
        "upstream's order: {:?} against {:?}",
        upstream.completion,
        interleaved.completion
    );
}

#[test]
fn a_misplaced_call_never_costs_time_without_saying_so() {
    let (first, resumed) = first_and_resumed(ServerLoop::ProgressAfterSendOnly);
    let stats = resumed.server.stats();
    eprintln!(
        "progress after send only: first {:.3} s, resumed {:.3} s, {stats:?}",
        seconds(&first),
        seconds(&resumed)
    );
    assert!(
        seconds(&resumed) <= seconds(&first) || stats.jump_unused,
        "slower than without a token, and the stats do not say why: {stats:?}"
    );
}
