//! The one error type of the programs: every failure names what was being
//! done, so a command line user sees "reading key file x: ..." rather than
//! a bare OS error.

use std::fmt;
use std::io;
use std::path::PathBuf;

use cr_serve::ServeError;

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

/// Why a key ring file was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The path is a symbolic link. Key files are never read or written
    /// through a link, which whoever can write its directory could point
    /// elsewhere.
    Symlink,
    /// The path is not a regular file (a directory, a FIFO, a device).
    NotAFile,
    /// Group or others may access the file; the value is its permission
    /// bits. Key files must be `0600` or stricter (`chmod 600 <file>`).
    Permissions(u32),
    /// The contents are not a key ring file; the message says where and
    /// why, never quoting key material.
    Format(String),
    /// The operating system refused an operation; the string says which.
    Io(&'static str, io::Error),
}

impl fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Symlink => f.write_str("is a symbolic link; name the key file itself"),
            Self::NotAFile => f.write_str("is not a regular file"),
            Self::Permissions(mode) => write!(
                f,
                "has mode {mode:04o}: group and others must have no access (chmod 600)"
            ),
            Self::Format(why) => f.write_str(why),
            Self::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for KeyFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(_, e) => Some(e),
            _ => None,
        }
    }
}
