//! The one error type of the integration layer.

use std::fmt;

/// What can go wrong setting up a server or a connection.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// quiche refused the operation.
    Quiche(quiche::Error),
    /// A token key could not be made (the system's random source failed).
    Key(ex_token::KeyError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Quiche(e) => write!(f, "quiche: {e}"),
            Error::Key(e) => write!(f, "token key: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Quiche(e) => Some(e),
            Error::Key(e) => Some(e),
        }
    }
}

impl From<ex_token::KeyError> for Error {
    fn from(e: ex_token::KeyError) -> Self {
        Error::Key(e)
    }
}

impl From<quiche::Error> for Error {
    fn from(e: quiche::Error) -> Self {
        Error::Quiche(e)
    }
}
