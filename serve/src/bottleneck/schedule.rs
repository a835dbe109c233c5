//! A link whose rate and delay follow a schedule: a rain fade on a GEO
//! terminal, a LEO path handed from one satellite to the next, a cellular
//! trace.
//!
//! The text format, one step a line:
//!
//! ```text
//! # time   rate     delay
//! 0s       50mbit   600ms
//! 12s      20mbit   600ms   # the fade deepens: a more robust modulation
//! ```
//!
//! `time` is when the step begins, counted from the origin the link uses
//! (in cr-sim, each connection's start); `rate` is the bottleneck's rate
//! from then on (`50mbit`, `500kbit`); `delay` is the round-trip
//! propagation delay from then on (`600ms`), half of it each way. Fields
//! are separated by spaces or tabs; `#` starts a comment; blank lines are
//! ignored. The first step begins at 0, the steps are in increasing time
//! order, and the last step holds forever after.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use super::Time;
use crate::units::{parse_duration, Rate};

/// One row of a schedule: the rate and delay from `at` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// When the step begins.
    pub at: Time,
    /// The bottleneck's rate.
    pub rate: Rate,
    /// The round-trip propagation delay (half each way).
    pub rtt: Duration,
}

/// A link's rate and round-trip delay over time (at least one step, the
/// first at 0, in increasing time order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    steps: Vec<Step>,
}

/// Why a schedule's text was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleError {
    /// The line, counted from 1 (0: the text as a whole).
    pub line: usize,
    /// What is wrong with it.
    pub kind: ScheduleErrorKind,
}

/// What is wrong in a schedule's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleErrorKind {
    /// A row without exactly three fields.
    Fields(usize),
    /// A field that does not parse; the string says why.
    Field(String),
    /// A step that does not begin after the one before it.
    OutOfOrder,
    /// The first step does not begin at 0.
    FirstNotAtZero,
    /// No step at all.
    Empty,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        match &self.kind {
            ScheduleErrorKind::Fields(n) => {
                write!(f, "expected three fields (time rate delay), found {n}")
            }
            ScheduleErrorKind::Field(why) => f.write_str(why),
            ScheduleErrorKind::OutOfOrder => f.write_str("a step must begin after the one before"),
            ScheduleErrorKind::FirstNotAtZero => f.write_str("the first step must begin at 0"),
            ScheduleErrorKind::Empty => f.write_str("no step: a schedule needs at least one row"),
        }
    }
}

impl std::error::Error for ScheduleError {}

impl Schedule {
    /// A schedule of `steps`, checked as the text is.
    pub fn new(steps: Vec<Step>) -> Result<Schedule, ScheduleError> {
        let error = |kind| ScheduleError { line: 0, kind };
        match steps.first() {
            None => return Err(error(ScheduleErrorKind::Empty)),
            Some(first) if !first.at.is_zero() => {
                return Err(error(ScheduleErrorKind::FirstNotAtZero))
            }
            Some(_) => {}
        }
        if steps.windows(2).any(|pair| pair[1].at <= pair[0].at) {
            return Err(error(ScheduleErrorKind::OutOfOrder));
        }
        Ok(Schedule { steps })
    }

    /// Reads and parses the schedule file at `path` (the one thing here
    /// that does IO, for the command lines); the error names the file and
    /// the line.
    pub fn read(path: &Path) -> Result<Schedule, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading the schedule {}: {e}", path.display()))?;
        text.parse()
            .map_err(|e| format!("the schedule {}: {e}", path.display()))
    }

    /// The steps, in time order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The step in force at `t`.
    pub fn at(&self, t: Time) -> Step {
        let after = self.steps.partition_point(|step| step.at <= t);
        self.steps[after.saturating_sub(1)]
    }
}

impl FromStr for Schedule {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<Schedule, ScheduleError> {
        let mut steps: Vec<Step> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let error = |kind| ScheduleError {
                line: line_no,
                kind,
            };
            let content = line.split('#').next().unwrap_or_default();
            let fields: Vec<&str> = content.split_whitespace().collect();
            if fields.is_empty() {
                continue;
            }
            let [at, rate, rtt] = fields[..] else {
                return Err(error(ScheduleErrorKind::Fields(fields.len())));
            };
            let field = |why: String| error(ScheduleErrorKind::Field(why));
            let step = Step {
                at: parse_duration(at).map_err(field)?,
                rate: rate.parse().map_err(field)?,
                rtt: parse_duration(rtt).map_err(field)?,
            };
            match steps.last() {
                None if !step.at.is_zero() => return Err(error(ScheduleErrorKind::FirstNotAtZero)),
                Some(last) if step.at <= last.at => {
                    return Err(error(ScheduleErrorKind::OutOfOrder))
                }
                _ => steps.push(step),
            }
        }
        Schedule::new(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn each_step_holds_from_its_time_until_the_next() {
        let schedule: Schedule = "# time rate delay\n\n0s 50mbit 600ms\n12s\t20mbit 650ms # fade\n"
            .parse()
            .expect("schedule");
        let step = |t| {
            let s = schedule.at(t);
            (s.rate.bps(), s.rtt)
        };
        assert_eq!(step(ms(0)), (50_000_000, ms(600)));
        assert_eq!(step(ms(11_999)), (50_000_000, ms(600)));
        assert_eq!(step(ms(12_000)), (20_000_000, ms(650)));
        assert_eq!(step(ms(1_000_000)), (20_000_000, ms(650)));
    }

    #[test]
    fn bad_rows_are_refused_with_their_line() {
        let line_and_kind = |text: &str| {
            let e = text.parse::<Schedule>().expect_err("refused");
            (e.line, e.kind)
        };
        assert_eq!(
            line_and_kind("0s 50mbit 600ms\n1s 20mbit"),
            (2, ScheduleErrorKind::Fields(2))
        );
        assert_eq!(
            line_and_kind("1s 50mbit 600ms"),
            (1, ScheduleErrorKind::FirstNotAtZero)
        );
        assert_eq!(
            line_and_kind("0s 50mbit 600ms\n# c\n2s 1mbit 1s\n2s 1mbit 1s"),
            (4, ScheduleErrorKind::OutOfOrder)
        );
        assert!(matches!(
            line_and_kind("0s fast 600ms"),
            (1, ScheduleErrorKind::Field(_))
        ));
        assert_eq!(line_and_kind("# nothing\n"), (0, ScheduleErrorKind::Empty));
        let e = "0s 1mbit 1s\nx 1mbit 1s"
            .parse::<Schedule>()
            .expect_err("refused");
        assert!(e.to_string().starts_with("line 2: "), "{e}");
    }
}
