//! Building the qlog event from the careful-resume crate's phase changes, so
//! a stack that runs the state machine logs exactly what it decided.

use std::time::Duration;

use crate::event::CarefulResumePhaseUpdated;
use crate::event::Phase;
use crate::event::RestoredData;
use crate::event::StateData;
use crate::event::Trigger;

impl From<careful_resume::Phase> for Phase {
    fn from(phase: careful_resume::Phase) -> Self {
        match phase {
            careful_resume::Phase::Reconnaissance => Phase::Reconnaissance,
            careful_resume::Phase::Unvalidated => Phase::Unvalidated,
            careful_resume::Phase::Validating => Phase::Validating,
            careful_resume::Phase::SafeRetreat => Phase::SafeRetreat,
            careful_resume::Phase::Normal => Phase::Normal,
        }
    }
}

impl From<careful_resume::Trigger> for Trigger {
    fn from(trigger: careful_resume::Trigger) -> Self {
        use careful_resume::Trigger as T;

        match trigger {
            T::CongestionWindowLimited => Trigger::CongestionWindowLimited,
            T::RttNotValidated => Trigger::RttNotValidated,
            T::LastUnvalidatedPacketSent => Trigger::LastUnvalidatedPacketSent,
            T::FirstUnvalidatedPacketAcknowledged => Trigger::FirstUnvalidatedPacketAcknowledged,
            T::RttExceeded => Trigger::RttExceeded,
            T::RateLimited => Trigger::RateLimited,
            T::LastUnvalidatedPacketAcknowledged => Trigger::LastUnvalidatedPacketAcknowledged,
            T::PathChanged => Trigger::PathChanged,
            T::PacketLoss => Trigger::PacketLoss,
            T::EcnCe => Trigger::EcnCe,
            T::ExitRecovery => Trigger::ExitRecovery,
            T::SavedSetNotGranted => Trigger::SavedSetNotGranted,
            T::PersistentCongestion => Trigger::PersistentCongestion,
        }
    }
}

impl CarefulResumePhaseUpdated {
    /// The event for a phase change, given the window and ssthresh the
    /// congestion controller has after applying it.
    pub fn from_transition(
        transition: &careful_resume::Transition,
        congestion_window: usize,
        ssthresh: Option<usize>,
    ) -> Self {
        let state_data = StateData {
            pipesize: transition.pipesize as u64,
            first_unvalidated_packet: transition.first_unvalidated_pn.unwrap_or(0),
            last_unvalidated_packet: transition.last_unvalidated_pn.unwrap_or(0),
            congestion_window: Some(congestion_window as u64),
            ssthresh: ssthresh.map(|s| s as u64),
        };

        CarefulResumePhaseUpdated::new(
            Some(transition.from.into()),
            transition.to.into(),
            Some(transition.trigger.into()),
            state_data,
        )
        .with_restored_data(RestoredData {
            saved_congestion_window: transition.saved.cwnd as u64,
            saved_rtt: millis(transition.saved.rtt),
        })
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_retreat_becomes_the_qlog_event_with_its_numbers() {
        let transition = careful_resume::Transition {
            from: careful_resume::Phase::Unvalidated,
            to: careful_resume::Phase::SafeRetreat,
            trigger: careful_resume::Trigger::PacketLoss,
            cwnd: Some(37_200),
            ssthresh: None,
            pipesize: 75_600,
            first_unvalidated_pn: Some(12),
            last_unvalidated_pn: None,
            saved: careful_resume::SavedState {
                cwnd: 240_000,
                rtt: Duration::from_micros(600_500),
            },
            saved_set_consumed: true,
            at: Instant::now(),
        };

        let event = CarefulResumePhaseUpdated::from_transition(&transition, 37_200, None);

        assert_eq!(event.old, Some(Phase::Unvalidated));
        assert_eq!(event.new, Phase::SafeRetreat);
        assert_eq!(event.trigger, Some(Trigger::PacketLoss));
        assert_eq!(event.state_data.pipesize, 75_600);
        assert_eq!(event.state_data.first_unvalidated_packet, 12);
        assert_eq!(event.state_data.congestion_window, Some(37_200));
        let restored = event.restored_data.unwrap();
        assert_eq!(restored.saved_congestion_window, 240_000);
        assert_eq!(restored.saved_rtt, 600.5);
    }
}
