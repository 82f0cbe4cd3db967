//! The one body type the proxy sends in either direction.
//!
//! An enum instead of a boxed trait object keeps the per-request hot path free of an allocation:
//! forwarded bodies stream through as hyper's `Incoming`, frame by frame, never buffered whole.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};

/// A request or response body handled by the proxy.
pub(crate) enum ProxyBody {
    /// No body (redirects, 101 responses, upgrade requests).
    Empty,
    /// A page the proxy wrote itself; `None` once sent.
    Page(Option<Bytes>),
    /// A body streaming through from the browser or the runtime.
    Streamed(Incoming),
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            ProxyBody::Empty => Poll::Ready(None),
            ProxyBody::Page(page) => Poll::Ready(page.take().map(|bytes| Ok(Frame::data(bytes)))),
            ProxyBody::Streamed(incoming) => Pin::new(incoming).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Empty => true,
            ProxyBody::Page(page) => page.is_none(),
            ProxyBody::Streamed(incoming) => incoming.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Empty | ProxyBody::Page(None) => SizeHint::with_exact(0),
            ProxyBody::Page(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            ProxyBody::Streamed(incoming) => incoming.size_hint(),
        }
    }
}
