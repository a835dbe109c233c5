//! Phase changes turned into the time spans each phase lasted.

use serde::Serialize;

use crate::event::Phase;
use crate::event::StateData;
use crate::event::Trigger;
use crate::trace::PhaseChange;

/// A stretch of time spent in one Careful Resume phase.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct PhaseSpan {
    /// The phase.
    pub phase: Phase,
    /// When it was entered (ms); 0 for a phase the trace only names as the
    /// one left by its first change.
    pub start_ms: f64,
    /// When it was left (ms); `None` if the trace ends in it.
    pub end_ms: Option<f64>,
    /// Why it was entered, when known.
    pub trigger: Option<Trigger>,
    /// The Careful Resume variables on entry, when known.
    pub state: Option<StateData>,
}

/// The spans of the phases, in time order, from the phase changes of a
/// trace (sorted by time).
pub(crate) fn spans(changes: &[PhaseChange]) -> Vec<PhaseSpan> {
    let mut spans: Vec<PhaseSpan> = Vec::with_capacity(changes.len() + 1);
    let initial = changes
        .first()
        .and_then(|first| first.update.old.filter(|old| *old != first.update.new));
    if let Some(phase) = initial {
        spans.push(PhaseSpan {
            phase,
            start_ms: 0.0,
            end_ms: None,
            trigger: None,
            state: None,
        });
    }
    for change in changes {
        if let Some(previous) = spans.last_mut() {
            previous.end_ms = Some(change.time_ms);
        }
        spans.push(PhaseSpan {
            phase: change.update.new,
            start_ms: change.time_ms,
            end_ms: None,
            trigger: change.update.trigger,
            state: Some(change.update.state_data),
        });
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::CarefulResumePhaseUpdated;

    fn change(
        time_ms: f64,
        old: Option<Phase>,
        new: Phase,
        trigger: Option<Trigger>,
    ) -> PhaseChange {
        PhaseChange {
            time_ms,
            update: CarefulResumePhaseUpdated::new(old, new, trigger, StateData::default()),
        }
    }

    #[test]
    fn no_changes_no_spans() {
        assert_eq!(spans(&[]), vec![]);
    }

    #[test]
    fn consecutive_changes_close_the_previous_span() {
        let changes = [
            change(0.5, None, Phase::Reconnaissance, None),
            change(
                600.0,
                Some(Phase::Reconnaissance),
                Phase::Unvalidated,
                Some(Trigger::CongestionWindowLimited),
            ),
            change(
                1200.0,
                Some(Phase::Unvalidated),
                Phase::Normal,
                Some(Trigger::RateLimited),
            ),
        ];
        let got: Vec<_> = spans(&changes)
            .iter()
            .map(|s| (s.phase, s.start_ms, s.end_ms, s.trigger))
            .collect();
        assert_eq!(
            got,
            vec![
                (Phase::Reconnaissance, 0.5, Some(600.0), None),
                (
                    Phase::Unvalidated,
                    600.0,
                    Some(1200.0),
                    Some(Trigger::CongestionWindowLimited)
                ),
                (Phase::Normal, 1200.0, None, Some(Trigger::RateLimited)),
            ]
        );
    }

    #[test]
    fn phase_left_by_the_first_change_starts_at_zero() {
        let changes = [change(
            700.0,
            Some(Phase::Reconnaissance),
            Phase::Normal,
            Some(Trigger::PacketLoss),
        )];
        let got = spans(&changes);
        assert_eq!(
            got[0],
            PhaseSpan {
                phase: Phase::Reconnaissance,
                start_ms: 0.0,
                end_ms: Some(700.0),
                trigger: None,
                state: None,
            }
        );
        assert_eq!(
            (got.len(), got[1].phase, got[1].end_ms),
            (2, Phase::Normal, None)
        );
    }
}
