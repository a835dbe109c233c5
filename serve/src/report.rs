//! What the server tells about each connection when it ends: one log line
//! with the peer, whether Careful Resume engaged (and if not, why not), how
//! much was served and how long it took.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use cr_endpoint::careful_resume::Phase;
use cr_endpoint::ex_token::{NoResume, SavedParameters};
use cr_endpoint::EarlyData;

use crate::app::Protocol;

/// The story of one server-side connection.
#[derive(Clone, Debug)]
pub struct ConnectionReport {
    /// The client's address.
    pub peer: SocketAddr,
    /// quiche's trace id: the server's own connection ID (hex), which also
    /// names the qlog file.
    pub trace_id: String,
    /// The destination connection ID of the client's first Initial (hex):
    /// the client's original destination connection ID, by which a client
    /// matches its connections to the server's lines.
    pub client_dcid: String,
    /// The negotiated application protocol, if the handshake got that far.
    pub protocol: Option<Protocol>,
    /// Whether the handshake completed: a connection that never did (a
    /// forged or garbled Initial, a client that gave up) served nothing.
    pub established: bool,
    /// Whether the client's Initial carried a token.
    pub token_presented: bool,
    /// Whether that token validated the client's address.
    pub address_validated: bool,
    /// The saved set the connection resumed from, or why it did not.
    pub resume: Result<SavedParameters, NoResume>,
    /// The Careful Resume phases the connection went through, in order.
    pub phases: Vec<Phase>,
    /// The largest jump window seen, in bytes.
    pub jump_window: Option<usize>,
    /// Requests received.
    pub requests: u32,
    /// Response body bytes handed to quiche.
    pub body_bytes: u64,
    /// From the client's first packet to the moment every response was
    /// fully acknowledged, if that happened.
    pub completion: Option<Duration>,
    /// From the client's first packet to the connection's end.
    pub lifetime: Duration,
    /// Packets sent and declared lost.
    pub packets: (usize, usize),
    /// How the connection ended, when not cleanly.
    pub error: Option<String>,
    /// What became of the client's early data (0-RTT).
    pub early_data: EarlyData,
}

impl ConnectionReport {
    /// Whether Careful Resume jumped: the connection entered the
    /// Unvalidated phase with the saved capacity.
    pub fn engaged(&self) -> bool {
        self.phases.contains(&Phase::Unvalidated)
    }

    /// The Careful Resume phase the connection ended in.
    pub fn final_phase(&self) -> Option<Phase> {
        self.phases.last().copied()
    }

    /// The id of the saved set the connection resumed (or was to resume)
    /// from, in hex, `-` when none: the guard admits one connection per
    /// set, so two `cr=engaged` lines with the same id would be a set used
    /// twice (what `cr-load --soak` checks).
    pub fn set_id(&self) -> String {
        match &self.resume {
            Ok(saved) => format!("{:016x}", saved.set.id.0),
            Err(_) => "-".into(),
        }
    }

    /// Why Careful Resume did or did not engage, in words.
    pub fn resume_summary(&self) -> String {
        match &self.resume {
            Ok(saved) if self.engaged() => format!(
                "engaged (saved cwnd {} B, rtt {} ms, jump {} B)",
                saved.saved_cwnd,
                saved.saved_rtt.as_millis(),
                self.jump_window.unwrap_or(0)
            ),
            Ok(saved) => format!(
                "not engaged: saved cwnd {} B, rtt {} ms, but ended in phase {}",
                saved.saved_cwnd,
                saved.saved_rtt.as_millis(),
                self.final_phase().map_or("none", Phase::as_str)
            ),
            Err(why) => format!("off: {}", no_resume_reason(why, self.token_presented)),
        }
    }
}

/// Why a token did not resume, in words.
pub fn no_resume_reason(why: &NoResume, token_presented: bool) -> String {
    match why {
        NoResume::Absent if !token_presented => "no token".into(),
        why => why.to_string(),
    }
}

/// Seconds with millisecond precision.
pub fn seconds(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

impl fmt::Display for ConnectionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "peer={} alpn={} token={} cr={} requests={} bytes={} completion={} lifetime={} \
             sent={} lost={} id={} odcid={} set={}",
            self.peer,
            self.protocol.map_or("-", Protocol::name),
            match (self.token_presented, self.address_validated) {
                (false, _) => "none",
                (true, true) => "valid",
                (true, false) => "unvalidated",
            },
            self.resume_summary(),
            self.requests,
            self.body_bytes,
            self.completion.map_or("-".into(), seconds),
            seconds(self.lifetime),
            self.packets.0,
            self.packets.1,
            self.trace_id,
            self.client_dcid,
            self.set_id(),
        )?;
        if !matches!(self.early_data, EarlyData::NotSent | EarlyData::Disabled) {
            write!(f, " early-data={}", self.early_data.as_str())?;
        }
        if let Some(error) = &self.error {
            write!(f, " error={error}")?;
        }
        Ok(())
    }
}
