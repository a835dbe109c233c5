//! RFC 9959's pacing of the jump, measured on the simulated wire: every
//! packet the server sends while Unvalidated leaves one current RTT x its
//! predecessor's size / the jump window after the one before it, and no
//! burst in the jump exceeds the initial window.
//!
//! The packet that ends Unvalidated (the one that fills the jump window)
//! is paced like the others: it takes its release slot before the phase
//! changes (`the_packet_that_fills_the_jump_window_is_paced_too`).

use std::time::Duration;

use cr_serve::CongestionControl;
use cr_sim::link::MAX_DATAGRAM;
use cr_sim::world::Departure;
use cr_sim::{Report, Scenario};
use quiche::careful_resume::Phase;

/// quiche's initial window: ten datagrams of the simulation's size.
const IW: usize = 10 * MAX_DATAGRAM;

/// What the test allows around the RFC's gap: ±25 %.
const TOLERANCE: f64 = 0.25;

/// The server's side of a resumed connection, as it left the server.
struct Jump {
    /// Every datagram the server sent.
    departures: Vec<Departure>,
    /// The jump window (the congestion window on entering Unvalidated).
    window: usize,
    /// The first and the last datagram sent while Unvalidated.
    first: usize,
    last: usize,
}

impl Jump {
    /// The second connection of a session of `scenario`, which must have
    /// jumped and sent its whole jump window, the window filling up before
    /// anything of the jump was acknowledged (`last_unvalidated_packet_sent`).
    fn of(scenario: &Scenario) -> Jump {
        let outcome = cr_sim::run_session(scenario, true).expect("the session runs");
        let report = Report::of(&outcome);
        let cr = &report.connections[1].cr;
        let window = cr.jump_cwnd.expect("the second connection jumped") as usize;
        let unvalidated_ends = cr
            .phases
            .iter()
            .find(|p| p.from == Some("unvalidated"))
            .and_then(|p| p.trigger);
        assert_eq!(unvalidated_ends, Some("last_unvalidated_packet_sent"));
        let departures = outcome.connections[1].server_departures.clone();
        let unvalidated = |d: &Departure| d.phase == Some(Phase::Unvalidated);
        let first = departures
            .iter()
            .position(unvalidated)
            .expect("unvalidated");
        let last = departures
            .iter()
            .rposition(unvalidated)
            .expect("unvalidated");
        assert!(
            departures[first..=last].iter().all(unvalidated),
            "Unvalidated is one stretch of packets"
        );
        Jump {
            departures,
            window,
            first,
            last,
        }
    }

    /// Asserts that datagram `index` left the gap RFC 9959 asks for after
    /// the one before it: the current RTT (the server's smoothed RTT when it
    /// sent the one before) x that one's size / the jump window.
    fn assert_paced(&self, index: usize) {
        let (before, packet) = (&self.departures[index - 1], &self.departures[index]);
        let expected = before
            .rtt
            .mul_f64(before.bytes as f64 / self.window as f64)
            .as_secs_f64();
        let gap = (packet.at - before.at).as_secs_f64();
        assert!(
            (gap - expected).abs() <= TOLERANCE * expected,
            "packet {index} left {gap} s after the one before, expected {expected} s: {packet:?}"
        );
    }

    /// The bytes of each burst (datagrams leaving at the same instant) from
    /// the initial window's last one, sent by the packet that made the
    /// server jump, to the last packet of the jump.
    fn bursts(&self) -> Vec<usize> {
        let jumped_at = self.departures[self.first - 1].at;
        let start = self
            .departures
            .iter()
            .position(|d| d.at == jumped_at)
            .expect("the jump's packet");
        self.departures[start..=self.last]
            .chunk_by(|a, b| a.at == b.at)
            .map(|burst| burst.iter().map(|d| d.bytes).sum())
            .collect()
    }
}

#[test]
fn every_unvalidated_packet_leaves_paced_on_the_current_rtt_with_no_burst_above_iw() {
    for cc in [CongestionControl::Cubic, CongestionControl::Reno] {
        let jump = Jump::of(&Scenario {
            cc,
            ..Scenario::default()
        });
        // The whole window left unvalidated, packet by packet (the initial
        // window was in flight when the jump began).
        let packets = jump.last - jump.first + 1;
        assert!(
            packets >= (jump.window - IW) / MAX_DATAGRAM,
            "{cc:?}: {packets} packets of a {} B jump",
            jump.window
        );
        // The first one, after the packet that made the server jump, and
        // every one after it but the last (see the file's documentation).
        for index in jump.first..jump.last {
            jump.assert_paced(index);
        }
        // The initial window left in one burst; the jump never more than IW.
        let bursts = jump.bursts();
        assert!(
            bursts.iter().all(|&bytes| bytes <= IW),
            "{cc:?}: {bursts:?}"
        );
        assert!(bursts[0] >= IW - 2 * MAX_DATAGRAM, "{cc:?}: {bursts:?}");
    }
}

#[test]
fn the_packet_that_fills_the_jump_window_is_paced_too() {
    let jump = Jump::of(&Scenario::default());
    jump.assert_paced(jump.last);
}

#[test]
fn a_jump_over_a_slower_path_is_paced_on_the_measured_rtt_not_the_saved_one() {
    // Saved over 800 ms; the second connection's path takes 1.2 s. The
    // 400 ms more look like a standing queue the jump leaves room for: of
    // the 1.5 MB a 30 Mbit/s path's saved set offers, 58 kB are left, a
    // jump worth making (at 10 Mbit/s none would be).
    let jump = Jump::of(&Scenario {
        rate: cr_sim::units::Rate::mbit(30),
        size: 10 << 20,
        rtt2: Some(Duration::from_millis(1200)),
        ..Scenario::default()
    });
    // The RTT the gaps follow is the path's 1.2 s, not the saved 0.8 s,
    // which would make every gap a third shorter, out of the tolerance.
    let rtt = jump.departures[jump.first].rtt;
    assert!(
        (Duration::from_millis(1200)..Duration::from_millis(1210)).contains(&rtt),
        "{rtt:?}"
    );
    for index in jump.first..jump.last {
        jump.assert_paced(index);
    }
}
