//! The one body type the proxy sends in either direction.
//!
//! An enum instead of a boxed trait object keeps the per-request hot path free of an allocation:
//! forwarded bodies stream through frame by frame, never buffered whole.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};

use crate::exchange::{ExchangeError, RuntimeBody};

/// A request or response body handled by the proxy.
pub(crate) enum ProxyBody {
    /// No body (redirects, 101 responses, upgrade requests, bodiless responses).
    Empty,
    /// A page the proxy wrote itself; `None` once sent.
    Page(Option<Bytes>),
    /// A body streaming through hyper: a WebSocket handshake's answer, or a health check's.
    Streamed(Incoming),
    /// A runtime's response body, read off the runtime connection as the browser takes it.
    Runtime(RuntimeBody),
}

/// Why a body stopped before its end. hyper's server cuts the browser's response off on it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// A body streaming through hyper failed.
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
    /// The runtime's response body broke off or broke its framing.
    #[error(transparent)]
    Runtime(#[from] ExchangeError),
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ProxyBody::Empty => Poll::Ready(None),
            ProxyBody::Page(page) => Poll::Ready(page.take().map(|bytes| Ok(Frame::data(bytes)))),
            ProxyBody::Streamed(incoming) => Pin::new(incoming)
                .poll_frame(cx)
                .map(|frame| frame.map(|frame| frame.map_err(BodyError::from))),
            ProxyBody::Runtime(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Empty => true,
            ProxyBody::Page(page) => page.is_none(),
            ProxyBody::Streamed(incoming) => incoming.is_end_stream(),
            ProxyBody::Runtime(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Empty | ProxyBody::Page(None) => SizeHint::with_exact(0),
            ProxyBody::Page(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            ProxyBody::Streamed(incoming) => incoming.size_hint(),
            ProxyBody::Runtime(body) => body.size_hint(),
        }
    }
}
