//! Why a simulation could not finish.

use std::fmt;

use cr_serve::ServeError;

/// A simulation failed.
#[derive(Debug)]
pub enum SimError {
    /// quiche refused a configuration or a connection call.
    Quiche(quiche::Error),
    /// The application over a connection failed: the endpoints disagree,
    /// which is a bug worth seeing.
    App(ServeError),
    /// Nothing left to happen before the transfer finished.
    Stalled(String),
    /// The transfer did not finish within the virtual-time limit.
    TimedOut(String),
    /// The scenario's parameters do not make sense.
    Scenario(String),
    /// Writing an output file (qlog, plot) failed.
    Output(String),
    /// Setting up an endpoint's token keys failed.
    Setup(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Quiche(e) => write!(f, "quiche: {e}"),
            SimError::App(e) => write!(f, "application: {e}"),
            SimError::Stalled(what) => write!(f, "the simulation stalled: {what}"),
            SimError::TimedOut(what) => write!(f, "virtual time limit reached: {what}"),
            SimError::Scenario(what) => write!(f, "bad scenario: {what}"),
            SimError::Output(what) => write!(f, "cannot write output: {what}"),
            SimError::Setup(what) => write!(f, "cannot set up an endpoint: {what}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<quiche::Error> for SimError {
    fn from(e: quiche::Error) -> Self {
        SimError::Quiche(e)
    }
}

impl From<ServeError> for SimError {
    fn from(e: ServeError) -> Self {
        SimError::App(e)
    }
}

impl From<cr_endpoint::Error> for SimError {
    fn from(e: cr_endpoint::Error) -> Self {
        match e {
            cr_endpoint::Error::Quiche(e) => SimError::Quiche(e),
            other => SimError::Setup(other.to_string()),
        }
    }
}
