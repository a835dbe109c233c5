//! The bottleneck models that the simulator's link (`cr-sim`) and the
//! relay's link (`cr-relay`) share: how a router queues, drops and polices
//! datagrams, and how a link's rate and delay change over time.
//!
//! - [`Discipline`]: which queue a link runs: drop-tail, [`Codel`]
//!   (RFC 8289) or [`FqCodel`] (RFC 8290).
//! - [`Codel`]: CoDel's drop decision for the datagram leaving a queue's
//!   head.
//! - [`FqCodel`]: per-flow queues, each under its own CoDel, served in
//!   deficit round robin within one shared byte limit.
//! - [`TokenBucket`]: a policer ([`Policer`]: rate and burst) that passes
//!   what its tokens cover and drops the rest.
//! - [`Schedule`]: a link's rate and round-trip delay over time, parsed
//!   from a text file of `time rate delay` rows.
//!
//! Everything is sans-IO and deterministic: the caller passes the time, a
//! [`Time`] counted from an origin of its choosing, and moves the bytes. A
//! FIFO queue (drop-tail, CoDel) knows a datagram's departure when it
//! enters, since nothing offered later leaves before it; fq_codel only
//! knows when its scheduler picks the datagram, so a link running it asks
//! [`FqCodel::dequeue`] each time its serialiser falls idle.

mod codel;
mod fq_codel;
mod policer;
mod schedule;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use codel::{Codel, INTERVAL as CODEL_INTERVAL, TARGET as CODEL_TARGET};
pub use fq_codel::{Dequeued, FqCodel};
pub use policer::{Policer, TokenBucket};
pub use schedule::{Schedule, ScheduleError, ScheduleErrorKind, Step};

/// A point in time, counted from the origin the caller chose (the start of
/// a simulation, or the moment a relay started).
pub type Time = Duration;

/// The queue a bottleneck runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Discipline {
    /// One FIFO queue that drops what arrives when it is full.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "droptail"))]
    DropTail,
    /// One FIFO queue under CoDel (RFC 8289), which drops at the head once
    /// datagrams wait above the target for an interval; the byte limit
    /// still drops at the tail.
    #[cfg_attr(feature = "serde", serde(rename = "codel"))]
    Codel,
    /// A queue per flow, each under CoDel, served in deficit round robin
    /// (RFC 8290); when the shared byte limit is reached the fattest flow
    /// loses its head.
    #[cfg_attr(feature = "serde", serde(rename = "fq_codel"))]
    FqCodel,
}

impl Discipline {
    /// The name the command lines take.
    pub fn name(self) -> &'static str {
        match self {
            Discipline::DropTail => "droptail",
            Discipline::Codel => "codel",
            Discipline::FqCodel => "fq_codel",
        }
    }
}

impl FromStr for Discipline {
    type Err = String;

    /// `droptail`, `codel` or `fq_codel`.
    fn from_str(text: &str) -> Result<Discipline, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "droptail" | "drop-tail" => Ok(Discipline::DropTail),
            "codel" => Ok(Discipline::Codel),
            "fq_codel" | "fq-codel" => Ok(Discipline::FqCodel),
            _ => Err(format!(
                "`{text}`: unknown queue (use droptail, codel or fq_codel)"
            )),
        }
    }
}

/// A queue as the command lines' `--queue` takes it: a discipline, a limit,
/// or both (`fq_codel`, `2xBDP`, `codel:64KiB`); a discipline not given is
/// drop-tail, a limit not given the program's default. `L` is the limit's
/// type (the simulator's may be a multiple of the BDP).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueSpec<L> {
    /// The discipline.
    pub discipline: Discipline,
    /// The byte limit (fq_codel's shared by its flows), if given.
    pub limit: Option<L>,
}

impl<L: FromStr<Err = String>> FromStr for QueueSpec<L> {
    type Err = String;

    fn from_str(text: &str) -> Result<QueueSpec<L>, String> {
        if let Some((discipline, limit)) = text.split_once(':') {
            return Ok(QueueSpec {
                discipline: discipline.parse()?,
                limit: Some(limit.parse()?),
            });
        }
        if let Ok(discipline) = text.parse::<Discipline>() {
            return Ok(QueueSpec {
                discipline,
                limit: None,
            });
        }
        let limit = text.parse().map_err(|e: String| {
            format!("{e}; or a queue: droptail, codel, fq_codel, e.g. codel:2xBDP")
        })?;
        Ok(QueueSpec {
            discipline: Discipline::DropTail,
            limit: Some(limit),
        })
    }
}

impl fmt::Display for Discipline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disciplines_parse_by_name() {
        for d in [Discipline::DropTail, Discipline::Codel, Discipline::FqCodel] {
            assert_eq!(d.name().parse::<Discipline>(), Ok(d));
        }
        assert_eq!("FQ-CoDel".parse::<Discipline>(), Ok(Discipline::FqCodel));
        assert!("red".parse::<Discipline>().is_err());
    }

    #[test]
    fn a_queue_is_a_discipline_a_limit_or_both() {
        let spec = |text: &str| {
            text.parse::<QueueSpec<crate::units::ByteSize>>()
                .map(|q| (q.discipline, q.limit.map(|b| b.0)))
        };
        assert_eq!(spec("fq_codel"), Ok((Discipline::FqCodel, None)));
        assert_eq!(spec("codel:64KiB"), Ok((Discipline::Codel, Some(65_536))));
        assert_eq!(spec("1500"), Ok((Discipline::DropTail, Some(1500))));
        assert!(spec("red:1500").is_err());
        assert!(spec("red").is_err());
    }
}
