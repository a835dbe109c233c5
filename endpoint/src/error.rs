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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::Error;

    /// A server's log names the layer that failed and keeps the cause
    /// reachable, whichever way the error arrived.
    #[test]
    fn each_error_names_its_layer_and_keeps_its_cause() {
        let quiche_error = Error::from(quiche::Error::InvalidState);
        assert_eq!(quiche_error.to_string(), "quiche: InvalidState");
        let cause = quiche_error.source().expect("a cause");
        assert_eq!(
            cause.downcast_ref::<quiche::Error>(),
            Some(&quiche::Error::InvalidState)
        );

        let key_error = Error::from(ex_token::KeyError::Random);
        assert_eq!(key_error.to_string(), "token key: random source failed");
        let cause = key_error.source().expect("a cause");
        assert_eq!(
            cause.downcast_ref::<ex_token::KeyError>(),
            Some(&ex_token::KeyError::Random)
        );
    }
}
