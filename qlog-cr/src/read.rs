//! Reading a trace: the records of a JSON-SEQ qlog file, through the
//! builder, into a [`Trace`].

use std::fs::File;
use std::io::BufRead;
use std::io::BufReader;
use std::path::Path;

use crate::builder::TraceBuilder;
use crate::error::ReadError;
use crate::jsonseq::Records;
use crate::trace::Trace;

impl Trace {
    /// Reads a JSON-SEQ qlog trace (`.sqlog`).
    ///
    /// `name` is used when the trace has no title. Events the reader does not
    /// use are skipped; events it uses must have the expected shape.
    pub fn from_reader(reader: impl BufRead, name: &str) -> Result<Trace, ReadError> {
        let mut builder = TraceBuilder::default();
        let mut empty = true;
        for record in Records::new(reader) {
            builder.add(&record?)?;
            empty = false;
        }
        if empty {
            return Err(ReadError::Malformed {
                line: 1,
                record: 1,
                reason: "no qlog records: the input is empty".to_string(),
            });
        }
        Ok(builder.finish(name))
    }

    /// Reads a JSON-SEQ qlog trace file, named after the file when untitled.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Trace, ReadError> {
        let path = path.as_ref();
        let file = File::open(path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Trace::from_reader(BufReader::new(file), &name)
    }
}
