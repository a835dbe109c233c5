//! Capturing a connection's qlog in memory and reading it back with
//! qlog-cr, so that reports and plots come from the same trace a real
//! deployment would write.

use std::io;
use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use qlog_cr::Trace;

/// A shared, growable byte buffer that quiche's qlog streamer writes into.
///
/// quiche wants a `Box<dyn Write + Send + Sync>` it owns; the simulator keeps
/// a second handle to read the bytes back after the connection is done.
#[derive(Clone, Debug, Default)]
pub struct QlogBuffer(Arc<Mutex<Vec<u8>>>);

impl QlogBuffer {
    /// An empty buffer.
    pub fn new() -> QlogBuffer {
        QlogBuffer::default()
    }

    /// A copy of everything written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The trace read back with qlog-cr, or `None` when nothing readable was
    /// written.
    pub fn trace(&self, name: &str) -> Option<Trace> {
        let bytes = self.bytes();
        Trace::from_reader(io::BufReader::new(bytes.as_slice()), name).ok()
    }
}

impl Write for QlogBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
