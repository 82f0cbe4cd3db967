//! What a runtime's response headers may not carry to the browser: its token and its address.
//!
//! A runtime builds absolute URLs from the `Host` it is sent, which is its own address, so an
//! honest runtime's redirect would lead the browser out of the proxy (where it has no session)
//! and show it the runtime's secret address. `Location`, `Content-Location` and `Refresh` that
//! point at the runtime's own authority are rewritten to the proxy's origin; any response field
//! whose name or value contains the runtime's token is dropped (issue 29).
//!
//! Bodies are not rewritten: a runtime can always print its own address into a page. This is
//! about not leaking it by accident, and about never passing the token on, whoever put it there.

use std::net::SocketAddr;

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use live_runtime::Sensitive;

/// The response fields whose URL is rewritten when it names the runtime.
static URL_FIELDS: [HeaderName; 2] = [header::LOCATION, header::CONTENT_LOCATION];

/// `Refresh` (not in `http`'s list of names): `<seconds>; url=<URL>`.
static REFRESH: HeaderName = HeaderName::from_static("refresh");

/// What the proxy knows to look for in a runtime's response headers.
pub(crate) struct RuntimeTraces {
    /// The bearer token's bytes. Empty tokens cannot be looked for (and are not sent either).
    token: Sensitive<Vec<u8>>,
    /// The authorities (`host:port`, lowercase) under which a URL reaches the runtime.
    authorities: Vec<String>,
}

impl RuntimeTraces {
    pub(crate) fn new(runtime: SocketAddr, token: &[u8]) -> Self {
        let port = runtime.port();
        let mut authorities = vec![runtime.to_string().to_ascii_lowercase()];
        if runtime.ip().is_loopback() {
            authorities.push(format!("localhost:{port}"));
        }
        if runtime.ip().to_canonical().is_ipv4() && runtime.is_ipv6() {
            authorities.push(format!("{}:{port}", runtime.ip().to_canonical()));
        }
        Self {
            token: Sensitive::new(token.to_vec()),
            authorities,
        }
    }

    /// Drops every field carrying the token, then points URLs at the runtime back at the proxy
    /// (`http://` + `host`, the `Host` the browser used, already checked to be the proxy's).
    pub(crate) fn scrub(&self, headers: &mut HeaderMap, host: &HeaderValue) {
        self.drop_token_fields(headers);
        for name in URL_FIELDS.iter().chain([&REFRESH]) {
            if !headers.contains_key(name) {
                continue;
            }
            let values: Vec<HeaderValue> = headers.get_all(name).iter().cloned().collect();
            headers.remove(name);
            for value in values {
                let rewritten = if name == REFRESH {
                    self.rewrite_refresh(&value, host)
                } else {
                    self.rewrite_url(value.as_bytes(), host)
                        .map(|url| HeaderValue::try_from(url).ok())
                };
                match rewritten {
                    // Not the runtime's: passed on as it was.
                    None => {
                        headers.append(name.clone(), value);
                    }
                    Some(Some(value)) => {
                        headers.append(name.clone(), value);
                    }
                    // The runtime's, but unfit for a header once rewritten: dropped.
                    Some(None) => {}
                }
            }
        }
    }

    fn drop_token_fields(&self, headers: &mut HeaderMap) {
        let token = self.token.expose();
        if token.is_empty() {
            return;
        }
        let carries = |bytes: &[u8]| bytes.windows(token.len()).any(|w| w == &token[..]);
        let tainted: Vec<HeaderName> = headers
            .iter()
            .filter(|(name, value)| carries(name.as_str().as_bytes()) || carries(value.as_bytes()))
            .map(|(name, _)| name.clone())
            .collect();
        for name in tainted {
            // Only the values that carry it; the field's other values pass.
            let kept: Vec<HeaderValue> = headers
                .get_all(&name)
                .iter()
                .filter(|value| !carries(name.as_str().as_bytes()) && !carries(value.as_bytes()))
                .cloned()
                .collect();
            headers.remove(&name);
            for value in kept {
                headers.append(name.clone(), value);
            }
        }
    }

    /// `Some(url)` pointing at the proxy when `url` is an absolute (or scheme-relative) URL
    /// whose authority is the runtime's; `None` when it is not the runtime's.
    fn rewrite_url(&self, url: &[u8], host: &HeaderValue) -> Option<Vec<u8>> {
        // Browsers drop tabs and line breaks anywhere in a URL, and surrounding spaces.
        let url: Vec<u8> = url
            .iter()
            .copied()
            .filter(|b| !matches!(b, b'\t' | b'\r' | b'\n'))
            .collect();
        let url = url.trim_ascii();
        let scheme = ["http:", "https:", "ws:", "wss:"]
            .into_iter()
            .find(|scheme| {
                url.get(..scheme.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(scheme.as_bytes()))
            });
        let after_scheme = &url[scheme.map_or(0, str::len)..];
        // Slashes and backslashes alike start an authority in a special URL. After the page's
        // own scheme (`http:`, or none) it takes two; after another special scheme the
        // authority starts at once, slashes or not (the URL standard's "special authority
        // ignore slashes" state).
        let slashes = after_scheme
            .iter()
            .take_while(|b| matches!(b, b'/' | b'\\'))
            .count();
        let needed = if matches!(scheme, None | Some("http:")) {
            2
        } else {
            0
        };
        if slashes < needed {
            return None;
        }
        let rest = &after_scheme[slashes..];
        let end = rest
            .iter()
            .position(|b| matches!(b, b'/' | b'\\' | b'?' | b'#'))
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        // Userinfo is not part of where the URL leads.
        let host_port = match authority.iter().rposition(|b| *b == b'@') {
            Some(at) => &authority[at + 1..],
            None => authority,
        };
        let host_port = String::from_utf8_lossy(host_port).to_ascii_lowercase();
        if !self.authorities.contains(&host_port) {
            return None;
        }
        let mut rewritten = b"http://".to_vec();
        rewritten.extend_from_slice(host.as_bytes());
        let path = &rest[end..];
        if !path.starts_with(b"/") && !path.starts_with(b"\\") {
            rewritten.push(b'/');
        }
        rewritten.extend_from_slice(path);
        Some(rewritten)
    }

