//! Virtual time: the simulator's own clock and its mapping to the
//! `Instant`s quiche works with and to a wall-clock time for tokens.
//!
//! Simulation time is a `Duration` since the start of the simulation, so all
//! arithmetic is exact to the nanosecond and results never depend on when the
//! simulation ran. quiche reads "now" from its thread-local virtual clock
//! (`quiche::clock::set`), which the simulator moves before every call.

use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;
use std::time::UNIX_EPOCH;

use crate::link::SimTime;

/// The wall-clock time at the start of every simulation (2026-01-01T00:00Z),
/// fixed so that token expiry does not depend on the day the simulation ran.
const WALL_CLOCK_START_UNIX_SECS: u64 = 1_767_225_600;

/// The mapping between simulation time and the instants quiche sees.
#[derive(Clone, Copy, Debug)]
pub struct VirtualClock {
    base: Instant,
}

impl VirtualClock {
    /// A clock whose time 0 is a fixed distance after the real present, far
    /// enough that an accidental read of the real clock would stand out.
    pub fn new() -> VirtualClock {
        VirtualClock {
            base: Instant::now() + Duration::from_secs(86_400),
        }
    }

    /// Moves quiche's clock on this thread to `t` and returns the moment.
    pub fn set(&self, t: SimTime) -> Now {
        let now = self.at(t);
        quiche::clock::set(now.instant);
        now
    }

    /// The moment `t` in every representation.
    pub fn at(&self, t: SimTime) -> Now {
        Now {
            sim: t,
            instant: self.base + t,
            wall: UNIX_EPOCH + Duration::from_secs(WALL_CLOCK_START_UNIX_SECS) + t,
        }
    }

    /// Simulation time of a quiche instant (0 for instants before the start).
    pub fn sim_time(&self, instant: Instant) -> SimTime {
        instant.saturating_duration_since(self.base)
    }

    /// Gives quiche its real clock back on this thread.
    pub fn release(&self) {
        quiche::clock::unset();
    }
}

impl Default for VirtualClock {
    fn default() -> Self {
        VirtualClock::new()
    }
}

/// One moment of virtual time, as the simulator, quiche and token code each
/// want it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// Time since the start of the simulation.
    pub sim: SimTime,
    /// The instant quiche's virtual clock shows.
    pub instant: Instant,
    /// A wall-clock time for token lifetimes, starting at 2026-01-01.
    pub wall: SystemTime,
}
