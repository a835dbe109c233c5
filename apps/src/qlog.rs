//! One qlog file per connection, at level Extra so the Careful Resume phase
//! changes (`quic:careful_resume_phase_updated`) are in it.

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::error::AppError;

/// Starts writing `conn`'s qlog to `<dir>/<role>-<trace id>.sqlog` (JSON
/// text sequences, readable by qvis and by `qlog-cr`). The file is
/// complete when the connection is dropped.
pub fn attach(conn: &mut quiche::Connection, dir: &Path, role: &str) -> Result<PathBuf, AppError> {
    fs::create_dir_all(dir)
        .map_err(|e| AppError::io(format!("creating qlog directory {}", dir.display()), e))?;
    let path = dir.join(format!("{role}-{}.sqlog", conn.trace_id()));
    let file = File::create(&path)
        .map_err(|e| AppError::io(format!("creating qlog file {}", path.display()), e))?;
    conn.set_qlog_with_level(
        Box::new(BufWriter::new(file)),
        format!("quiche-cr {role}"),
        format!("{role} {}", conn.trace_id()),
        quiche::QlogLevel::Extra,
    );
    Ok(path)
}