    /// `Refresh: <seconds>[;,] [url=]['"]<URL>['"]`, as the HTML standard reads it.
    fn rewrite_refresh(
        &self,
        value: &HeaderValue,
        host: &HeaderValue,
    ) -> Option<Option<HeaderValue>> {
        let bytes = value.as_bytes();
        let digits = bytes
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'.' || **b == b' ')
            .count();
        let mut rest = &bytes[digits..];
        rest = rest
            .strip_prefix(b";")
            .or(rest.strip_prefix(b","))
            .unwrap_or(rest);
        rest = rest.trim_ascii_start();
        if rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(b"url") {
            let after = rest[3..].trim_ascii_start();
            if let Some(after) = after.strip_prefix(b"=") {
                rest = after.trim_ascii_start();
            }
        }
        let quote = rest.first().copied().filter(|b| matches!(b, b'"' | b'\''));
        let url = match quote {
            Some(quote) => {
                let inner = &rest[1..];
                &inner[..inner
                    .iter()
                    .position(|b| *b == quote)
                    .unwrap_or(inner.len())]
            }
            None => rest,
        };
        let rewritten = self.rewrite_url(url, host)?;
        let mut value = bytes[..digits].to_vec();
        value.extend_from_slice(b"; url=");
        value.extend_from_slice(&rewritten);
        Some(HeaderValue::from_bytes(&value).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "tok-3f9a";

    fn traces() -> RuntimeTraces {
        RuntimeTraces::new("127.0.0.1:7001".parse().unwrap(), TOKEN.as_bytes())
    }

    fn scrubbed(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        traces().scrub(&mut headers, &HeaderValue::from_static("127.0.0.1:4000"));
        headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    fn one(name: &str, value: &str) -> Option<String> {
        scrubbed(&[(name, value)])
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    #[test]
    fn urls_at_the_runtime_point_at_the_proxy_however_they_are_spelled() {
        for (sent, expected) in [
            (
                "http://127.0.0.1:7001/next?a=1",
                "http://127.0.0.1:4000/next?a=1",
            ),
            ("HTTP://LOCALHOST:7001", "http://127.0.0.1:4000/"),
            (
                "https://user:pw@127.0.0.1:7001/x",
                "http://127.0.0.1:4000/x",
            ),
            ("//127.0.0.1:7001/x#f", "http://127.0.0.1:4000/x#f"),
            ("http:\\\\127.0.0.1:7001\\x", "http://127.0.0.1:4000\\x"),
            (" http://127.0.0.1:70\t01/y", "http://127.0.0.1:4000/y"),
            ("ws://127.0.0.1:7001/ws", "http://127.0.0.1:4000/ws"),
            ("https:127.0.0.1:7001/z", "http://127.0.0.1:4000/z"),
        ] {
            assert_eq!(one("location", sent).as_deref(), Some(expected), "{sent}");
            assert_eq!(
                one("content-location", sent).as_deref(),
                Some(expected),
                "{sent}"
            );
        }
    }

    #[test]
    fn urls_elsewhere_and_relative_ones_pass_unchanged() {
        for kept in [
            "/relative",
            "next",
            "http://127.0.0.1:7002/",
            "http://example.test/127.0.0.1:7001",
            "http:/127.0.0.1:7001/",
            "http://127.0.0.1:70011/",
        ] {
            assert_eq!(one("location", kept).as_deref(), Some(kept), "{kept}");
        }
    }

    #[test]
    fn refresh_urls_at_the_runtime_are_rewritten_in_every_spelling() {
        for sent in [
            "0; url=http://127.0.0.1:7001/r",
            "0;URL='http://127.0.0.1:7001/r'",
            "0, url = \"http://127.0.0.1:7001/r\"",
            "0; http://127.0.0.1:7001/r",
        ] {
            assert_eq!(
                one("refresh", sent).as_deref(),
                Some("0; url=http://127.0.0.1:4000/r"),
                "{sent}"
            );
        }
        assert_eq!(one("refresh", "5").as_deref(), Some("5"));
        assert_eq!(
            one("refresh", "5; url=/elsewhere").as_deref(),
            Some("5; url=/elsewhere")
        );
    }

    #[test]
    fn fields_carrying_the_token_are_dropped_and_others_kept() {
        let mut kept = scrubbed(&[
            ("location", "http://127.0.0.1:7001/?token=tok-3f9a"),
            ("x-debug", "Bearer tok-3f9a"),
            ("set-cookie", "a=1"),
            ("set-cookie", "t=tok-3f9a"),
            ("x-tok-3f9a", "1"),
            ("content-type", "text/plain"),
        ]);
        kept.sort();
        assert_eq!(
            kept,
            [
                ("content-type".to_owned(), "text/plain".to_owned()),
                ("set-cookie".to_owned(), "a=1".to_owned()),
            ]
        );
    }
}
