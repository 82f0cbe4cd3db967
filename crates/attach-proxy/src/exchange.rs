//! The runtime side of a forwarded request: one HTTP/1.1 exchange at a time on a keep-alive
//! connection to the runtime, written and read by the browser connection's own task.
//!
//! The browser side is hyper's server, whose strict parsing faces the untrusted client. By the
//! time a request gets here it is parsed, checked and rewritten, so its head is written straight
//! into a buffer. The runtime's response head is parsed with `httparse` (the parser hyper itself
//! uses) into the response hyper's server sends on, and its body is read by the framing the
//! runtime gave it (RFC 9112 section 6). That takes hyper's client state machine, its dispatch
//! channel and their wake-ups off every proxied request (docs/BENCHMARKS.md, run 8).
//!
//! What a runtime sends is untrusted too: a malformed or oversized head, conflicting lengths or
//! a bad chunk end the exchange (a 502 before the head, a cut-off body after it) and the
//! connection with it. Nothing that did not parse is passed on, and a connection is only used
//! again when its last response ended exactly where its framing said.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Write};
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Response, StatusCode, Uri, Version};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::body::{BodyError, ProxyBody};
use crate::forward::UpstreamLink;

/// Most header fields a runtime response may carry: hyper's own default for its client.
const MAX_HEADERS: usize = 100;

/// Largest response head (status line and fields) read from a runtime: Chromium's own limit on
/// the response headers it accepts, so nothing a browser would take is refused here.
const MAX_HEAD_BYTES: usize = 256 * 1024;

/// Longest chunk-size line (the size and any extensions) read before giving up on the body.
const MAX_CHUNK_LINE_BYTES: usize = 4 * 1024;

/// Most bytes of trailer fields read past (they are dropped: hop-by-hop for a proxy that does
/// not pass `TE: trailers` on).
const MAX_TRAILER_BYTES: usize = 64 * 1024;

/// Size of the first read of a response. A small response fits; a read that fills the buffer
/// doubles the next one, up to [`MAX_READ_BYTES`], so a large body moves in large reads.
const FIRST_READ_BYTES: usize = 8 * 1024;

/// Largest single read from a runtime.
const MAX_READ_BYTES: usize = 256 * 1024;

/// Why an exchange with the runtime failed. Never shown to the browser or logged with details:
/// the browser gets the proxy's own 502 page or a cut-off body.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExchangeError {
    /// Reading or writing the runtime connection failed.
    #[error("the runtime connection failed")]
    Io(#[from] io::Error),
    /// The runtime closed the connection before its response ended.
    #[error("the runtime closed the connection before its response ended")]
    Closed,
    /// The runtime's response broke HTTP/1.1's rules.
    #[error("the runtime's response is malformed: {0}")]
    Malformed(&'static str),
    /// The browser's request body failed while it was being passed on.
    #[error("the browser's request body ended early")]
    Upload,
}

/// Why [`RuntimeConnection::exchange`] gave no response.
pub(crate) enum Failure {
    /// The connection was closed by the runtime before any byte of a response, and the request
    /// can be sent again as it was (a safe method, no body): it is handed back for that.
    Unanswered(Outgoing),
    /// Anything else: the request is lost.
    Failed,
}

/// How a request body is framed on its way to the runtime.
#[derive(Clone, Copy)]
enum Framing {
    None,
    Length(u64),
    Chunked,
}

/// A request ready to be written to the runtime: its head already serialized.
pub(crate) struct Outgoing {
    head: Vec<u8>,
    upload: Option<Upload>,
    head_request: bool,
    /// A safe method without a body: sending it again cannot repeat anything.
    repeatable: bool,
}

/// A request head being written for the runtime: the request line, then each field the caller
/// hands it, then the proxy's own framing. `Content-Length` (and `Transfer-Encoding`, which
/// never gets this far: it is hop-by-hop) are not copied: the body is framed by what hyper's
/// server read of it.
pub(crate) struct RequestHead {
    head: Vec<u8>,
    had_length: bool,
    head_request: bool,
    /// A method that sending again cannot repeat anything of (RFC 9110 section 9.2.2 lists
    /// these as idempotent and safe).
    safe_method: bool,
}

impl RequestHead {
    /// Starts a head with the request line for `method` and the origin-form of `uri`; `fields`
    /// is how many header fields are expected, to size the buffer once.
    pub(crate) fn new(method: &Method, uri: &Uri, fields: usize) -> Self {
        let target = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut head = Vec::with_capacity(256 + target.len() + fields * 64);
        head.extend_from_slice(method.as_str().as_bytes());
        head.push(b' ');
        head.extend_from_slice(target.as_bytes());
        head.extend_from_slice(b" HTTP/1.1\r\n");
        Self {
            head,
            had_length: false,
            head_request: method == Method::HEAD,
            safe_method: matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS),
        }
    }

    /// Adds one header field (framing fields aside, see [`RequestHead`]).
    pub(crate) fn field(&mut self, name: &HeaderName, value: &HeaderValue) {
        if name == header::CONTENT_LENGTH {
            self.had_length = true;
            return;
        }
        if name == header::TRANSFER_ENCODING {
            return;
        }
        self.head.extend_from_slice(name.as_str().as_bytes());
        self.head.extend_from_slice(b": ");
        self.head.extend_from_slice(value.as_bytes());
        self.head.extend_from_slice(b"\r\n");
    }

    /// Ends the head with the framing `body` needs, ready to send.
    pub(crate) fn finish(mut self, body: Incoming) -> Outgoing {
        let framing = if body.is_end_stream() {
            if self.had_length {
                Framing::Length(0)
            } else {
                Framing::None
            }
        } else {
            match body.size_hint().exact() {
                Some(length) => Framing::Length(length),
                None => Framing::Chunked,
            }
        };
        match framing {
            Framing::None => {}
            Framing::Length(length) => {
                let _ = write!(self.head, "content-length: {length}\r\n");
            }
            Framing::Chunked => self
                .head
                .extend_from_slice(b"transfer-encoding: chunked\r\n"),
        }
        self.head.extend_from_slice(b"\r\n");
        let upload = match framing {
            Framing::None | Framing::Length(0) => None,
            Framing::Length(_) => Some(Upload::new(body, false)),
            Framing::Chunked => Some(Upload::new(body, true)),
        };
        Outgoing {
            repeatable: upload.is_none() && self.safe_method,
            head: self.head,
            upload,
            head_request: self.head_request,
        }
    }
}

