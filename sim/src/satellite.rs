//! The satellite benchmark: 100 MB over a 600 ms GEO path at 250, 50 and
//! 10 Mbit/s, without loss and with 1 % random loss, 3 ms of jitter, the
//! first connection and a resumed one with CUBIC, Reno and BBR2, beside
//! the completion times published for the same transfers.
//!
//! This module owns the benchmark's sweep ([`sweep`]), the published
//! bounds ([`Bounds`]) and its table ([`render`]); the sessions are
//! [`crate::sweep`]'s. A full run (36 sessions of two 100 MB downloads,
//! some running into the 900 s limit of virtual time) took 72 s on two
//! cores, so it is `cr-sim satellite` (`make satellite`), not part of the
//! suite nor of the tests.
//!
//! The bounds are picoquic's satellite tests' (`picoquictest/
//! satellite_test.c`): the targets their comments quote from
//! draft-kuhn-quic-4-sat (7 s at 250 Mbit/s, 10 s with loss, 20 s at
//! 50 Mbit/s, 85 s at 10 Mbit/s) and the completion times the tests hold
//! picoquic to (BBR 6.3 s, 8 s with loss, 18 s at 50 Mbit/s, 81 s at
//! 10 Mbit/s; 4.8 s "seeded" with a previous connection's RTT and rate,
//! its counterpart of a resumed connection; CUBIC 6.5 s, 7.5 s with
//! loss). picoquic's paths differ from this simulator's in ways that
//! favour it: a return link of a few Mbit/s of its own rather than a
//! symmetric one (here acknowledgements share the loss), and its "1 %"
//! loss is a fixed pattern of one datagram in 64 rather than random.

use std::time::Duration;

use crate::sweep::Grid;
use crate::sweep::Sweep;
use crate::sweep::SweepRun;
use crate::table;
use crate::units::Probability;
use crate::units::Rate;
use crate::units::Volume;
use cr_serve::CongestionControl;

/// Bytes fetched by every connection.
pub const SIZE: u64 = 100_000_000;

/// The benchmark: rates 250, 50 and 10 Mbit/s, 600 ms, 100 MB, 0 % and
/// 1 % random loss, 3 ms of jitter, a 1 x BDP drop-tail queue, CUBIC, Reno
/// and BBR2, each first and resumed (and the same seed without a token).
pub fn sweep() -> Sweep {
    Sweep {
        grid: Grid {
            rates: [250, 50, 10].map(Rate::mbit).to_vec(),
            rtts: vec![Duration::from_millis(600)],
            sizes: vec![Volume::Bytes(SIZE)],
            losses: [0.0, 0.01]
                .map(|p| Probability::new(p).unwrap_or_default())
                .to_vec(),
            ccs: vec![
                CongestionControl::Cubic,
                CongestionControl::Reno,
                CongestionControl::Bbr2,
            ],
            jitter: Duration::from_millis(3),
            resumed: true,
            ..Grid::default()
        },
        sample: None,
    }
}

/// The completion times published for one transfer of the benchmark, in
/// seconds (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    /// draft-kuhn-quic-4-sat's target, as picoquic's tests quote it.
    pub target: Option<f64>,
    /// What picoquic's test holds a first connection to.
    pub picoquic: Option<f64>,
    /// What picoquic's test holds a connection seeded with a previous
    /// connection's RTT and rate to.
    pub picoquic_seeded: Option<f64>,
}

impl Bounds {
    /// The bounds of `cc` at `rate_mbit` with random loss (1 %) or without.
    pub fn of(cc: &str, rate_mbit: u64, lossy: bool) -> Bounds {
        let target = match (rate_mbit, lossy) {
            (250, false) => Some(7.0),
            (250, true) => Some(10.0),
            (50, false) => Some(20.0),
            (10, false) => Some(85.0),
            _ => None,
        };
        let (picoquic, picoquic_seeded) = match (cc, rate_mbit, lossy) {
            ("bbr2", 250, false) => (Some(6.3), Some(4.8)),
            ("bbr2", 250, true) => (Some(8.0), None),
            ("bbr2", 50, false) => (Some(18.0), None),
            ("bbr2", 10, false) => (Some(81.0), None),
            ("cubic", 250, false) => (Some(6.5), None),
            ("cubic", 250, true) => (Some(7.5), None),
            _ => (None, None),
        };
        Bounds {
            target,
            picoquic,
            picoquic_seeded,
        }
    }
}

/// The benchmark as a table: per controller, rate and loss, the first and
/// the resumed connection's completion times (and the same seed's second
/// connection without a token), their losses, the physical limit and the
/// published bounds; "-" where a session did not finish.
pub fn render(runs: &[SweepRun]) -> String {
    let mut runs: Vec<&SweepRun> = runs.iter().collect();
    let cc_order = |cc: &str| ["cubic", "reno", "bbr2"].iter().position(|c| *c == cc);
    runs.sort_by(|a, b| {
        let key = |r: &SweepRun| {
            (
                cc_order(r.scenario.cc),
                std::cmp::Reverse(r.scenario.rate_bps),
                r.scenario.loss.to_bits(),
            )
        };
        key(a).cmp(&key(b))
    });
    let completion =
        |c: Option<&crate::report::ConnectionReport>| table::secs(c.and_then(|c| c.completion_s));
    let lost = |c: Option<&crate::report::ConnectionReport>| {
        c.map_or("-".into(), |c| format!("{:.2}%", c.loss_ratio() * 100.0))
    };
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|run| {
            let s = &run.scenario;
            let rate_mbit = s.rate_bps / 1_000_000;
            let bounds = Bounds::of(s.cc, rate_mbit, s.loss > 0.0);
            let limit = run.first.as_ref().map(|c| c.limit_s);
            vec![
                s.cc.to_string(),
                format!("{rate_mbit} Mbit/s"),
                format!("{}%", s.loss * 100.0),
                table::secs(limit),
                completion(run.first.as_ref()),
                completion(run.resumed.as_ref()),
                completion(run.without_token.as_ref()),
                lost(run.first.as_ref()),
                lost(run.resumed.as_ref()),
                table::secs(bounds.target),
                table::secs(bounds.picoquic),
                table::secs(bounds.picoquic_seeded),
            ]
        })
        .collect();
    table::render(
        &[
            "cc",
            "rate",
            "loss",
            "limit",
            "first",
            "resumed",
            "no token",
            "lost first",
            "lost resumed",
            "target",
            "picoquic",
            "seeded",
        ],
        &rows,
    )
}
