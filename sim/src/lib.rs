//! cr-sim: a deterministic virtual-time network simulator that runs real
//! quiche-cr clients and servers over a bottleneck link, to show what
//! Careful Resume (RFC 9959) does for a connection that resumes a path's
//! saved capacity.
//!
//! Where to start: a [`Scenario`] run by [`run_session`] into a [`Report`];
//! the suite's cases are [`suite::cases`].
//!
//! # Model
//!
//! Two endpoints are joined by a bottleneck with, per direction, a rate, a
//! one-way delay, a drop-tail queue in bytes (or a multiple of the
//! bandwidth-delay product), seeded random loss, loss windows (time ranges,
//! counted from each connection's start, with their own loss rate), jitter
//! (uniform extra delay that never reorders) and a rate schedule ([`link`]).
//! Competing flows (more client/server pairs) share the same bottleneck,
//! and many clients can share one server ([`world::World::add_server`]):
//! flash crowds ([`crowd`]) and users behind one address prefix
//! ([`cgnat`]).
//! Time is virtual ([`clock`]): the loop ([`world`]) jumps to the next
//! datagram release (quiche's pacing time `SendInfo.at`), arrival or
//! connection timer (`timeout_instant()`), and moves quiche's thread-local
//! clock there. A session ([`session`]) runs connection 1, then after each
//! gap one more connection (two in all unless the scenario lists more
//! sizes), each presenting the newest token the client holds. The client
//! keeps a finished connection open until its next one (or closes it at
//! once: `close_when_done`).
//!
//! Every quiche connection is made in [`endpoint`]; that is where the
//! Careful Resume integration plugs in. The server side of each connection
//! is `cr_serve::ServerSession` and the applications are `cr_serve::app`'s:
//! the code `cr-server` runs on real sockets, in the same order of
//! housekeeping, serving and sending.
//!
//! # Determinism
//!
//! The link draws from its own seeded generator ([`rng`]), connection IDs
//! and token keys derive from the seed, quiche's own random draws (the
//! packet number it skips) come from `quiche::seeded_random` seeded per
//! session, GREASE is off, the server's certificate is RSA (an ECDSA
//! signature's length varies), and simulation time is exact nanoseconds:
//! a seed fixes every report bit for bit. (A qlog header's
//! `wall_clock_time` is quiche's real clock and still differs.)
//!
//! # JSON schema of `cr-sim run --json` (stable)
//!
//! Times are seconds (to the microsecond), rates Mbit/s unless named `_bps`.
//!
//! ```text
//! {
//!   "scenario": {
//!     "rate_bps": u64, "rtt_s": f64, "size_bytes": u64,
//!     "later_sizes_bytes": [u64],  // sizes of connections 2, 3, ...
//!     "cc": "cubic"|"reno"|"bbr2", "app": "h3"|"hq-interop",
//!     "loss": f64, "loss_windows": [{"from_s": f64, "to_s": f64, "loss": f64}],
//!     "rate2_bps": u64|null, "rtt2_s": f64|null, "queue_bytes": u64,
//!     "gap_s": f64, "jitter_s": f64, "seed": u64, "resume": bool,
//!     "competing_flow": bool, "close_when_done": bool,
//!     "small_packets": bool,     // quiche's default packet sizes, not quiche-cr's
//!     "slow_start": "hystart"|"search",
//!     "early_data": bool,        // later requests sent as early data (0-RTT)
//!     "queue_discipline": "droptail"|"codel"|"fq_codel",
//!     "policer": null | {"rate": u64, "burst": u64}, // bits/s, bytes
//!     "policer2": null | {"rate": u64, "burst": u64}, // the later connections' path
//!     "schedule": null | [{"at_s": f64, "rate_bps": u64, "rtt_s": f64}],
//!     "schedule2": null | [...],   // the later connections' schedule
//!     "rtt_once_per_rtt": bool,  // the server's RTT estimate once per round trip
//!     "pace": bool,              // Reno and CUBIC paced their packets
//!     "slow_start_past_saved": bool // slow start past the saved capacity
//!   },
//!   "limit_s": f64,              // 2*RTT + size/rate of the first path
//!   "connections": [             // [first, second, ...]
//!     {
//!       "completion_s": f64|null, // client's first packet -> last body byte
//!       "ttfb_s": f64|null,       // client's first packet -> first body byte
//!       "goodput_mbps": f64|null, // size / completion
//!       "packets_sent": u64,      // by the server
//!       "packets_lost": u64,      // declared lost by the server
//!       "size_bytes": u64,        // fetched by this connection
//!       "token_presented": null | {"capacity_bytes": u64, "rtt_s": f64},
//!       "token_left": null | {"capacity_bytes": u64, "rtt_s": f64},
//!                                 // the saved set of the token presented,
//!                                 // and of the one the next would present
//!       "limit_s": f64,           // 2*RTT + size/rate of this connection's path
//!       "ratio_to_limit": f64|null,
//!       "cr": {                   // from the server's qlog
//!         "engaged": bool,        // an Unvalidated phase was entered
//!         "jump_cwnd": u64|null,  // cwnd (bytes) on entering Unvalidated
//!         "phases": [{"t_s": f64, "from": str|null, "to": str, "trigger": str|null}],
//!         "final_phase": str|null
//!       },
//!       "early_data": bool,      // the server accepted the request in 0-RTT
//!       "packing": null | {       // how the server packed data into packets
//!         "stream_packets": u64,  // packets that carried STREAM frames
//!         "stream_packets_needed": u64, // full ones the body + retransmissions need
//!         "stream_packet_ratio": f64,   // stream_packets / stream_packets_needed
//!         "control_packets": u64, // packets with control frames only
//!         "datagrams": u64,       // datagrams the server sent
//!         "below_half_share": f64,  // share shorter than 50% of the maximum size
//!         "below_90pct_share": f64, // share shorter than 90% of the maximum size
//!         "wire_bytes_per_body_byte": f64
//!       },
//!       "persistent_congestion": u64, // times the server found it (RFC 9002 7.6)
//!       "probe_timeouts": u64,    // times the server's probe timeout fired
//!       "spurious_losses": u64,   // packets declared lost, acknowledged later
//!       "slow_start_exit": null | {"reason": "loss"|"bandwidth_plateau"|
//!           "conservative_slow_start_rounds"|"persistent_queue", "cwnd_bytes": u64}
//!     }, ...
//!   ],
//!   "speedup": f64|null,         // first completion / last completion
//!   "competing": null | {        // the long download sharing the link
//!     "before_mbps": f64,        // before the second connection (as long as it)
//!     "during_mbps": f64,        // while the second connection ran
//!     "kept": f64|null,          // during / before
//!     "through_jump_mbps": f64|null, // from the jump until CR ended (null: no jump)
//!     "kept_through_jump": f64|null  // through_jump / before
//!   }
//! }
//! ```
//!
//! Phase and trigger names are the qlog strings of
//! `quic:careful_resume_phase_updated` (`reconnaissance`, `unvalidated`,
//! `validating`, `safe_retreat`, `normal`; `congestion_window_limited`, ...);
//! `t_s` counts from the client's first packet. `cr-sim suite --json`
//! prints an array of `{"name", "about", "resumed": {"Ok": report} |
//! {"Err": message}, "baseline": ..., "small_packets": ..., "early_data":
//! ..., "wall_s"}` (`early_data`: resumed, each later request sent in
//! 0-RTT), then one `{"name", "about", "crowd": {"Ok": crowd report} | {"Err":
//! message}, "wall_s"}` per flash crowd, then `{"first_connections":
//! [row]}`, the first-connection sweep ([`first_connections::SweepRow`]).
//!
//! # Flash crowds: `cr-sim crowd --json` ([`crowd`])
//!
//! N clients, each on a /24 of its own, first download alone one after
//! another, then all start within `spread` on one bottleneck and one
//! server; arm `resume` presents their tokens, arm `baseline` does not.
//!
//! ```text
//! {
//!   "crowd": {"clients": u64, "rate_bps": u64, "rtt_s": f64, "size_bytes": u64,
//!             "cc": str, "slow_start": str, "app": str, "queue_bytes": u64, "spread_s": f64,
//!             "competing": bool, "warm_up_s": f64, "seed": u64,
//!             "resumers": u64|null, "requested_capacity_bytes": u64|null,
//!             "jump_budget": bool, "queue_discipline": str,
//!             "policer": null | {"rate": u64, "burst": u64},
//!             "schedule": null | [{"at_s": f64, "rate_bps": u64, "rtt_s": f64}]},
//!   "limit_s": f64,              // 2*RTT + size/rate: one client alone
//!   "crowd_limit_s": f64,        // 2*RTT + clients*size/rate
//!   "alone": {"median_completion_s": f64|null, "median_saved_bytes": u64|null},
//!   "resume" | "baseline": {
//!     "clients": u64, "completed": u64,
//!     "presented": u64,          // presented a token with a saved set
//!     "engaged": u64,            // the server jumped
//!     "retreated": u64,          // Safe Retreat
//!     "jump_bytes": u64,         // the jump windows, summed
//!     "median_completion_s" | "p95_completion_s" | "max_completion_s" |
//!     "mean_completion_s": f64|null,      // p95 by nearest rank
//!     "median_completion_engaged_s" | "median_completion_not_engaged_s": f64|null,
//!     "lost_packets": u64, "sent_packets": u64,   // by the server, all clients
//!     "jain_fairness": f64|null, // over the clients' goodputs
//!     "crowd_span_s": f64,       // first start to last byte
//!     "incumbent_share": f64|null,       // --competing: through the crowd / before
//!     "incumbent_share_early": f64|null, // the same over the first 5 RTTs
//!     "incumbent_link_share_in_jumps": f64|null, // its share of the link from
//!                                // the first jump to the last validation's end
//!                                // (baseline: over the same stretch of its crowd)
//!     "incumbent_before_mbps": f64|null,
//!     "connections": [...]       // each client's, in client order, as an
//!                                // element of `cr-sim run --json`'s (above)
//!   }
//! }
//! ```
//!
//! With `--seed FIRST..LAST` ([`crowd_seeds`]) the crowd runs once per seed:
//!
//! ```text
//! {
//!   "seeds": [crowd report, ...],  // as above, in seed order
//!   "summary": {
//!     "runs": u64,
//!     "median_ratio_mean" | "median_ratio_max" | "p95_ratio_mean" |
//!     "p95_ratio_max": f64|null,   // each seed's resumed / baseline
//!     "slower_runs": u64,          // seeds with a median or p95 above 1
//!     "pooled_median_ratio" | "pooled_p95_ratio": f64|null, // every seed's
//!                                  // clients together, resumed / baseline
//!     "lost_resumed" | "lost_baseline": u64, "retreated": u64, "engaged": u64,
//!     "jain_min": f64|null,
//!     "incumbent_in_jumps" | "incumbent_in_jumps_baseline": [f64, f64]|null
//!   }
//! }
//! ```
//!
//! # Sweeps: `cr-sim sweep --json` ([`sweep`])
//!
//! One line per point of the sweep (the summary table goes to standard
//! error):
//!
//! ```text
//! {
//!   "scenario": {...},           // as `cr-sim run --json`'s
//!   "bdp_bytes": u64,
//!   "ideal_s": f64|null,         // ideal doubling slow start (no loss, no outage)
//!   "first": connection|null,    // as in `connections` above
//!   "resumed": connection|null,  // the second connection, presenting the token
//!   "without_token": connection|null, // the same seed's second connection, no token
//!   "errors": [str]
//! }
//! ```
//!
//! `resumed` and `without_token` are `null` unless the sweep was run with
//! `--resumed`. `cr-sim satellite --json` prints the same lines.
//!
//! # Users behind one prefix: `cr-sim cgnat --json` ([`cgnat`])
//!
//! ```text
//! {
//!   "users": u64, "downloads_per_user": u64, "window_s": f64, "rate_bps": u64,
//!   "rtt_s": f64, "size_bytes": u64, "cc": str, "seed": u64, "limit_s": f64,
//!   "arms": [{                   // baseline, one-set (/24), per-address (/32)
//!     "arm": str, "prefix_len": u64|null, "downloads": u64, "presented": u64,
//!     "engaged": u64, "retreated": u64,
//!     "refused": {reason: u64},  // superseded, already_used, revoked, ...
//!     "median_completion_s" | "mean_completion_s" | "median_repeat_completion_s" |
//!     "mean_repeat_completion_s" | "median_engaged_completion_s": f64|null,
//!     "lost_packets": u64, "sent_packets": u64, "max_concurrent": u64,
//!     "saved_vs_baseline_s": f64 // download time saved, summed
//!   }, ...]
//! }
//! ```

pub mod bottlenecks;
pub mod cgnat;
pub mod clock;
pub mod crowd;
pub mod crowd_seeds;
pub mod demo;
pub mod endpoint;
pub mod error;
pub mod first_connections;
pub mod link;
pub mod output;
pub mod packing;
pub mod parallel;
pub mod qlog_capture;
pub mod report;
pub mod results;
pub mod rng;
pub mod satellite;
pub mod scenario;
pub mod session;
pub mod suite;
pub mod sweep;
pub mod table;
pub mod units;
pub mod world;

pub use error::SimError;
pub use report::Report;
pub use scenario::Scenario;
pub use session::run_session;