/// One keep-alive HTTP/1.1 connection to the runtime, whose runtime end the kernel said is the
/// user's own.
pub(crate) struct RuntimeConnection {
    stream: TcpStream,
    /// Bytes read from the runtime and not handed on yet.
    read: BytesMut,
    /// How much the next read asks for.
    read_size: usize,
    /// Scratch space for parsing response heads, kept so a head costs no allocation for it.
    spans: Vec<FieldSpan>,
}

impl RuntimeConnection {
    pub(crate) fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            read: BytesMut::new(),
            read_size: FIRST_READ_BYTES,
            spans: Vec::new(),
        }
    }

    /// False when the runtime closed this idle connection or sent something nobody asked for.
    /// Costs no system call when nothing happened on the socket since the last read.
    pub(crate) fn is_open_and_idle(&mut self) -> bool {
        if !self.read.is_empty() {
            return false;
        }
        let mut probe = [0u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Sends `outgoing` and reads the response head. The body streams afterwards, and the
    /// connection goes back to `link` once a reusable response has been read to its end.
    pub(crate) async fn exchange(
        mut self,
        mut outgoing: Outgoing,
        link: Arc<UpstreamLink>,
    ) -> Result<Response<ProxyBody>, Failure> {
        if self.stream.write_all(&outgoing.head).await.is_err() {
            return Err(unanswered(outgoing));
        }
        let mut upload = outgoing.upload.take();
        // The upload (if any) is written while the response head is awaited: a runtime may
        // answer before it has read the whole body, and neither side may wait on the other.
        let mut upload_broke = false;
        let head = std::future::poll_fn(|cx| {
            match Upload::step(&mut upload, cx, &mut self.stream) {
                Some(ExchangeError::Upload) => return Poll::Ready(Err(ExchangeError::Upload)),
                // The runtime stopped reading (it may have answered already).
                Some(_) => upload_broke = true,
                None => {}
            }
            self.poll_head(cx, outgoing.head_request)
        })
        .await;
        let head = match head {
            Ok(head) => head,
            Err(ExchangeError::Closed) if self.read.is_empty() && !upload_broke => {
                return Err(unanswered(outgoing));
            }
            Err(_) => return Err(Failure::Failed),
        };
        let reusable = head.reusable && !upload_broke;
        let mut body = RuntimeBody {
            connection: Some(self),
            link,
            upload,
            state: head.body,
            reusable,
        };
        let body = if matches!(body.state, BodyState::Done) {
            body.finish();
            ProxyBody::Empty
        } else {
            ProxyBody::Runtime(body)
        };
        let mut response = Response::new(body);
        *response.status_mut() = head.status;
        *response.headers_mut() = head.headers;
        Ok(response)
    }

    /// Reads until a final response head is complete; informational (1xx) responses before it
    /// are skipped.
    fn poll_head(
        &mut self,
        cx: &mut Context<'_>,
        head_request: bool,
    ) -> Poll<Result<ResponseHead, ExchangeError>> {
        loop {
            if !self.read.is_empty() {
                if let Some(head) = parse_head(&mut self.read, &mut self.spans, head_request)? {
                    return Poll::Ready(Ok(head));
                }
                if self.read.len() >= MAX_HEAD_BYTES {
                    return Poll::Ready(Err(ExchangeError::Malformed("response head too large")));
                }
            }
            if ready!(self.poll_read(cx))? == 0 {
                return Poll::Ready(Err(ExchangeError::Closed));
            }
        }
    }

    /// One read into `self.read`: the number of bytes read, 0 at the end of the stream.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        self.read.reserve(self.read_size);
        let asked = self.read.capacity() - self.read.len();
        let read = ready!(tokio_util::io::poll_read_buf(
            Pin::new(&mut self.stream),
            cx,
            &mut self.read
        ))?;
        if read == asked && self.read_size < MAX_READ_BYTES {
            self.read_size *= 2;
        }
        Poll::Ready(Ok(read))
    }
}

