//! Errors from reading a trace.

use std::fmt;
use std::io;

/// A trace could not be read.
///
/// Errors about the content carry the 1-based line of the input where the
/// problem is, and the 1-based number of the JSON-SEQ record around it, so
/// that a user can open the file at the right place.
#[derive(Debug)]
pub enum ReadError {
    /// The input could not be read at all.
    Io(io::Error),
    /// The content is not a valid qlog JSON-SEQ trace.
    Malformed {
        /// 1-based line of the input.
        line: usize,
        /// 1-based record number (the header is record 1).
        record: usize,
        /// What is wrong.
        reason: String,
    },
}

impl ReadError {
    /// The 1-based input line of a content error.
    pub fn line(&self) -> Option<usize> {
        match self {
            ReadError::Io(_) => None,
            ReadError::Malformed { line, .. } => Some(*line),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read trace: {e}"),
            ReadError::Malformed {
                line,
                record,
                reason,
            } => write!(f, "line {line} (record {record}): {reason}"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            ReadError::Malformed { .. } => None,
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}
