//! The one body type the proxy sends in either direction.
//!
//! Forwarded bodies (the browser's request body, the runtime's response body) stream through
//! hyper frame by frame, never buffered whole; the proxy's own pages are static bytes.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};

/// A request or response body handled by the proxy.
pub(crate) enum ProxyBody {
    /// No body (redirects, 101 responses, upgrade requests, bodiless responses).
    Empty,
    /// A page the proxy wrote itself; `None` once sent.
    Page(Option<Bytes>),
    /// A body streaming through hyper: the browser's request body on its way to the runtime,
    /// or the runtime's response body on its way to the browser. When it breaks off or breaks
    /// its framing, hyper cuts the other side off too, so it is never taken for whole.
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
