//! Trace generation shared by the integration tests.

pub mod model;
pub mod writer;

use model::Path;
use model::Transfer;

/// A geostationary satellite path: 600 ms RTT, 2 Mbit/s.
fn geo(queue_bytes: u64, handshake_extra_ms: u64) -> Path {
    Path {
        rtt_ms: 600,
        bytes_per_ms: 250,
        queue_bytes,
        handshake_extra_ms,
    }
}

/// A first connection: no saved state, plain Reno.
pub fn plain() -> Transfer {
    Transfer {
        title: "first connection (no saved state)",
        path: geo(150_000, 0),
        response_bytes: 400_000,
        resume: None,
        drops: &[],
    }
}

/// A resumed connection through every phase:
/// reconnaissance, unvalidated, validating, normal.
pub fn every_phase() -> Transfer {
    Transfer {
        title: "resumed connection (saved window 240 kB)",
        path: geo(150_000, 0),
        response_bytes: 400_000,
        resume: Some((240_000, 600.0)),
        drops: &[],
    }
}

/// A resumed connection whose saved window is too large for the path, and
/// which loses a packet right after the jump; a slow client handshake makes
/// the RTT sample, and so the paced jump, longer than the path's RTT, so the
/// loss is seen while still unvalidated: unvalidated, safe retreat, normal.
pub fn safe_retreat() -> Transfer {
    Transfer {
        title: "resumed connection (saved window 600 kB, path shrank)",
        path: geo(40_000, 100),
        response_bytes: 400_000,
        resume: Some((600_000, 600.0)),
        drops: &[0],
    }
}
