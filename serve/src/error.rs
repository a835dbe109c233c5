//! Why serving or fetching over a connection failed: quiche refused a call,
//! or the peer broke the application protocol.

use std::fmt;

/// A failure of an application running over a `quiche::Connection`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServeError {
    /// quiche refused an operation.
    Quic(quiche::Error),
    /// quiche's HTTP/3 layer refused an operation.
    Http3(quiche::h3::Error),
    /// The peer did something the application cannot go on from; the
    /// string says what.
    Peer(String),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Quic(e) => write!(f, "QUIC: {e}"),
            ServeError::Http3(e) => write!(f, "HTTP/3: {e}"),
            ServeError::Peer(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for ServeError {}

impl From<quiche::Error> for ServeError {
    fn from(e: quiche::Error) -> Self {
        ServeError::Quic(e)
    }
}

impl From<quiche::h3::Error> for ServeError {
    fn from(e: quiche::h3::Error) -> Self {
        ServeError::Http3(e)
    }
}

#[cfg(test)]
mod tests {
    use super::ServeError;

    /// The text goes into the CONNECTION_CLOSE reason and the connection's
    /// report: it names the layer that failed.
    #[test]
    fn each_error_names_its_layer() {
        assert_eq!(
            ServeError::from(quiche::Error::Done).to_string(),
            "QUIC: Done"
        );
        assert_eq!(
            ServeError::from(quiche::h3::Error::FrameUnexpected).to_string(),
            "HTTP/3: FrameUnexpected"
        );
        let peer = ServeError::Peer("the server reset the request (error 256)".into());
        assert_eq!(peer.to_string(), "the server reset the request (error 256)");
    }
}
