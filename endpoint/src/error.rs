//! The one error type of the integration layer.

use std::fmt;

/// What can go wrong setting up a connection.
#[derive(Debug)]
pub enum Error {
    /// quiche refused the operation.
    Quiche(quiche::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Quiche(e) => write!(f, "quiche: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<quiche::Error> for Error {
    fn from(e: quiche::Error) -> Self {
        Error::Quiche(e)
    }
}
