//! The one body type the proxy sends in either direction.
//!
//! Forwarded bodies (the browser's request body, the runtime's response body) stream through
//! hyper frame by frame, never buffered whole; the proxy's own pages are static bytes.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::Instant;

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
    /// The browser's request body on its way to the runtime, noting when the runtime side last
    /// took a frame of it.
    Upload(Incoming, Arc<Progress>),
}

/// When a request was last seen to move: made, or a frame of its body taken for the runtime
/// (the one before it written or buffered). The response-head clock runs from there, so an
/// upload that keeps moving is never cut off, while one the runtime stops reading is.
pub(crate) struct Progress {
    // std Mutex: held for a read or a store, never across an await.
    last: Mutex<Instant>,
}

impl Progress {
    pub(crate) fn new() -> Arc<Progress> {
        Arc::new(Progress {
            last: Mutex::new(Instant::now()),
        })
    }

    pub(crate) fn last(&self) -> Instant {
        *self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn moved(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }
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
            ProxyBody::Upload(incoming, progress) => {
                let frame = Pin::new(incoming).poll_frame(cx);
                if frame.is_ready() {
                    progress.moved();
                }
                frame
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Empty => true,
            ProxyBody::Page(page) => page.is_none(),
            ProxyBody::Streamed(incoming) | ProxyBody::Upload(incoming, _) => {
                incoming.is_end_stream()
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Empty | ProxyBody::Page(None) => SizeHint::with_exact(0),
            ProxyBody::Page(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            ProxyBody::Streamed(incoming) | ProxyBody::Upload(incoming, _) => incoming.size_hint(),
        }
    }
}