/// A request the runtime closed the connection on before answering: handed back if it can be
/// sent again as it was.
fn unanswered(outgoing: Outgoing) -> Failure {
    if outgoing.repeatable {
        Failure::Unanswered(outgoing)
    } else {
        Failure::Failed
    }
}

/// A request body on its way to the runtime, frame by frame as the browser sends it.
struct Upload {
    body: Incoming,
    chunked: bool,
    /// Framing and data waiting to be written, in order.
    pending: VecDeque<Bytes>,
    /// The browser's body has ended (and, chunked, the last chunk is queued).
    ended: bool,
}

impl Upload {
    fn new(body: Incoming, chunked: bool) -> Self {
        Self {
            body,
            chunked,
            pending: VecDeque::new(),
            ended: false,
        }
    }

    /// Writes what it can of `upload`, if any, and drops it once it has ended: with `None`
    /// when it was all written (or is still going), with the error when it failed.
    fn step(
        upload: &mut Option<Upload>,
        cx: &mut Context<'_>,
        stream: &mut TcpStream,
    ) -> Option<ExchangeError> {
        let Poll::Ready(written) = upload.as_mut()?.poll_write(cx, stream) else {
            return None;
        };
        *upload = None;
        written.err()
    }

    /// Ready once the whole body is written. [`ExchangeError::Upload`] when the browser's body
    /// failed; any other error is the runtime's side.
    fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        stream: &mut TcpStream,
    ) -> Poll<Result<(), ExchangeError>> {
        loop {
            while !self.pending.is_empty() {
                let mut slices = [IoSlice::new(&[]); 3];
                let count = self.pending.len().min(slices.len());
                for (slice, bytes) in slices.iter_mut().zip(&self.pending) {
                    *slice = IoSlice::new(bytes);
                }
                let mut written =
                    ready!(Pin::new(&mut *stream).poll_write_vectored(cx, &slices[..count]))?;
                if written == 0 {
                    return Poll::Ready(Err(io::Error::from(io::ErrorKind::WriteZero).into()));
                }
                while written > 0 {
                    let front = self
                        .pending
                        .front_mut()
                        .expect("written bytes were pending");
                    let taken = written.min(front.len());
                    front.advance(taken);
                    written -= taken;
                    if front.is_empty() {
                        self.pending.pop_front();
                    }
                }
            }
            if self.ended {
                return Poll::Ready(Ok(()));
            }
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    // Trailers are dropped: hop-by-hop for a proxy that asked for none.
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            if self.chunked {
                                self.pending
                                    .push_back(Bytes::from(format!("{:x}\r\n", data.len())));
                                self.pending.push_back(data);
                                self.pending.push_back(Bytes::from_static(b"\r\n"));
                            } else {
                                self.pending.push_back(data);
                            }
                        }
                    }
                }
                Some(Err(_)) => return Poll::Ready(Err(ExchangeError::Upload)),
                None => {
                    self.ended = true;
                    if self.chunked {
                        self.pending.push_back(Bytes::from_static(b"0\r\n\r\n"));
                    }
                }
            }
        }
    }
}

/// A parsed final response head.
struct ResponseHead {
    status: StatusCode,
    headers: HeaderMap,
    body: BodyState,
    /// The connection may carry another request once this response's body has ended.
    reusable: bool,
}

/// Parses a complete final response head off the front of `read`, or `None` if it is not all
/// there yet. Informational responses are consumed and skipped.
/// `spans` is scratch space kept by the caller from one response to the next.
fn parse_head(
    read: &mut BytesMut,
    spans: &mut Vec<FieldSpan>,
    head_request: bool,
) -> Result<Option<ResponseHead>, ExchangeError> {
    loop {
        // Left uninitialised, as hyper does: httparse writes the fields it finds, and an
        // initialised array would be 3 KiB written on every parse.
        let mut fields = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut response,
            read,
            &mut fields,
        );
        let length = match parsed {
            Ok(httparse::Status::Complete(length)) if length > MAX_HEAD_BYTES => {
                return Err(ExchangeError::Malformed("response head too large"))
            }
            Ok(httparse::Status::Complete(length)) => length,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ExchangeError::Malformed("too many header fields"))
            }
            Err(_) => return Err(ExchangeError::Malformed("unparsable response head")),
        };
        let code = response.code.unwrap_or_default();
        let status = StatusCode::from_u16(code)
            .map_err(|_| ExchangeError::Malformed("status code out of range"))?;
        if status.is_informational() {
            if status == StatusCode::SWITCHING_PROTOCOLS {
                return Err(ExchangeError::Malformed("switching protocols unasked"));
            }
            read.advance(length);
            continue;
        }
        let version = if response.version == Some(1) {
            Version::HTTP_11
        } else {
            Version::HTTP_10
        };
        // Field positions in `read`, so that names and values can share the head's bytes once
        // it is split off.
        let base = read.as_ptr() as usize;
        spans.clear();
        spans.extend(response.headers.iter().map(|field| {
            let name = field.name.as_ptr() as usize - base;
            let value = field.value.as_ptr() as usize - base;
            FieldSpan {
                name: (name, name + field.name.len()),
                value: (value, value + field.value.len()),
            }
        }));
        let head = read.split_to(length).freeze();
        let mut headers = HeaderMap::with_capacity(spans.len());
        let mut framing = FramingFields::default();
        for span in spans.iter() {
            let name = HeaderName::from_bytes(&head[span.name.0..span.name.1])
                .map_err(|_| ExchangeError::Malformed("invalid header name"))?;
            framing.note(&name);
            let value = HeaderValue::from_maybe_shared(head.slice(span.value.0..span.value.1))
                .map_err(|_| ExchangeError::Malformed("invalid header value"))?;
            headers.append(name, value);
        }
        return response_framing(status, version, headers, framing, head_request).map(Some);
    }
}

