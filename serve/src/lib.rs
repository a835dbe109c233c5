//! What a quiche-cr server and client do over a `quiche::Connection`, in one
//! place for the real-socket programs (`cr-apps`) and the simulator
//! (`cr-sim`), so that a figure the simulator measures describes the code
//! `cr-server` runs.
//!
//! - [`session`]: one server-side connection as both drive it: the token's
//!   outcome, the application serving it, the order of housekeeping,
//!   serving and sending, and its [`report`].
//! - [`app`]: `GET /<bytes>` over HTTP/3 and hq-interop, server and client.
//! - [`body`]: the bytes of every response, a pattern by offset that
//!   clients check.
//! - [`bottleneck`]: the queues (drop-tail, CoDel, fq_codel), the policer
//!   and the rate and delay schedules both links model.
//! - [`cc`]: the congestion controller a server runs, by name.
//! - [`units`]: byte sizes, rates, durations and probabilities as the
//!   command lines take them.
//!
//! Everything is sans-IO: callers pass the time and do the sending.
//!
//! Where to start: [`session::ServerSession`], which `cr-server` and
//! `cr-sim` both drive.

pub mod app;
pub mod body;
pub mod bottleneck;
pub mod cc;
pub mod error;
pub mod report;
pub mod session;
pub mod units;

pub use app::{Protocol, EARLY_DATA_CONTEXT};
pub use cc::{CongestionControl, SlowStart};
pub use error::ServeError;
pub use report::ConnectionReport;
pub use session::ServerSession;
