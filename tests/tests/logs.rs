//! What a server's log says about Careful Resume, as an operator greps it:
//! each jump with its size, a retreat with its trigger and the revocation
//! of its saved set, and a jump the response could not fill, with the hint
//! at the server loop. Captured from the `log` facade (one logger per test
//! binary, hence one test).

use std::time::Duration;

use cr_guard_redis::testing::LogCapture;
use log::{Level, LevelFilter};
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{lose_fifth_unvalidated, newest_token, opaque_client, Harness, CLIENT};

const RTT: Duration = Duration::from_millis(600);
const SIZE: usize = 2 * 1024 * 1024;

/// What cr-endpoint logs.
static CAPTURE: LogCapture = LogCapture::new("cr_endpoint");

#[test]
fn the_log_tells_each_jump_its_retreat_and_an_unused_jump() {
    CAPTURE.install(LevelFilter::Debug);

    let mut harness = Harness::new(Cc::CUBIC, RTT);
    let mut first = harness.download(opaque_client(None, 1), SIZE, |_| false);
    let token = newest_token(&mut first.client);
    CAPTURE.take();

    // A jump that loses a packet while unvalidated retreats.
    let retreated = harness.download(
        opaque_client(Some(&token), 2),
        SIZE,
        lose_fifth_unvalidated(),
    );
    let jump = retreated.server.stats().jump_window.expect("a jump");
    let lines = CAPTURE.take();
    assert!(
        lines.contains(&(
            Level::Debug,
            format!("{CLIENT}: Careful Resume jumped to {jump} B")
        )),
        "{lines:?}"
    );
    assert!(
        lines.contains(&(
            Level::Info,
            format!("{CLIENT}: Careful Resume retreated (packet_loss): the saved set is revoked")
        )),
        "{lines:?}"
    );

    // A jump a 64 KiB response cannot fill goes unused, and the log says
    // how much of it was sent while unvalidated and where to look.
    drop(retreated);
    let mut again = harness.download(opaque_client(None, 3), SIZE, |_| false);
    let token = newest_token(&mut again.client);
    CAPTURE.take();
    let small = harness.download(opaque_client(Some(&token), 4), 64 * 1024, |_| false);
    let stats = small.server.stats();
    assert!(stats.jump_unused, "{:?}", stats.phases);
    let jump = stats.jump_window.expect("a jump");
    let lines = CAPTURE.take();
    let unused: Vec<_> = lines
        .iter()
        .filter(|(_, line)| line.contains("jump went unused"))
        .collect();
    assert_eq!(unused.len(), 1, "once per connection: {lines:?}");
    let (level, line) = unused[0];
    assert_eq!(*level, Level::Info);
    assert!(
        line.starts_with(&format!("{CLIENT}: Careful Resume jump went unused: ")),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            " of the {jump} B it opened were sent while unvalidated"
        )),
        "{line}"
    );
    assert!(
        line.contains("see the server loop in cr_endpoint's docs"),
        "{line}"
    );
}
