//! What Careful Resume did on one connection, read from its
//! [`ResumeSession`] and connection in the way quiche's
//! `Connection::stats()` reads transport figures.

use careful_resume::{Phase, Trigger};
use ex_token::{NoResume, SavedParameters};

use quiche::BufFactory;

use crate::ResumeSession;

/// One connection's Careful Resume story.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumeStats {
    /// Whether the client's Initial carried a token.
    pub token_presented: bool,
    /// Whether the token validated the client's address.
    pub address_validated: bool,
    /// The saved set the token carried, when it was valid (resumed or not).
    pub presented: Option<SavedParameters>,
    /// Why the connection did not resume, if it did not get to (an
    /// expired token, a set already used, ...). `None` when it resumed.
    pub not_resumed: Option<NoResume>,
    /// The phases entered, each with its trigger (empty without a saved
    /// set; see [`careful_resume::CarefulResume::history`]).
    pub phases: Vec<(Phase, Trigger)>,
    /// The window jumped to, in bytes, if the connection jumped.
    pub jump_window: Option<usize>,
    /// Whether the jump went largely unused (less than half of what it
    /// opened was sent while Unvalidated): the response was smaller than
    /// the jump, or the application did not write in time; see
    /// [`careful_resume::CarefulResume::jump_unused`].
    pub jump_unused: bool,
    /// The capacity, in bytes, of the last BDP token sent: what the next
    /// connection will resume from.
    pub saved_for_next: Option<u64>,
    /// BDP tokens sent, siblings included.
    pub bdp_tokens_sent: u32,
    /// What became of the client's early data (0-RTT).
    pub early_data: crate::EarlyData,
}

impl ResumeSession {
    /// The Careful Resume figures so far of `conn`, this session's
    /// connection.
    pub fn stats<F: BufFactory>(&self, conn: &quiche::Connection<F>) -> ResumeStats {
        let resume = conn.careful_resume();
        let phases = resume.map(|r| r.history().to_vec()).unwrap_or_default();
        let jump_window = resume.filter(|r| r.jumped()).map(|r| r.jump_window());
        ResumeStats {
            token_presented: self.token_presented,
            address_validated: self.address_validated,
            presented: self.presented,
            not_resumed: self.resume.err(),
            phases,
            jump_window,
            jump_unused: resume.is_some_and(|r| r.jump_unused()),
            saved_for_next: self.saved_for_next,
            bdp_tokens_sent: self.bdp_tokens_sent,
            early_data: self.early_data(),
        }
    }
}
