//! Careful Resume (RFC 9959) as a sans-IO state machine.
//!
//! A sender that remembers a path's capacity from an earlier connection (a
//! *saved set*: `saved_cwnd`, `saved_rtt`) may, on a later connection over
//! the same path, jump its congestion window instead of slow-starting, as
//! long as it checks the path first and retreats safely if the jump was
//! wrong. This crate holds the whole algorithm and none of the plumbing: it
//! reads no clock (time is an argument), does no I/O, allocates nothing and
//! knows nothing of any QUIC stack.
//!
//! - [`CarefulResume`]: the state machine, for window-based controllers
//!   (Reno, CUBIC) and, by the RFC's appendix, rate-based ones (BBR:
//!   [`CarefulResume::new_rate_based`], [`RateControl`]).
//! - [`Observer`]: the observing policy of the earlier connection: what to
//!   save, and when.
//! - [`search::Search`]: the slow-start exit of that earlier connection
//!   (SEARCH), so that what it measures, and saves, is not the aftermath
//!   of an overflowing queue.
//!
//! Where to start: [`CarefulResume::new`] with a [`Config`] and a
//! [`SavedState`], and the section "Wiring it into a QUIC stack" below.
//!
//! # The algorithm
//!
//! ```text
//!                      connection starts with a saved set
//!                                    |
//!                                    v
//!                          +------------------+  loss, ECN-CE, path change,
//!                          |  Reconnaissance  |  RTT <= saved/2 or > 10 x saved,
//!                          |   cwnd = IW      |  nothing to gain ---------------+
//!                          +------------------+                                 |
//!    initial data acked, RTT checked,  |                                        |
//!    sender cwnd-limited               v                                        |
//!                          +------------------+  flight < IW or                 |
//!                          |   Unvalidated    |  flight <= PipeSize             v
//!                          | cwnd = jump,     |---------------------->+------------------+
//!                          | paced on cur. RTT|  (rate_limited)       |      Normal      |
//!                          +------------------+                       |  (CR has ended)  |
//!   window full, first     |              | loss, ECN-CE, path        +------------------+
//!   unvalidated pn acked,  |              | change, RTT > 10 x saved     ^        ^
//!   or > 1 RTT spent       v              |                              |        |
//!                          +------------------+  last unvalidated pn     |        |
//!                          |    Validating    |  acked ------------------+        |
//!                          |  cwnd = flight   |                                   |
//!                          +------------------+                                   |
//!                 loss, ECN-CE,   |       |                                       |
//!                 path change     v       v                                       |
//!                          +------------------+  last unvalidated pn acked        |
//!                          |   Safe Retreat   |  ssthresh = PipeSize x Beta       |
//!                          | cwnd <= Pipe/2,  |  (exit_recovery) -----------------+
//!                          | frozen; saved    |
//!                          | set deleted      |
//!                          +------------------+
//!             persistent congestion: from any phase to Normal
//! ```
//!
//! *PipeSize* is the capacity validated so far: the flight when the jump is
//! taken, plus every byte acknowledged afterwards. The jump window is
//! min(max_jump, saved_cwnd / 2), less the queue of others' data that the
//! minimum RTT shows before the jump (its excess over the saved RTT, beyond
//! an eighth of it clamped to 4-16 ms, at the saved rate): the jump plus
//! that queue never exceeds what the jump alone would queue on the idle
//! path, and a queue of half the saved capacity leaves no jump. A server
//! sharing out jumps lowers them further ([`CarefulResume::limit_jump`]).
//! Careful Resume never sets the window below
//! IW except in response to congestion, and only affects the application
//! packet number space.
//!
//! # Wiring it into a QUIC stack
//!
//! Keep one [`CarefulResume`] per path, next to (not inside) the congestion
//! controller, created from a saved set the token layer accepted (first user
//! of the set, not expired, same client address). Then:
//!
//! | stack event | call | apply |
//! |---|---|---|
//! | application packet sent | [`CarefulResume::on_packet_sent`] | transition |
//! | ACK processed (any space), after the controller's own update | [`CarefulResume::on_ack`] | transition |
//! | loss or ECN-CE, after the controller's reduction | [`CarefulResume::on_congestion`] | transition |
//! | persistent congestion | [`CarefulResume::on_persistent_congestion`] | transition |
//! | path change or migration | [`CarefulResume::on_path_change`] | transition |
//! | ACK processed, once Careful Resume is over | [`CarefulResume::on_ack_after_validation`] | ssthresh |
//! | loss, once Careful Resume is over, after the controller's reduction | [`CarefulResume::on_loss_after_validation`] | window and ssthresh down to it |
//!
//! ECN-CE (the `ECN_CE` trigger) is in the state machine, but quiche 0.30
//! has no ECN: it sends no packet marked ECN-capable and ignores the ECN
//! counts of the ACK frames it receives. In quiche-cr the trigger therefore
//! never fires; loss (and persistent congestion) is the only congestion
//! signal.
//!
//! Applying a [`Transition`]: set the window to `cwnd` and the slow start
//! threshold to `ssthresh` when they are `Some`; delete the saved set when
//! `saved_set_consumed`; log a `careful_resume_phase_updated` qlog event from
//! the fields (`Phase::as_str`, `Trigger::as_str` give the exact strings).
//! A transition into [`Phase::SafeRetreat`] is the connection's congestion
//! response: start the controller's recovery period there, so that losses
//! of packets sent before it do not reduce the window again (RFC 9002,
//! 7.3.2); on leaving it with [`Trigger::ExitRecovery`], let the controller
//! go on as after a congestion event at `pipesize` (CUBIC: W_max is
//! PipeSize, the curve through the new ssthresh), not towards the window
//! the jump had.
//!
//! On the hot path, guard every call with [`CarefulResume::wants_events`]
//! (one branch once CR is over; after a validated jump it stays true while
//! Careful Resume follows the round after it, which only
//! [`Config::with_slow_start_past_saved`] turns on), but for
//! [`CarefulResume::on_loss_after_validation`], which losses reach after
//! that too; and while
//! [`CarefulResume::is_active`]:
//! - the effective window is `window().map_or(cwnd, |w| w.apply(cwnd))`;
//! - skip the controller's window growth when `suppresses_growth()`;
//! - while unvalidated, pace every packet with
//!   [`CarefulResume::pacing_interval`] (computed from the current RTT), so
//!   that no burst exceeds the initial window;
//! - for a rate-based controller, apply [`CarefulResume::rate_control`]
//!   instead of a window, and call [`CarefulResume::on_startup_over`] if it
//!   leaves Startup before the jump.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use careful_resume::{Ack, CarefulResume, Config, PacketSent, Phase, SavedState};
//!
//! let mss = 1200;
//! let config = Config::new(10 * mss, mss).unwrap();
//! let saved = SavedState { cwnd: 200 * mss, rtt: Duration::from_millis(600) };
//! let mut cr = CarefulResume::new(config, saved);
//! let start = Instant::now();
//!
//! // The handshake flight is acknowledged: first RTT sample, it fits.
//! let ack = Ack {
//!     largest_acked: None,
//!     acked_bytes: 3 * mss,
//!     bytes_in_flight: 0,
//!     cwnd: 10 * mss,
//!     min_rtt: Duration::from_millis(610),
//!     smoothed_rtt: Duration::from_millis(610),
//!     now: start + Duration::from_millis(610),
//! };
//! assert!(cr.on_ack(&ack).is_none());
//!
//! // The response fills the initial window: jump.
//! let sent = PacketSent {
//!     pn: 9,
//!     bytes: mss,
//!     bytes_in_flight: 10 * mss,
//!     cwnd: 10 * mss,
//!     cwnd_limited: true,
//!     now: start + Duration::from_millis(620),
//! };
//! let jump = cr.on_packet_sent(&sent).unwrap();
//! assert_eq!(jump.to, Phase::Unvalidated);
//! assert_eq!(jump.cwnd, Some(100 * mss));
//! ```

mod ack_train;
mod events;
mod min_filter;
mod observe;
pub mod pacing;
mod params;
mod phase;
mod rate;
mod recon;
mod resume;
pub mod search;

pub use events::{Ack, Congestion, PacketSent};
pub use observe::{CapacitySample, Observation, Observer, ObserverConfig};
pub use params::{Beta, Config, ConfigError, InitialData, SavedState};
pub use phase::{Phase, RateControl, Transition, Trigger, WindowControl};
pub use resume::CarefulResume;