/// Where one header field's name and value lie in a response head: (start, end) offsets.
struct FieldSpan {
    name: (usize, usize),
    value: (usize, usize),
}

/// Which of the fields that decide a response's framing it has, noted while its head is read,
/// so a response without them (most of them) costs no lookups for them.
#[derive(Default)]
struct FramingFields {
    connection: bool,
    transfer_encoding: bool,
    content_length: bool,
}

impl FramingFields {
    fn note(&mut self, name: &HeaderName) {
        if name == header::CONNECTION {
            self.connection = true;
        } else if name == header::TRANSFER_ENCODING {
            self.transfer_encoding = true;
        } else if name == header::CONTENT_LENGTH {
            self.content_length = true;
        }
    }
}

/// How the body of a response is delimited (RFC 9112 section 6.3), and whether the connection
/// can be used again after it.
fn response_framing(
    status: StatusCode,
    version: Version,
    mut headers: HeaderMap,
    fields: FramingFields,
    head_request: bool,
) -> Result<ResponseHead, ExchangeError> {
    let mut reusable = version == Version::HTTP_11
        && !(fields.connection && has_token(&headers, &header::CONNECTION, "close"));
    let body =
        if head_request || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
            BodyState::Done
        } else if fields.transfer_encoding {
            // A length beside a transfer coding is ignored, and such a message is a sign of a
            // confused sender: the connection is not trusted with another request.
            if fields.content_length {
                headers.remove(header::CONTENT_LENGTH);
                reusable = false;
            }
            if last_coding_is_chunked(&headers) {
                BodyState::ChunkSize
            } else {
                reusable = false;
                BodyState::UntilClose
            }
        } else if fields.content_length {
            let (length, stated) = content_length(&headers)?;
            if stated > 1 {
                // One field with one value, however many the runtime sent (they agreed).
                headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
            }
            if length == 0 {
                BodyState::Done
            } else {
                BodyState::Length(length)
            }
        } else {
            reusable = false;
            BodyState::UntilClose
        };
    Ok(ResponseHead {
        status,
        headers,
        body,
        reusable,
    })
}

/// The one length every `Content-Length` value states, and how many values stated it; an error
/// if they disagree or one is not a number (a message that could be read two ways is not read
/// at all).
fn content_length(headers: &HeaderMap) -> Result<(u64, usize), ExchangeError> {
    let mut length = None;
    let mut stated = 0;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        let text = value
            .to_str()
            .map_err(|_| ExchangeError::Malformed("invalid content length"))?;
        for item in text.split(',') {
            let item = item.trim();
            if item.is_empty() || !item.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ExchangeError::Malformed("invalid content length"));
            }
            let parsed: u64 = item
                .parse()
                .map_err(|_| ExchangeError::Malformed("invalid content length"))?;
            if length.is_some_and(|known| known != parsed) {
                return Err(ExchangeError::Malformed("conflicting content lengths"));
            }
            length = Some(parsed);
            stated += 1;
        }
    }
    length
        .map(|length| (length, stated))
        .ok_or(ExchangeError::Malformed("invalid content length"))
}

fn last_coding_is_chunked(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .next_back()
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.rsplit(',').next())
        .is_some_and(|coding| coding.trim().eq_ignore_ascii_case("chunked"))
}

fn has_token(headers: &HeaderMap, name: &HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| item.trim().eq_ignore_ascii_case(token))
}

/// Where a response body's reading stands.
enum BodyState {
    /// This many bytes of a length-delimited body are still to come.
    Length(u64),
    /// A chunk-size line is next.
    ChunkSize,
    /// This many bytes of the current chunk are still to come.
    ChunkData(u64),
    /// The CRLF that closes a chunk's data is next.
    ChunkEnd,
    /// The trailer section after the last chunk; `usize` bytes of it read so far.
    Trailers(usize),
    /// The body ends when the runtime closes the connection.
    UntilClose,
    /// The body has ended.
    Done,
}

/// A response body read off the runtime connection as hyper's server asks for it. It holds the
/// connection, and gives it back to the browser connection's link when the body ended cleanly;
/// dropped before that (the browser went away), it closes the connection.
pub(crate) struct RuntimeBody {
    connection: Option<RuntimeConnection>,
    link: Arc<UpstreamLink>,
    /// The rest of a request body the runtime answered before reading it all.
    upload: Option<Upload>,
    state: BodyState,
    reusable: bool,
}

