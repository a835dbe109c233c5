//! Careful Resume (RFC 9959) in qlog: the event, a trace reader, and plots.
//!
//! qlog viewers such as qvis do not know Careful Resume, so this crate
//! provides what is needed to see it:
//!
//! * [`PhaseUpdatedEvent`], the `quic:careful_resume_phase_updated` event of
//!   draft-ietf-tsvwg-careful-resume-qlog, which qlog 0.18's
//!   `QlogStreamer::add_event_with_instant` can write next to quiche's own
//!   events. Its importance is Extra: quiche must log at `QlogLevel::Extra`
//!   for it to be kept.
//! * [`Trace`], read from a quiche JSON-SEQ trace (`.sqlog`), with the
//!   congestion window, bytes in flight, RTTs, data sent and acknowledged,
//!   losses, flow-control limits and the Careful Resume phases over time.
//!   Plain quiche traces (without the event) read too. Malformed input is
//!   reported with its line, never by a panic.
//! * [`Trace::summary`] and [`plot`], behind the `qlog-cr` command-line tool.
//!
//! Where to start: [`Trace::from_path`] to read a trace, and
//! [`PhaseUpdatedEvent::new`] to write the event (both examples below).
//!
//! # Writing the event
//!
//! ```
//! use qlog_cr::{CarefulResumePhaseUpdated, Phase, PhaseUpdatedEvent, StateData, Trigger};
//!
//! let update = CarefulResumePhaseUpdated::new(
//!     Some(Phase::Reconnaissance),
//!     Phase::Unvalidated,
//!     Some(Trigger::CongestionWindowLimited),
//!     StateData { pipesize: 3600, first_unvalidated_packet: 12, ..StateData::default() },
//! );
//! let event = PhaseUpdatedEvent::new(update);
//! // streamer.add_event_with_instant(event, now)
//! # let json = serde_json::to_string(&event).unwrap();
//! # assert!(json.contains(r#""trigger":"congestion_window_limited""#));
//! ```
//!
//! # Reading, summarising and plotting
//!
//! ```
//! let trace = qlog_cr::Trace::from_path("tests/data/cr-every-phase.sqlog")?;
//! let summary = trace.summary();
//! assert_eq!(summary.phases.len(), 4);
//! let svg = qlog_cr::render_svg(&[trace])?; // or qlog_cr::plot(&traces, "out.svg")
//! # assert!(svg.starts_with("<svg"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Reading rules
//!
//! Event names of the current qlog drafts (`quic:packet_sent`,
//! `quic:recovery_metrics_updated`, ...) and of the older ones
//! (`transport:packet_sent`, `recovery:metrics_updated`, ...) are both
//! accepted; other events are skipped. quiche 0.30 logs no `packet_lost`
//! events but counts losses in its metrics events (`cf_lost_packets`); those
//! counts are used unless the trace has `packet_lost` events. Data
//! acknowledged is the size of the sent packets that ACK frames cover.
//! Completion is the later of the last new stream data received and the
//! acknowledgement of the last packet carrying stream data, so it means "the
//! response was delivered" in both a server's and a client's trace.
//!
//! # `qlog-cr summary --json`
//!
//! One JSON object per trace, one per line (JSON Lines). Times are in
//! milliseconds since the trace's start, sizes in bytes; `null` means "not
//! in the trace".
//!
//! | key | type | meaning |
//! |---|---|---|
//! | `name` | string | trace title, else file name |
//! | `vantage_point` | string or null | `"server"` or `"client"` |
//! | `duration_ms` | number | time of the last event |
//! | `completion_ms` | number or null | when the application data was delivered (see above) |
//! | `phases` | array of phase objects | Careful Resume phases in time order; `[]` without CR events |
//! | `restored` | object or null | `{"saved_congestion_window": bytes, "saved_rtt": ms}` |
//! | `max_congestion_window` | integer or null | largest congestion window |
//! | `max_bytes_in_flight` | integer or null | largest bytes in flight |
//! | `min_rtt_ms` | number or null | smallest minimum RTT |
//! | `lost_packets` | integer | packets declared lost |
//! | `loss_events` | integer | distinct times at which packets were declared lost |
//! | `bytes_sent` | integer | size of all packets sent |
//! | `bytes_acked` | integer | size of the sent packets acknowledged |
//! | `stream_bytes_received` | integer | new stream data received |
//!
//! A phase object:
//!
//! | key | type | meaning |
//! |---|---|---|
//! | `phase` | string | `reconnaissance`, `unvalidated`, `validating`, `safe_retreat` or `normal` |
//! | `start_ms` | number | when it was entered (0 for a phase only named as the one the first change left) |
//! | `end_ms` | number or null | when it was left; `null` if the trace ends in it |
//! | `trigger` | string or null | why it was entered, e.g. `congestion_window_limited`, `ECN_CE` |
//! | `state` | object or null | the event's `state_data` on entry: `pipesize`, `first_unvalidated_packet`, `last_unvalidated_packet`, and when logged `congestion_window`, `ssthresh` |

mod builder;
mod congestion_state;
mod error;
mod event;
#[cfg(feature = "careful-resume")]
mod from_careful_resume;
mod jsonseq;
mod phases;
#[cfg(feature = "plot")]
mod plot;
mod read;
mod summary;
mod trace;
mod wire;

pub use congestion_state::{
    CongestionStateEvent, CongestionStateUpdated, CONGESTION_STATE_EVENT_NAME,
};
pub use error::ReadError;
pub use event::is_phase_event_name;
pub use event::CarefulResumePhaseUpdated;
pub use event::Phase;
pub use event::PhaseUpdatedEvent;
pub use event::RestoredData;
pub use event::StateData;
pub use event::Trigger;
pub use event::EVENT_NAME;
pub use event::LEGACY_EVENT_NAME;
pub use phases::PhaseSpan;
#[cfg(feature = "plot")]
pub use plot::{plot, render_svg, PlotError};
pub use summary::Summary;
pub use trace::Loss;
pub use trace::PhaseChange;
pub use trace::Sample;
pub use trace::Series;
pub use trace::Timelines;
pub use trace::Trace;
