//! Capturing a connection's qlog in memory and reading it back with
//! qlog-cr, so that reports and plots come from the same trace a real
//! deployment would write.
//!
//! quiche writes Careful Resume phase changes only at qlog level Extra,
//! where it also logs every packet. A report needs the phase changes alone,
//! so a writer can keep just those records ([`Keep::CarefulResume`]):
//! storing and re-parsing every packet event cost a 10 MiB session about a
//! fifth of its CPU time. Files and plots keep everything
//! ([`Keep::Everything`]).

use std::io;
use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use qlog_cr::Trace;

/// Which records of a trace a [`QlogBuffer`] keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// Every record, as quiche wrote it.
    #[default]
    Everything,
    /// The header and the `quic:careful_resume_phase_updated` events: all a
    /// report reads.
    CarefulResume,
}

/// The end of a JSON-SEQ record: quiche's streamer ends each one with a
/// line feed, which cannot occur inside JSON text (strings escape it).
const RECORD_END: u8 = b'\n';

/// What an event record's name follows: it reads `<RS>{"time":..,"name":"`.
const NAME_KEY: &[u8] = b"\"name\":\"";

/// How much of a record is held before looking for its name: enough for
/// `<RS>{"time":<up to 20 digits>,"name":"` and the phase event's name, so
/// that one search nearly always decides (JSON arrives a token at a time).
const DECIDE_AFTER: usize = 80;

/// Whether the start of a record is enough to tell that it is (`Some(true)`)
/// or is not (`Some(false)`) a phase change event.
fn is_phase_event(start: &[u8]) -> Option<bool> {
    let at = start.windows(NAME_KEY.len()).position(|w| w == NAME_KEY)?;
    let name = &start[at + NAME_KEY.len()..];
    let wanted = qlog_cr::EVENT_NAME.as_bytes();
    let quote = name.get(wanted.len())?;
    Some(name.starts_with(wanted) && *quote == b'"')
}

/// What the writer does with the record being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    /// Keeping it (the header, a phase event, or everything is kept).
    Keep,
    /// Not yet known: its start is held until its name has been written.
    Undecided,
    /// Dropping it.
    Skip,
}

/// The writer quiche owns: it collects one record at a time and hands the
/// records it keeps to its [`QlogBuffer`] whole, so the shared buffer is
/// locked once per record rather than once per JSON token.
#[derive(Debug)]
pub struct QlogWriter {
    keep: Keep,
    sink: QlogBuffer,
    /// The record being written (as far as it is kept or undecided).
    record: Vec<u8>,
    state: Record,
    /// Whole records written so far (the first is the header).
    records: u64,
}

impl QlogWriter {
    /// The state of a record that starts now.
    fn start(&self) -> Record {
        if self.keep == Keep::Everything || self.records == 0 {
            Record::Keep
        } else {
            Record::Undecided
        }
    }

    /// Takes `bytes`, all of one record.
    fn take(&mut self, bytes: &[u8]) {
        match self.state {
            Record::Skip => {}
            Record::Keep => self.record.extend_from_slice(bytes),
            Record::Undecided => {
                self.record.extend_from_slice(bytes);
                if self.record.len() < DECIDE_AFTER {
                    return;
                }
                self.state = match is_phase_event(&self.record) {
                    Some(true) => Record::Keep,
                    Some(false) => Record::Skip,
                    None => Record::Undecided,
                };
            }
        }
    }

    /// Ends the record being written.
    fn end(&mut self) {
        let keep = match self.state {
            Record::Keep => true,
            Record::Undecided => is_phase_event(&self.record) == Some(true),
            Record::Skip => false,
        };
        if keep {
            self.record.push(RECORD_END);
            self.sink.append(&self.record);
        }
        self.record.clear();
        self.records += 1;
        self.state = self.start();
    }
}

