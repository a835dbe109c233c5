//! The one error type of the programs: every failure names what was being
//! done, so a command line user sees "reading key file x: ..." rather than
//! a bare OS error.

use std::fmt;
use std::io;
use std::path::PathBuf;

use cr_serve::ServeError;

use crate::keys::KeyFileError;

/// What can stop a server, client or relay.
#[derive(Debug)]
pub enum AppError {
    /// An I/O operation failed; the string says which.
    Io(String, io::Error),
    /// quiche refused an operation.
    Quic(quiche::Error),
    /// The application over a connection failed (see [`ServeError`]).
    Serve(ServeError),
    /// Setting up Careful Resume failed.
    Endpoint(cr_endpoint::Error),
    /// A setting or input is unusable; the string explains.
    Invalid(String),
    /// Something did not happen in time; the string says what.
    Timeout(String),
    /// The token key ring file at this path was refused.
    KeyFile(PathBuf, KeyFileError),
}

impl AppError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, error: io::Error) -> AppError {
        AppError::Io(context.into(), error)
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Io(context, e) => write!(f, "{context}: {e}"),
            AppError::Quic(e) => write!(f, "QUIC: {e}"),
            AppError::Serve(e) => e.fmt(f),
            AppError::Endpoint(e) => write!(f, "Careful Resume setup: {e}"),
            AppError::Invalid(why) => f.write_str(why),
            AppError::Timeout(what) => write!(f, "timed out: {what}"),
            AppError::KeyFile(path, e) => write!(f, "key file {}: {e}", path.display()),
        }
    }
}

impl std::error::Error for AppError {}

impl From<quiche::Error> for AppError {
    fn from(e: quiche::Error) -> Self {
        AppError::Quic(e)
    }
}

impl From<ServeError> for AppError {
    fn from(e: ServeError) -> Self {
        match e {
            ServeError::Quic(e) => AppError::Quic(e),
            e => AppError::Serve(e),
        }
    }
}

impl From<cr_endpoint::Error> for AppError {
    fn from(e: cr_endpoint::Error) -> Self {
        AppError::Endpoint(e)
    }
}
