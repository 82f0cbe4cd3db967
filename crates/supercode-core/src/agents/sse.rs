//! The status stream's SSE parsing (`docs/runtime-api.md`): bytes in, `status` documents out,
//! within the API's line and data caps and [`MAX_BYTES_WITHOUT_DOCUMENT`], in linear time and a
//! slice of bytes per call, so a flooding runtime holds up nothing (issue 29). Reading the bytes
//! off the connection is the client's job.

use super::document::{self, Document, DocumentError, MAX_DOCUMENT_BYTES};

/// Longest stream line read (bytes, excluding its line break); a longer one fails the stream.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most stream bytes (line breaks included) read without completing a `status` document; more
/// fails the stream (issue 29). Four of the longest lines a stream may send: a document and
/// whatever comments or ignored events a runtime puts between two changes fit many times over,
/// while a runtime answering with nothing but blank lines or comments is cut off after a few
/// milliseconds of parsing. One that sends only spec-paced keep-alives (15 bytes every 15 s)
/// reaches it after three days idle and is reconnected at no visible cost: the reconnection
/// sends its current document first.
pub const MAX_BYTES_WITHOUT_DOCUMENT: usize = 4 * MAX_LINE_BYTES;

/// Why the stream is failed: what it sent breaks the API's limits, or its `status` event holds
/// an invalid document.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A stream line over [`MAX_LINE_BYTES`].
    #[error("the status stream sent a line over {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    /// More than [`MAX_BYTES_WITHOUT_DOCUMENT`] bytes without a `status` document.
    #[error(
        "the status stream sent over {MAX_BYTES_WITHOUT_DOCUMENT} bytes without a status document"
    )]
    WithoutDocument,
    /// An invalid document.
    #[error(transparent)]
    Invalid(#[from] DocumentError),
}

/// What [`SseParser::next_document`] got to.
pub(super) enum Parsed {
    /// A `status` document (boxed: it is large beside the other two).
    Document(Box<Document>),
    /// No whole line is left: read more.
    NeedMore,
    /// The turn's slice is used up: yield before parsing on.
    SliceUsed,
}

/// The SSE reader behind the client's status stream: bytes in, `status` documents out, with
/// the line and data caps of the API and [`MAX_BYTES_WITHOUT_DOCUMENT`]. Linear in what it
/// reads: a line is consumed by moving a cursor, and the consumed front of the buffer is dropped
/// once per [`SseParser::push`], which moves each byte at most once (issue 29: draining each
/// line off the front moved the rest of a 500 KiB frame once per blank line).
#[derive(Default)]
pub(super) struct SseParser {
    /// Bytes received; `buffer[start..]` is not yet split into lines.
    buffer: Vec<u8>,
    /// Where the unread part of `buffer` starts.
    start: usize,
    /// How far `buffer` is known to hold no line break after `start`.
    scanned: usize,
    /// Bytes of lines (line breaks included) consumed since the last `status` document.
    without_document: usize,
    /// The event being read.
    event: SseEvent,
}

/// The fields of the event being read.
#[derive(Default)]
struct SseEvent {
    /// The `event` field.
    name: Option<String>,
    /// The `data`, lines joined by `\n`.
    data: Vec<u8>,
    /// The data went over the cap (the rest of it is not kept).
    data_too_large: bool,
}

impl SseParser {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next document the buffered lines complete, if any, consuming at most about `slice`
    /// bytes of lines (whole lines, so possibly one line more) and taking them off `slice`.
    pub(super) fn next_document(&mut self, slice: &mut usize) -> Result<Parsed, StreamError> {
        loop {
            if *slice == 0 {
                return Ok(Parsed::SliceUsed);
            }
            let Some((line, consumed)) = self.next_line()? else {
                return Ok(Parsed::NeedMore);
            };
            *slice = slice.saturating_sub(consumed);
            self.without_document += consumed;
            if let Some(document) = self.event.on_line(&self.buffer[line])? {
                self.without_document = 0;
                return Ok(Parsed::Document(Box::new(document)));
            }
            if self.without_document > MAX_BYTES_WITHOUT_DOCUMENT {
                return Err(StreamError::WithoutDocument);
            }
        }
    }

