//! Splitting a JSON text sequence (RFC 7464) into records, keeping track of
//! where each record starts so that errors can point at a line.
//!
//! qlog streamers write one record per line (`RS json LF`), but a record may
//! span several lines when pretty-printed, so a record runs from one line
//! starting with RS up to the next.

use std::io::BufRead;

use crate::error::ReadError;

/// ASCII record separator, which starts every JSON-SEQ record.
const RS: u8 = 0x1e;

/// One record of the sequence.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// 1-based position in the sequence.
    pub(crate) number: usize,
    /// 1-based input line on which the record starts.
    pub(crate) line: usize,
    /// The JSON text, without the separator.
    pub(crate) text: String,
    /// Characters of separator before the text on its first line.
    pub(crate) separator_len: usize,
}

impl Record {
    /// A content error about this record, at `line_offset` lines into it
    /// (0 for its first line).
    pub(crate) fn error(&self, line_offset: usize, reason: String) -> ReadError {
        ReadError::Malformed {
            line: self.line + line_offset,
            record: self.number,
            reason,
        }
    }
}

/// A record whose end has not been seen yet.
struct Pending {
    line: usize,
    text: String,
    separator_len: usize,
}

impl Pending {
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
}

/// Iterator over the records of a JSON-SEQ input.
pub(crate) struct Records<R> {
    reader: R,
    /// Lines consumed so far.
    line: usize,
    /// Records returned so far.
    returned: usize,
    /// The record being assembled.
    pending: Option<Pending>,
    /// Set once the input is exhausted or failed.
    done: bool,
}

impl<R: BufRead> Records<R> {
    pub(crate) fn new(reader: R) -> Self {
        Records {
            reader,
            line: 0,
            returned: 0,
            pending: None,
            done: false,
        }
    }

    fn emit(&mut self, pending: Pending) -> Record {
        self.returned += 1;
        Record {
            number: self.returned,
            line: pending.line,
            text: pending.text,
            separator_len: pending.separator_len,
        }
    }

    /// A content error on the current line, in record `record`.
    fn malformed(&mut self, record: usize, reason: &str) -> ReadError {
        self.done = true;
        ReadError::Malformed {
            line: self.line,
            record,
            reason: reason.to_string(),
        }
    }

    /// Reads one line as bytes; `None` at the end of the input.
    fn read_line(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        let mut bytes = Vec::new();
        let n = self.reader.read_until(b'\n', &mut bytes).map_err(|e| {
            self.done = true;
            ReadError::Io(e)
        })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        Ok(Some(bytes))
    }

    fn next_record(&mut self) -> Result<Option<Record>, ReadError> {
        while let Some(bytes) = self.read_line()? {
            let starts_record = bytes.first() == Some(&RS);
            let pending_text = self.pending.as_ref().is_some_and(|p| !p.is_blank());
            let record = self.returned + 1 + usize::from(starts_record && pending_text);
            let Ok(line) = String::from_utf8(bytes) else {
                return Err(self.malformed(record, "invalid UTF-8"));
            };
            if !starts_record {
                match &mut self.pending {
                    Some(pending) => pending.text.push_str(&line),
                    None if line.trim().is_empty() => {}
                    None => {
                        return Err(self.malformed(
                            record,
                            "expected a record separator (0x1E): not a JSON-SEQ qlog",
                        ))
                    }
                }
                continue;
            }
            let text = line.trim_start_matches(char::from(RS)).to_string();
            let started = self.pending.replace(Pending {
                line: self.line,
                separator_len: line.len() - text.len(),
                text,
            });
            if let Some(previous) = started.filter(|p| !p.is_blank()) {
                return Ok(Some(self.emit(previous)));
            }
        }
        Ok(self
            .pending
            .take()
            .filter(|p| !p.is_blank())
            .map(|p| self.emit(p)))
    }
}

impl<R: BufRead> Iterator for Records<R> {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_record().transpose();
        if !matches!(next, Some(Ok(_))) {
            self.done = true;
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(input: &str) -> Vec<Result<Record, String>> {
        Records::new(input.as_bytes())
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
    }

    fn record(number: usize, line: usize, text: &str) -> Result<Record, String> {
        Ok(Record {
            number,
            line,
            text: text.to_string(),
            separator_len: 1,
        })
    }

    #[test]
    fn one_record_per_line() {
        assert_eq!(
            split("\u{1e}{\"a\":1}\n\u{1e}{\"b\":2}\n"),
            vec![record(1, 1, "{\"a\":1}\n"), record(2, 2, "{\"b\":2}\n"),]
        );
    }

    #[test]
    fn pretty_printed_record_spans_lines() {
        assert_eq!(
            split("\u{1e}{\n\"a\": 1\n}\n\u{1e}{}"),
            vec![record(1, 1, "{\n\"a\": 1\n}\n"), record(2, 4, "{}"),]
        );
    }

    #[test]
    fn empty_records_and_blank_lines_are_skipped() {
        assert_eq!(
            split("\n\u{1e}\n\u{1e}\u{1e}{}\n\n"),
            vec![Ok(Record {
                number: 1,
                line: 3,
                text: "{}\n\n".to_string(),
                separator_len: 2,
            })]
        );
    }

    #[test]
    fn text_before_first_separator_is_an_error() {
        assert_eq!(
            split("\n{\"a\":1}\n"),
            vec![Err(
                "line 2 (record 1): expected a record separator (0x1E): not a \
             JSON-SEQ qlog"
                    .to_string()
            )]
        );
    }

    #[test]
    fn invalid_utf8_reports_its_line() {
        let input: &[u8] = b"\x1e{}\n\x1e{\"a\":\"\xff\"}\n";
        let errors: Vec<String> = Records::new(input)
            .filter_map(|r| r.err().map(|e| e.to_string()))
            .collect();
        assert_eq!(errors, vec!["line 2 (record 2): invalid UTF-8"]);
    }
}