impl Write for QlogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&b| b == RECORD_END) {
            self.take(&rest[..end]);
            self.end();
            rest = &rest[end + 1..];
        }
        self.take(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The records a connection's qlog writer kept, shared with the simulator,
/// which reads them back after the connection is done.
#[derive(Clone, Debug, Default)]
pub struct QlogBuffer(Arc<Mutex<Vec<u8>>>);

impl QlogBuffer {
    /// An empty buffer.
    pub fn new() -> QlogBuffer {
        QlogBuffer::default()
    }

    /// A writer for quiche that fills this buffer with what `keep` says.
    pub fn writer(&self, keep: Keep) -> QlogWriter {
        let mut writer = QlogWriter {
            keep,
            sink: self.clone(),
            record: Vec::new(),
            state: Record::Keep,
            records: 0,
        };
        writer.state = writer.start();
        writer
    }

    fn append(&self, record: &[u8]) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(record);
    }

    /// A copy of every record kept so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The kept records read back with qlog-cr, or `None` when nothing
    /// readable was written.
    pub fn trace(&self, name: &str) -> Option<Trace> {
        let bytes = self.bytes();
        Trace::from_reader(io::BufReader::new(bytes.as_slice()), name).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &[u8] = b"\x1e{\"file_schema\":\"urn:ietf:params:qlog:file:sequential\",\"serialization_format\":\"JSON-SEQ\",\"trace\":{\"vantage_point\":{\"type\":\"server\"}}}";
    const PACKET: &[u8] = b"\x1e{\"time\":1.0,\"name\":\"quic:packet_sent\",\"data\":{}}";
    const PHASE: &[u8] =
        b"\x1e{\"time\":2.0,\"name\":\"quic:careful_resume_phase_updated\",\"data\":{}}";
    const LONGER: &[u8] =
        b"\x1e{\"time\":3.0,\"name\":\"quic:careful_resume_phase_updated_v2\",\"data\":{}}";

    /// A buffer that got `records` the way quiche's streamer writes them:
    /// each in pieces, then its line feed on its own.
    fn filled(keep: Keep, records: &[&[u8]]) -> QlogBuffer {
        let buffer = QlogBuffer::new();
        let mut writer = buffer.writer(keep);
        for record in records {
            for piece in record.chunks(7) {
                writer.write_all(piece).expect("in memory");
            }
            writer.write_all(b"\n").expect("in memory");
        }
        buffer
    }

    fn written(keep: Keep, records: &[&[u8]]) -> Vec<u8> {
        filled(keep, records).bytes()
    }

    fn lines(records: &[&[u8]]) -> Vec<u8> {
        records.iter().flat_map(|r| [*r, b"\n"].concat()).collect()
    }

    #[test]
    fn everything_keeps_every_byte() {
        let all = [HEADER, PACKET, PHASE];
        assert_eq!(written(Keep::Everything, &all), lines(&all));
    }

    #[test]
    fn careful_resume_keeps_the_header_and_phase_events_only() {
        let all = [HEADER, PACKET, PHASE, LONGER, PACKET, PHASE];
        assert_eq!(
            written(Keep::CarefulResume, &all),
            lines(&[HEADER, PHASE, PHASE])
        );
    }

    #[test]
    fn records_written_at_once_are_split_at_their_ends() {
        let all = [HEADER, PACKET, PHASE, PACKET];
        let buffer = QlogBuffer::new();
        let mut writer = buffer.writer(Keep::CarefulResume);
        writer.write_all(&lines(&all)).expect("in memory");
        assert_eq!(buffer.bytes(), lines(&[HEADER, PHASE]));
    }

    #[test]
    fn a_filtered_trace_reads_back_with_its_phase_changes() {
        // A record as quiche-cr writes it.
        let phase = br#"{"time":104.075,"name":"quic:careful_resume_phase_updated","data":{"old":"reconnaissance","new":"unvalidated","state_data":{"pipesize":12732,"first_unvalidated_packet":0,"last_unvalidated_packet":0,"congestion_window":27000},"restored_data":{"saved_congestion_window":54000,"saved_rtt":100.435},"trigger":"congestion_window_limited"}}"#;
        let phase = [b"\x1e".as_slice(), phase].concat();
        let trace = filled(Keep::CarefulResume, &[HEADER, PACKET, &phase])
            .trace("server")
            .expect("readable");
        assert_eq!(trace.phase_changes.len(), 1);
        assert_eq!(trace.phase_changes[0].time_ms, 104.075);
        assert_eq!(
            trace.phase_changes[0].update.state_data.congestion_window,
            Some(27000)
        );
    }
}