    /// Where the next whole line is in the buffer (without its line break), if one is there,
    /// and how many bytes it took (with its line break); consumes it.
    fn next_line(&mut self) -> Result<Option<(std::ops::Range<usize>, usize)>, StreamError> {
        let from = self.scanned.max(self.start);
        match self.buffer[from..].iter().position(|&b| b == b'\n') {
            Some(at) => {
                let line_start = self.start;
                let newline = from + at;
                let mut end = newline;
                if end > line_start && self.buffer[end - 1] == b'\r' {
                    end -= 1;
                }
                self.start = newline + 1;
                self.scanned = self.start;
                if end - line_start > MAX_LINE_BYTES {
                    return Err(StreamError::LineTooLong);
                }
                Ok(Some((line_start..end, self.start - line_start)))
            }
            None => {
                self.scanned = self.buffer.len();
                // A `\r` may still be followed by its `\n`, hence the one byte of slack.
                if self.buffer.len() - self.start > MAX_LINE_BYTES + 1 {
                    return Err(StreamError::LineTooLong);
                }
                Ok(None)
            }
        }
    }
}

impl SseEvent {
    /// One SSE line: a field, a comment, or the blank line that ends an event.
    fn on_line(&mut self, line: &[u8]) -> Result<Option<Document>, StreamError> {
        if line.is_empty() {
            let event = std::mem::take(self);
            // Other event names are reserved; an event without data is no event.
            if event.name.as_deref() != Some("status")
                || (event.data.is_empty() && !event.data_too_large)
            {
                return Ok(None);
            }
            if event.data_too_large {
                return Err(DocumentError::TooLarge.into());
            }
            return Ok(Some(document::parse(&event.data)?));
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => self.name = Some(String::from_utf8_lossy(value).into_owned()),
            b"data" if !self.data_too_large => {
                let joined = self.data.len() + usize::from(!self.data.is_empty()) + value.len();
                if joined > MAX_DOCUMENT_BYTES {
                    self.data_too_large = true;
                    self.data.clear();
                } else {
                    if !self.data.is_empty() {
                        self.data.push(b'\n');
                    }
                    self.data.extend_from_slice(value);
                }
            }
            // `id`, `retry` and unknown fields are ignored.
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::client::READ_SLICE_BYTES;

    const DOC: &str = r#"{"version":1,"revision":3,"state":"idle","title":"Waiting","since":"2026-12-03T08:30:00Z","actions":[],"controller":{"kind":"none"},"observers":1}"#;

    fn fed(chunks: &[&[u8]]) -> (Vec<Document>, Option<StreamError>) {
        let mut parser = SseParser::default();
        let mut docs = Vec::new();
        for chunk in chunks {
            parser.push(chunk);
            let mut slice = READ_SLICE_BYTES;
            loop {
                match parser.next_document(&mut slice) {
                    Ok(Parsed::Document(doc)) => docs.push(*doc),
                    Ok(Parsed::SliceUsed) => slice = READ_SLICE_BYTES,
                    Ok(Parsed::NeedMore) => break,
                    Err(e) => return (docs, Some(e)),
                }
            }
        }
        (docs, None)
    }

    #[test]
    fn status_events_split_anywhere_are_read_and_comments_and_other_events_ignored() {
        let stream = format!(
            ": keep-alive\n\nevent: other\ndata: {DOC}\n\nevent: status\nid: 3\ndata: {DOC}\r\n\r\ndata: {DOC}\n\n"
        );
        let bytes = stream.as_bytes();
        for split in [1, 7, 50, bytes.len()] {
            let chunks: Vec<&[u8]> = bytes.chunks(split).collect();
            let (docs, error) = fed(&chunks);
            assert!(error.is_none(), "{error:?}");
            assert_eq!(
                docs.len(),
                1,
                "only the status event counts (split {split})"
            );
            assert_eq!(docs[0].revision, 3);
        }
    }

    #[test]
    fn a_line_over_64_kib_fails_the_stream_even_without_a_line_break() {
        let (_, error) = fed(&[&vec![b'a'; MAX_LINE_BYTES + 2]]);
        assert!(matches!(error, Some(StreamError::LineTooLong)));
        let mut line = vec![b':'; MAX_LINE_BYTES + 1];
        line.push(b'\n');
        assert!(matches!(fed(&[&line]).1, Some(StreamError::LineTooLong)));
        let mut fits = vec![b':'; MAX_LINE_BYTES];
        fits.extend_from_slice(b"\r\n");
        assert!(fed(&[&fits]).1.is_none());
    }

    #[test]
    fn event_data_over_32_kib_is_an_invalid_document() {
        let half = "x".repeat(MAX_DOCUMENT_BYTES / 2 + 1);
        let stream = format!("event: status\ndata: {half}\ndata: {half}\n\n");
        assert!(matches!(
            fed(&[stream.as_bytes()]).1,
            Some(StreamError::Invalid(DocumentError::TooLarge))
        ));
        let stream = "event: status\ndata: {\"version\": 2}\n\n";
        assert!(matches!(
            fed(&[stream.as_bytes()]).1,
            Some(StreamError::Invalid(DocumentError::Version))
        ));
    }

    // Regression (issue 29): blank lines are valid SSE that completes nothing; a runtime
    // answering its stream with them (after a good first document) fails the stream once they
    // pass the budget, while the same bytes with documents between them are fine.
    #[test]
    fn bytes_without_a_document_fail_the_stream_past_the_budget() {
        let event = format!("event: status\ndata: {DOC}\n\n");
        let blank = vec![b'\n'; MAX_BYTES_WITHOUT_DOCUMENT / 2];
        let mut paced = Vec::new();
        for _ in 0..4 {
            paced.extend_from_slice(event.as_bytes());
            paced.extend_from_slice(&blank);
        }
        let (docs, error) = fed(&[&paced]);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(docs.len(), 4);

        let mut flood = event.into_bytes();
        flood.extend_from_slice(&vec![b'\n'; 512 * 1024]);
        let (docs, error) = fed(&[&flood]);
        assert_eq!(docs.len(), 1, "the document before the flood is read");
        assert!(matches!(error, Some(StreamError::WithoutDocument)));
        let comments = ": keep-alive\n\n".repeat(MAX_BYTES_WITHOUT_DOCUMENT / 14 + 1);
        assert!(matches!(
            fed(&[comments.as_bytes()]).1,
            Some(StreamError::WithoutDocument)
        ));
    }

    // Proves the per-turn bound (issue 29): one call parses whole lines until the slice is used,
    // then says so instead of going on, however much is buffered.
    #[test]
    fn one_turn_parses_about_a_slice_then_asks_to_yield() {
        let mut parser = SseParser::default();
        parser.push(&vec![b'\n'; MAX_BYTES_WITHOUT_DOCUMENT / 2]);
        let mut turns = 0;
        loop {
            let mut slice = READ_SLICE_BYTES;
            let before = parser.start;
            match parser.next_document(&mut slice).unwrap() {
                Parsed::SliceUsed => {
                    assert_eq!(parser.start - before, READ_SLICE_BYTES);
                    turns += 1;
                }
                Parsed::NeedMore => break,
                Parsed::Document(_) => panic!("blank lines hold no document"),
            }
        }
        assert_eq!(turns, MAX_BYTES_WITHOUT_DOCUMENT / 2 / READ_SLICE_BYTES);
        // A long line is never split: the turn that reaches it reads all of it.
        let mut parser = SseParser::default();
        let mut long = vec![b':'; MAX_LINE_BYTES];
        long.extend_from_slice(b"\n\n");
        parser.push(&long);
        let mut slice = READ_SLICE_BYTES;
        assert!(matches!(
            parser.next_document(&mut slice).unwrap(),
            Parsed::SliceUsed
        ));
        assert_eq!(parser.start, MAX_LINE_BYTES + 1);
    }
}
