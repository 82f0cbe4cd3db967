//! The runtime's HTML page: inline CSS and JS but for the status card's script, no external
//! resources, and only same-origin relative URLs, so it works unchanged behind the attach proxy.
//!
//! Its status card is the status API's own (`status_card.js`, served at [`STATUS_CARD_PATH`]):
//! it follows the status stream and shows each offered action as a button that POSTs it, so
//! pressing Approve in a browser attached through the tray drives the runtime. Everything from
//! the document is set as text, never HTML.

use crate::STATUS_CARD_PATH;

/// Renders the page for a runtime called `name`; `status_api` says whether it serves the status API.
pub(crate) fn render(name: &str, status_api: bool) -> String {
    let name = escape_html(name);
    // The status card's script follows the stream; without the API the card says so instead.
    let (state, title, status_card) = if status_api {
        (
            "…",
            "",
            format!(r#"<script src="{STATUS_CARD_PATH}"></script>"#),
        )
    } else {
        (
            "not served",
            "This runtime does not serve the status API.",
            String::new(),
        )
    };
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{name} · demo runtime</title>
<style>
  body {{ font: 16px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 40rem; color: #1d232a; }}
  h1 {{ font-size: 1.6rem; margin-bottom: .2rem; }}
  .muted {{ color: #66707a; }}
  .card {{ border: 1px solid #d8dde2; border-radius: 8px; padding: 1rem; margin: 1rem 0; }}
  #tick {{ font: 700 2.4rem/1 ui-monospace, monospace; }}
  input {{ font: inherit; padding: .3rem; }}
  button {{ font: inherit; padding: .3rem .8rem; }}
  #status-state {{ font: 700 1.4rem/1.2 ui-monospace, monospace; }}
  #status-detail {{ white-space: pre-wrap; font-family: ui-monospace, monospace; }}
  #status-actions button {{ margin-right: .5rem; }}
  #status-actions button.destructive {{ color: #a4161a; }}
</style>
</head>
<body>
<h1 id="runtime-name">{name}</h1>
<p class="muted">Demo runtime, served through an authenticated loopback endpoint.</p>
<div class="card" id="status-card">
  <div class="muted">Agent status</div>
  <div id="status-state">{state}</div>
  <div id="status-title">{title}</div>
  <div id="status-detail"></div>
  <div id="status-meta" class="muted"></div>
  <div id="status-actions"></div>
  <div id="status-result" class="muted"></div>
</div>
<div class="card">
  <div class="muted">Live counter (server-sent events)</div>
  <div id="tick">…</div>
  <div id="tick-status" class="muted">connecting</div>
</div>
<div class="card">
  <div class="muted">WebSocket echo</div>
  <form id="ws-form"><input id="ws-input" value="hello" autocomplete="off"> <button>Send</button></form>
  <div>Echo: <span id="ws-echo">–</span></div>
  <div id="ws-status" class="muted">connecting</div>
</div>
{status_card}
<script>
(() => {{
  const tick = document.getElementById('tick');
  const tickStatus = document.getElementById('tick-status');
  const events = new EventSource('/api/events');
  events.onopen = () => {{ tickStatus.textContent = 'live'; }};
  events.onerror = () => {{ tickStatus.textContent = 'reconnecting'; }};
  events.onmessage = (e) => {{ tick.textContent = String(JSON.parse(e.data).tick); }};

  const wsStatus = document.getElementById('ws-status');
  const wsEcho = document.getElementById('ws-echo');
  const input = document.getElementById('ws-input');
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(scheme + '//' + location.host + '/api/ws');
  socket.onopen = () => {{ wsStatus.textContent = 'open'; socket.send(input.value); }};
  socket.onclose = () => {{ wsStatus.textContent = 'closed'; }};
  socket.onmessage = (e) => {{ wsEcho.textContent = String(e.data); }};
  document.getElementById('ws-form').onsubmit = (e) => {{
    e.preventDefault();
    if (socket.readyState === WebSocket.OPEN) socket.send(input.value);
  }};
}})();
</script>
</body>
</html>
"#
    )
}

fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn the_status_card_script_is_loaded_only_where_the_status_api_is_served() {
        let script = r#"<script src="/supercode/status-card.js"></script>"#;
        assert!(render("a", true).contains(script));
        let without = render("a", false);
        assert!(!without.contains(script));
        assert!(without.contains(r#"<div id="status-state">not served</div>"#));
    }

    #[test]
    fn runtime_name_is_html_escaped() {
        let page = render("<script>alert(1)</script>", true);
        assert!(!page.contains("<script>alert(1)"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }
}
