//! The short HTML pages the proxy answers with itself.
//!
//! They are static text: nothing from the request (and certainly no token or address) is ever
//! reflected into them. Every one is `no-store` and `no-referrer`, so neither the page nor the URL
//! that produced it lingers in caches or leaks to another site.

use bytes::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use crate::body::ProxyBody;

macro_rules! page {
    ($title:literal, $message:literal) => {
        concat!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>",
            $title,
            "</title><style>body{font:16px/1.5 system-ui,sans-serif;margin:3rem auto;max-width:34rem;color:#1d232a}</style></head><body><h1>",
            $title,
            "</h1><p>",
            $message,
            "</p></body></html>\n"
        )
    };
}

const EXPIRED: &str = page!(
    "Attach link expired",
    "This attach link has expired or was already used: each link works once, within 30 seconds. Attach again from Supercode Tray, or for a new link from the command line run <code>supercode-tray attach NAME</code> again."
);
const NO_SESSION: &str = page!(
    "Not attached",
    "This browser is not attached to the runtime. Attach again from the tray (Supercode Tray, then Attach)."
);
const WRONG_HOST: &str = page!(
    "Wrong address",
    "This page was requested under a host name the attach proxy does not serve. Attach again from Supercode Tray."
);
const CROSS_ORIGIN: &str = page!(
    "Request refused",
    "The request came from another site, so it was refused. Use the runtime's own page, or attach again from Supercode Tray."
);
const UPSTREAM_DOWN: &str = page!(
    "Runtime not reachable",
    "The runtime is not answering. Check that it is still running in Supercode Tray, revive it if needed, then attach again."
);
const UPSTREAM_TIMEOUT: &str = page!(
    "Runtime not answering",
    "The runtime took too long to answer. Check that it is still working in Supercode Tray, restart it if needed, then try again."
);
const METHOD_NOT_ALLOWED: &str = page!(
    "Method not allowed",
    "The attach proxy does not serve CONNECT or TRACE requests."
);
const SERVICE_WORKER_REFUSED: &str = page!(
    "Service worker refused",
    "Runtimes attached through Supercode Tray cannot install service workers: the page's address is reused for other runtimes."
);
const NOT_ALLOWED: &str = page!(
    "Method not allowed",
    "Attach links are opened with a plain GET. Open the link in a browser."
);

fn page(status: StatusCode, html: &'static str) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::Page(Some(Bytes::from_static(html.as_bytes()))));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    no_store_no_referrer(headers);
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    response
}

/// Adds the headers that keep a response (and the URL behind it) out of caches and referrers.
pub(crate) fn no_store_no_referrer(headers: &mut hyper::HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

/// 403 for a replayed, expired or unknown attach code.
pub(crate) fn expired_code() -> Response<ProxyBody> {
    page(StatusCode::FORBIDDEN, EXPIRED)
}

/// 401 for a request without a valid session cookie.
pub(crate) fn no_session() -> Response<ProxyBody> {
    page(StatusCode::UNAUTHORIZED, NO_SESSION)
}

/// 421 for a `Host` that is not the proxy's own (DNS rebinding defence).
pub(crate) fn wrong_host() -> Response<ProxyBody> {
    page(StatusCode::MISDIRECTED_REQUEST, WRONG_HOST)
}

/// 403 for an unsafe method or WebSocket upgrade whose `Origin` is not the proxy's own.
pub(crate) fn cross_origin() -> Response<ProxyBody> {
    page(StatusCode::FORBIDDEN, CROSS_ORIGIN)
}

/// 502 when the runtime cannot be reached.
pub(crate) fn upstream_down() -> Response<ProxyBody> {
    page(StatusCode::BAD_GATEWAY, UPSTREAM_DOWN)
}

/// 405 for an attach link requested with something other than GET.
pub(crate) fn attach_method_not_allowed() -> Response<ProxyBody> {
    let mut response = page(StatusCode::METHOD_NOT_ALLOWED, NOT_ALLOWED);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET"));
    response
}

/// 504 when the runtime sent no response head within the deadline.
pub(crate) fn upstream_timeout() -> Response<ProxyBody> {
    page(StatusCode::GATEWAY_TIMEOUT, UPSTREAM_TIMEOUT)
}

/// 405 for `CONNECT` and `TRACE`: the proxy is no tunnel, and nothing echoes a request back.
pub(crate) fn method_not_allowed() -> Response<ProxyBody> {
    page(StatusCode::METHOD_NOT_ALLOWED, METHOD_NOT_ALLOWED)
}

/// 403 for a service worker's script: registering one through the proxy fails.
pub(crate) fn service_worker_refused() -> Response<ProxyBody> {
    page(StatusCode::FORBIDDEN, SERVICE_WORKER_REFUSED)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expired page tells the link's lifetime as the proxy enforces it.
    #[test]
    fn the_expired_page_says_how_long_a_link_lasts() {
        let lasts = format!(
            "within {} seconds",
            crate::options::ATTACH_CODE_TTL.as_secs()
        );
        assert!(EXPIRED.contains(&lasts), "{EXPIRED}");
    }
}