impl RuntimeBody {
    /// The body has ended: the connection goes back for the next request if nothing about this
    /// exchange makes it doubtful.
    fn finish(&mut self) {
        self.state = BodyState::Done;
        let Some(connection) = self.connection.take() else {
            return;
        };
        if self.reusable && self.upload.is_none() && connection.read.is_empty() {
            self.link.put_back(connection);
        }
    }

    fn poll_body(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, ExchangeError>> {
        let Some(connection) = self.connection.as_mut() else {
            return Poll::Ready(Ok(None));
        };
        // The response has begun, so a failed upload, either side's, only ends the connection.
        if Upload::step(&mut self.upload, cx, &mut connection.stream).is_some() {
            self.reusable = false;
        }
        loop {
            match parse_body(&mut self.state, &mut connection.read, false)? {
                Parsed::Data(data) => {
                    self.settle();
                    return Poll::Ready(Ok(Some(data)));
                }
                Parsed::Done => {
                    self.finish();
                    return Poll::Ready(Ok(None));
                }
                Parsed::NeedMore => {
                    if ready!(connection.poll_read(cx))? == 0 {
                        if matches!(self.state, BodyState::UntilClose) {
                            self.state = BodyState::Done;
                            continue;
                        }
                        return Poll::Ready(Err(ExchangeError::Closed));
                    }
                }
            }
        }
    }

    /// Reads past whatever framing is already buffered after a data frame (a chunk's CRLF, the
    /// last chunk, the trailers), so a body whose end has arrived ends now: hyper's server asks
    /// for no more frames once [`Body::is_end_stream`] says so, and the connection must be back
    /// in the link before the browser's next request. A framing error is left where it is, for
    /// the next poll to report.
    fn settle(&mut self) {
        let Some(connection) = self.connection.as_mut() else {
            return;
        };
        if let Ok(Parsed::Done) = parse_body(&mut self.state, &mut connection.read, true) {
            self.finish();
        }
    }
}

/// What [`parse_body`] made of the buffered bytes.
#[derive(Debug, PartialEq)]
enum Parsed {
    /// The next piece of the body.
    Data(Bytes),
    /// The body has ended.
    Done,
    /// More bytes are needed from the runtime.
    NeedMore,
}

/// Advances a response body's `state` over the bytes in `read`, without any I/O. With
/// `framing_only`, it stops before any body data instead of taking it.
fn parse_body(
    state: &mut BodyState,
    read: &mut BytesMut,
    framing_only: bool,
) -> Result<Parsed, ExchangeError> {
    loop {
        match *state {
            BodyState::Done => return Ok(Parsed::Done),
            BodyState::Length(0) => *state = BodyState::Done,
            BodyState::Length(_) | BodyState::ChunkData(_) | BodyState::UntilClose
                if framing_only || read.is_empty() =>
            {
                return Ok(Parsed::NeedMore)
            }
            BodyState::UntilClose => return Ok(Parsed::Data(read.split().freeze())),
            BodyState::Length(remaining) | BodyState::ChunkData(remaining) => {
                let taken = remaining.min(read.len() as u64);
                let data = read.split_to(taken as usize).freeze();
                *state = match *state {
                    BodyState::Length(_) => BodyState::Length(remaining - taken),
                    _ if remaining == taken => BodyState::ChunkEnd,
                    _ => BodyState::ChunkData(remaining - taken),
                };
                return Ok(Parsed::Data(data));
            }
            BodyState::ChunkSize => match httparse::parse_chunk_size(read) {
                Ok(httparse::Status::Complete((line, size))) => {
                    read.advance(line);
                    *state = if size == 0 {
                        BodyState::Trailers(0)
                    } else {
                        BodyState::ChunkData(size)
                    };
                }
                Ok(httparse::Status::Partial) if read.len() > MAX_CHUNK_LINE_BYTES => {
                    return Err(ExchangeError::Malformed("chunk size line too long"))
                }
                Ok(httparse::Status::Partial) => return Ok(Parsed::NeedMore),
                Err(_) => return Err(ExchangeError::Malformed("invalid chunk size")),
            },
            BodyState::ChunkEnd => {
                if read.len() < 2 {
                    return Ok(Parsed::NeedMore);
                }
                if &read[..2] != b"\r\n" {
                    return Err(ExchangeError::Malformed("chunk data longer than its size"));
                }
                read.advance(2);
                *state = BodyState::ChunkSize;
            }
            BodyState::Trailers(seen) => match read.windows(2).position(|pair| pair == b"\r\n") {
                // An empty line ends the trailer section, and the body.
                Some(0) => {
                    read.advance(2);
                    *state = BodyState::Done;
                }
                Some(line) if seen + line + 2 > MAX_TRAILER_BYTES => {
                    return Err(ExchangeError::Malformed("trailers too large"))
                }
                Some(line) => {
                    read.advance(line + 2);
                    *state = BodyState::Trailers(seen + line + 2);
                }
                None if seen + read.len() > MAX_TRAILER_BYTES => {
                    return Err(ExchangeError::Malformed("trailers too large"))
                }
                None => return Ok(Parsed::NeedMore),
            },
        }
    }
}

impl Body for RuntimeBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let body = self.get_mut();
        match ready!(body.poll_body(cx)) {
            Ok(Some(data)) => Poll::Ready(Some(Ok(Frame::data(data)))),
            Ok(None) => Poll::Ready(None),
            Err(error) => {
                // The connection's framing is lost: it is closed, and hyper's server cuts the
                // browser's response off rather than end it as if it were whole.
                body.connection = None;
                body.state = BodyState::Done;
                Poll::Ready(Some(Err(BodyError::Runtime(error))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, BodyState::Done)
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self.state {
            BodyState::Length(remaining) => hyper::body::SizeHint::with_exact(remaining),
            BodyState::Done => hyper::body::SizeHint::with_exact(0),
            _ => hyper::body::SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(bytes: &[u8], head_request: bool) -> Result<Option<ResponseHead>, ExchangeError> {
        parse_head(&mut BytesMut::from(bytes), &mut Vec::new(), head_request)
    }

    fn complete(bytes: &[u8]) -> ResponseHead {
        head(bytes, false)
            .expect("a valid head")
            .expect("a complete head")
    }

    fn malformed(result: Result<Option<ResponseHead>, ExchangeError>) -> &'static str {
        match result {
            Err(ExchangeError::Malformed(why)) => why,
            Err(other) => panic!("not a framing error: {other}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn a_head_is_parsed_and_what_follows_it_stays_buffered() {
        let mut read = BytesMut::from(
            &b"HTTP/1.1 200 OK\r\nx-a: 1\r\nx-a: 2\r\ncontent-length: 5\r\n\r\nhello"[..],
        );
        let head = parse_head(&mut read, &mut Vec::new(), false)
            .unwrap()
            .unwrap();
        assert_eq!(head.status, StatusCode::OK);
        let values: Vec<_> = head.headers.get_all("x-a").iter().collect();
        assert_eq!(values, ["1", "2"]);
        assert!(matches!(head.body, BodyState::Length(5)));
        assert!(head.reusable);
        assert_eq!(&read[..], b"hello");
    }

    #[test]
    fn a_partial_head_asks_for_more_and_consumes_nothing() {
        let mut read = BytesMut::from(&b"HTTP/1.1 200 OK\r\ncontent-le"[..]);
        assert!(parse_head(&mut read, &mut Vec::new(), false)
            .unwrap()
            .is_none());
        assert_eq!(read.len(), 27);
    }

    #[test]
    fn informational_responses_are_skipped_and_a_protocol_switch_is_refused() {
        let head = complete(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n\
              HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
        );
        assert_eq!(head.status, StatusCode::NOT_FOUND);
        assert!(!head.headers.contains_key("link"));
        assert!(matches!(head.body, BodyState::Done));
        assert_eq!(
            malformed(head_of(
                b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\n\r\n"
            )),
            "switching protocols unasked"
        );
    }

    fn head_of(bytes: &[u8]) -> Result<Option<ResponseHead>, ExchangeError> {
        head(bytes, false)
    }

    #[test]
    fn broken_heads_are_refused() {
        let many: String = (0..=MAX_HEADERS).map(|i| format!("x-{i}: 1\r\n")).collect();
        let many = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        assert_eq!(
            malformed(head_of(many.as_bytes())),
            "too many header fields"
        );
        let big = format!(
            "HTTP/1.1 200 OK\r\nx: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        assert_eq!(
            malformed(head_of(big.as_bytes())),
            "response head too large"
        );
        for broken in [
            &b"HTTP/1.1 2000 OK\r\n\r\n"[..],
            b"HTTP/2 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nx: a\0b\r\n\r\n",
        ] {
            assert!(
                head_of(broken).is_err(),
                "{}",
                String::from_utf8_lossy(broken)
            );
        }
    }

    #[test]
    fn content_lengths_must_agree_and_be_plain_numbers() {
        let length = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(
                    header::CONTENT_LENGTH,
                    HeaderValue::from_str(value).unwrap(),
                );
            }
            content_length(&headers)
        };
        assert_eq!(length(&["42"]).unwrap(), (42, 1));
        assert_eq!(length(&["42, 42", "42"]).unwrap(), (42, 3));
        assert_eq!(length(&["0"]).unwrap(), (0, 1));
        for bad in [
            &["41", "42"][..],
            &["42, 43"],
            &["+42"],
            &["-1"],
            &["0x2a"],
            &["4 2"],
            &[""],
            &["42,"],
            &["99999999999999999999999"],
        ] {
            assert!(length(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_framing_follows_rfc_9112() {
        // No body for HEAD, 204 and 304, whatever their length says.
        let head_answer = head(b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert!(matches!(head_answer.body, BodyState::Done));
        assert_eq!(head_answer.headers[header::CONTENT_LENGTH], "99");
        assert!(head_answer.reusable);
        for status in ["204 No Content", "304 Not Modified"] {
            let head =
                complete(format!("HTTP/1.1 {status}\r\ncontent-length: 9\r\n\r\n").as_bytes());
            assert!(matches!(head.body, BodyState::Done) && head.reusable);
        }
        // Chunked wins over a length, which is dropped, and the connection is not trusted again.
        let both = complete(
            b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
        );
        assert!(matches!(both.body, BodyState::ChunkSize));
        assert!(!both.headers.contains_key(header::CONTENT_LENGTH));
        assert!(!both.reusable);
        let chunked = complete(b"HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n");
        assert!(matches!(chunked.body, BodyState::ChunkSize) && chunked.reusable);
        // A transfer coding that does not end in chunked, or no length at all: read until close.
        for until_close in [
            &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\n\r\n",
        ] {
            let head = complete(until_close);
            assert!(matches!(head.body, BodyState::UntilClose) && !head.reusable);
        }
        // HTTP/1.0 and `Connection: close` end the connection after the body.
        let old = complete(b"HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\n");
        assert!(matches!(old.body, BodyState::Length(1)) && !old.reusable);
        let closing = complete(
            b"HTTP/1.1 200 OK\r\nconnection: keep-alive, Close\r\ncontent-length: 1\r\n\r\n",
        );
        assert!(!closing.reusable);
    }

    /// Feeds `pieces` to a chunked body one at a time, as reads would bring them, and returns
    /// the data taken and whether the body ended.
    fn chunked(pieces: &[&[u8]]) -> Result<(Vec<u8>, bool), ExchangeError> {
        let mut state = BodyState::ChunkSize;
        let mut read = BytesMut::new();
        let mut data = Vec::new();
        for piece in pieces {
            read.extend_from_slice(piece);
            loop {
                match parse_body(&mut state, &mut read, false)? {
                    Parsed::Data(bytes) => data.extend_from_slice(&bytes),
                    Parsed::Done => return Ok((data, true)),
                    Parsed::NeedMore => break,
                }
            }
        }
        Ok((data, false))
    }

    #[test]
    fn chunks_are_decoded_however_the_reads_split_them() {
        let whole: &[u8] =
            b"5;ext=\"q\"\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n";
        for split in 0..whole.len() {
            let (data, ended) = chunked(&[&whole[..split], &whole[split..]]).unwrap();
            assert_eq!(data, b"hello 0123456789", "split at {split}");
            assert!(ended, "split at {split}");
        }
        let bytewise: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(
            chunked(&bytewise).unwrap(),
            (b"hello 0123456789".to_vec(), true)
        );
        assert_eq!(
            chunked(&[b"3\r\nabc\r\n0\r\n"]).unwrap(),
            (b"abc".to_vec(), false)
        );
    }

    #[test]
    fn broken_chunks_are_errors() {
        for broken in [
            &b"z\r\n"[..],
            b"3\r\nabcd\r\n",
            b"-1\r\n",
            b"ffffffffffffffffff\r\n",
        ] {
            assert!(
                chunked(&[broken]).is_err(),
                "{}",
                String::from_utf8_lossy(broken)
            );
        }
        let long_line = format!("1;{}", "e".repeat(MAX_CHUNK_LINE_BYTES));
        assert!(chunked(&[long_line.as_bytes()]).is_err());
        let trailer = format!("0\r\nx: {}\r\n", "t".repeat(MAX_TRAILER_BYTES));
        assert!(chunked(&[trailer.as_bytes()]).is_err());
        let unended_trailer = format!("0\r\nx: {}", "t".repeat(MAX_TRAILER_BYTES));
        assert!(chunked(&[unended_trailer.as_bytes()]).is_err());
    }

    #[test]
    fn framing_only_reads_past_a_bodys_end_and_stops_before_data() {
        // After a chunk's data, the CRLF, the last chunk and the trailers are read past at once.
        let mut state = BodyState::ChunkEnd;
        let mut read = BytesMut::from(&b"\r\n0\r\n\r\n"[..]);
        assert_eq!(
            parse_body(&mut state, &mut read, true).unwrap(),
            Parsed::Done
        );
        assert!(read.is_empty());
        // But not into the next chunk's data.
        let mut state = BodyState::ChunkEnd;
        let mut read = BytesMut::from(&b"\r\n2\r\nab\r\n0\r\n\r\n"[..]);
        assert_eq!(
            parse_body(&mut state, &mut read, true).unwrap(),
            Parsed::NeedMore
        );
        assert!(matches!(state, BodyState::ChunkData(2)));
        assert_eq!(&read[..], b"ab\r\n0\r\n\r\n");
        // A length-delimited body ends as its last byte is taken.
        let mut state = BodyState::Length(3);
        let mut read = BytesMut::from(&b"abcNEXT"[..]);
        assert_eq!(
            parse_body(&mut state, &mut read, false).unwrap(),
            Parsed::Data(Bytes::from_static(b"abc"))
        );
        assert_eq!(
            parse_body(&mut state, &mut read, true).unwrap(),
            Parsed::Done
        );
        assert_eq!(
            &read[..],
            b"NEXT",
            "bytes past the body are left for the caller to see"
        );
    }

    /// A response as a runtime might frame it, and what the proxy must make of it.
    #[derive(Debug, Clone)]
    struct Framed {
        bytes: Vec<u8>,
        body: Vec<u8>,
        head_request: bool,
        status: u16,
    }

    fn framed() -> impl proptest::strategy::Strategy<Value = Framed> {
        use proptest::prelude::*;
        (
            prop::collection::vec(any::<u8>(), 0..600),
            // 0: Content-Length, 1: chunked, 2: a HEAD request's answer, 3: 204, 4: 304
            0..5u8,
            prop::collection::vec(1..40usize, 0..30),
            any::<bool>(),
            any::<bool>(),
            prop::collection::vec(("x-[a-z]{1,8}", "[ -~]{0,20}"), 0..5),
        )
            .prop_map(
                |(body, framing, chunk_sizes, continue_first, trailers, extra)| {
                    let mut bytes = Vec::new();
                    if continue_first {
                        bytes.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    }
                    let status = match framing {
                        3 => 204,
                        4 => 304,
                        _ => 200,
                    };
                    bytes.extend_from_slice(format!("HTTP/1.1 {status} X\r\n").as_bytes());
                    for (name, value) in &extra {
                        bytes.extend_from_slice(format!("{name}: {}\r\n", value.trim()).as_bytes());
                    }
                    let carried = match framing {
                        0 => {
                            bytes.extend_from_slice(
                                format!("content-length: {}\r\n\r\n", body.len()).as_bytes(),
                            );
                            bytes.extend_from_slice(&body);
                            body
                        }
                        1 => {
                            bytes.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
                            let mut rest = &body[..];
                            let mut sizes = chunk_sizes.iter().cycle();
                            while !rest.is_empty() {
                                let size = (*sizes.next().unwrap_or(&7)).min(rest.len());
                                bytes.extend_from_slice(format!("{size:x};e=1\r\n").as_bytes());
                                bytes.extend_from_slice(&rest[..size]);
                                bytes.extend_from_slice(b"\r\n");
                                rest = &rest[size..];
                            }
                            bytes.extend_from_slice(b"0\r\n");
                            if trailers {
                                bytes.extend_from_slice(b"x-trailer: 1\r\n");
                            }
                            bytes.extend_from_slice(b"\r\n");
                            body
                        }
                        // A length the body does not follow: no body is read for these.
                        _ => {
                            bytes.extend_from_slice(b"content-length: 12\r\n\r\n");
                            Vec::new()
                        }
                    };
                    Framed {
                        bytes,
                        body: carried,
                        head_request: framing == 2,
                        status,
                    }
                },
            )
    }

    /// What reading a response off a stream of bytes came to.
    struct Driven {
        status: Option<StatusCode>,
        body: Vec<u8>,
        ended: bool,
        /// What was left in the buffer after it.
        left: Vec<u8>,
    }

    /// Feeds `bytes` in pieces cut at `cuts`, as reads would bring them.
    fn drive(bytes: &[u8], cuts: &[usize], head_request: bool) -> Result<Driven, ExchangeError> {
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let (mut read, mut spans) = (BytesMut::new(), Vec::new());
        let (mut status, mut state, mut body) = (None, None, Vec::new());
        let mut start = 0;
        for cut in cuts {
            read.extend_from_slice(&bytes[start..cut]);
            start = cut;
            if state.is_none() {
                if let Some(head) = parse_head(&mut read, &mut spans, head_request)? {
                    status = Some(head.status);
                    state = Some(head.body);
                }
            }
            if let Some(state) = state.as_mut() {
                loop {
                    match parse_body(state, &mut read, false)? {
                        Parsed::Data(data) => body.extend_from_slice(&data),
                        Parsed::Done => {
                            // What the runtime sent after this response stays unread.
                            read.extend_from_slice(&bytes[start..]);
                            return Ok(Driven {
                                status,
                                body,
                                ended: true,
                                left: read.to_vec(),
                            });
                        }
                        Parsed::NeedMore => break,
                    }
                }
            }
        }
        Ok(Driven {
            status,
            body,
            ended: false,
            left: read.to_vec(),
        })
    }

    proptest::proptest! {
        /// However a well-framed response is split across reads, the body is exactly what it
        /// framed, it ends exactly at its end, and the next response's bytes are left alone.
        #[test]
        fn a_framed_response_reads_back_whole_however_it_is_split(
            response in framed(),
            cuts in proptest::collection::vec(0..4096usize, 0..8),
        ) {
            let mut bytes = response.bytes.clone();
            let next = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
            bytes.extend_from_slice(next);
            let read = drive(&bytes, &cuts, response.head_request).unwrap();
            proptest::prop_assert_eq!(read.status.map(|s| s.as_u16()), Some(response.status));
            proptest::prop_assert!(read.ended);
            proptest::prop_assert_eq!(read.body, response.body);
            proptest::prop_assert_eq!(&read.left[..], &next[..]);
        }

        /// Bytes a broken or hostile runtime sends never panic the reader, and what it hands
        /// on as a body is never more than it was sent.
        #[test]
        fn any_bytes_are_refused_or_read_without_panic(
            response in framed(),
            flips in proptest::collection::vec((0..4096usize, proptest::prelude::any::<u8>()), 0..6),
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            cuts in proptest::collection::vec(0..4096usize, 0..8),
        ) {
            let mut bytes = response.bytes.clone();
            for (at, byte) in flips {
                let at = at % (bytes.len() + 1);
                if at < bytes.len() {
                    bytes[at] = byte;
                }
            }
            bytes.extend_from_slice(&tail);
            if let Ok(read) = drive(&bytes, &cuts, response.head_request) {
                proptest::prop_assert!(read.body.len() + read.left.len() <= bytes.len());
            }
        }
    }
}
