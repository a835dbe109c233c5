//! Careful Resume (RFC 9959) in qlog: the event, a trace reader, and plots.
//!
//! (crate docs are being written)

mod builder;
mod error;
mod event;
mod jsonseq;
mod phases;
mod plot;
mod summary;
mod trace;
mod wire;

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
pub use plot::plot;
pub use plot::render_svg;
pub use plot::PlotError;
pub use summary::Summary;
pub use trace::Loss;
pub use trace::PhaseChange;
pub use trace::Sample;
pub use trace::Series;
pub use trace::Timelines;
pub use trace::Trace;
