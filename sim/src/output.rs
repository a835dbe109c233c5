//! Files a session leaves behind on request: qlog traces and SVG plots.

use std::fs;
use std::path::Path;

use qlog_cr::Trace;

use crate::error::SimError;
use crate::session::SessionOutcome;

/// Writes each connection's qlog traces into `dir` as
/// `connection-<n>-server.sqlog` (and `-client.sqlog` when kept).
pub fn write_qlogs(outcome: &SessionOutcome, dir: &Path) -> Result<(), SimError> {
    fs::create_dir_all(dir).map_err(|e| SimError::Output(format!("{}: {e}", dir.display())))?;
    for (index, record) in outcome.connections.iter().enumerate() {
        let sides = [
            ("server", &record.server_qlog),
            ("client", &record.client_qlog),
        ];
        for (side, qlog) in sides {
            let Some(qlog) = qlog else { continue };
            let path = dir.join(format!("connection-{}-{side}.sqlog", index + 1));
            fs::write(&path, qlog.bytes())
                .map_err(|e| SimError::Output(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}

/// The server traces of the session's connections, named for display.
pub fn server_traces(outcome: &SessionOutcome, label: &str) -> Vec<Trace> {
    outcome
        .connections
        .iter()
        .enumerate()
        .filter_map(|(index, record)| {
            let mut trace = record.server_qlog.as_ref()?.trace("server")?;
            let which = if index == 0 { "first" } else { "second" };
            // qlog-cr's caption adds the vantage point, "(server)".
            trace.name = format!("{label}{which} connection");
            Some(trace)
        })
        .collect()
}

/// Draws the server traces of the session, one panel per connection, into
/// the SVG file `path`.
pub fn plot(outcome: &SessionOutcome, label: &str, path: &Path) -> Result<(), SimError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| SimError::Output(format!("{}: {e}", dir.display())))?;
    }
    qlog_cr::plot(&server_traces(outcome, label), path)
        .map_err(|e| SimError::Output(format!("{}: {e}", path.display())))
}
