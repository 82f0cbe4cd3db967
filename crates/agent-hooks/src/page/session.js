// The session's page: its status (from the status stream) with Approve/Deny for a pending
// request, and the conversation so far. Everything shown comes from the session, so it is set
// with textContent, never as markup; the page's CSP allows no other script and no inline code.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const stateEl = $('status-state');
  const titleEl = $('status-title');
  const detailEl = $('status-detail');
  const actionsEl = $('status-actions');
  const resultEl = $('status-result');
  const list = $('conversation');
  const note = $('conversation-note');

  const act = async (action, revision) => {
    resultEl.textContent = String(action.label) + '…';
    try {
      const response = await fetch('/supercode/v1/actions/' + encodeURIComponent(action.id), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ revision }),
      });
      const body = await response.json().catch(() => ({}));
      resultEl.textContent = response.status === 202
        ? String(action.label) + ': sent'
        : String(action.label) + ': refused (' + String((body.error && body.error.message) || response.status) + ')';
    } catch (e) {
      resultEl.textContent = String(action.label) + ': failed';
    }
  };

  const showStatus = (doc) => {
    stateEl.textContent = String(doc.state);
    titleEl.textContent = String(doc.title);
    detailEl.textContent = doc.detail === undefined ? '' : String(doc.detail);
    const actions = Array.isArray(doc.actions) ? doc.actions : [];
    actionsEl.replaceChildren(...actions.map((action) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = String(action.label);
      button.dataset.action = String(action.id);
      if (action.destructive) button.className = 'destructive';
      button.onclick = () => act(action, doc.revision);
      return button;
    }));
  };

  let loading = false;
  let again = false;
  const loadConversation = async () => {
    if (loading) { again = true; return; }
    loading = true;
    try {
      const response = await fetch('/api/conversation', { cache: 'no-store' });
      const body = await response.json();
      const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
      const messages = Array.isArray(body.messages) ? body.messages : [];
      list.replaceChildren(...messages.map((message) => {
        const item = document.createElement('li');
        item.className = ['user', 'assistant', 'tool'].includes(message.role) ? message.role : 'tool';
        item.textContent = String(message.text);
        return item;
      }));
      note.textContent = body.unavailable
        ? String(body.unavailable)
        : (body.truncated ? 'Earlier messages are not shown.' : '');
      if (atBottom) window.scrollTo(0, document.body.scrollHeight);
    } catch (e) {
      note.textContent = 'The conversation could not be read.';
    } finally {
      loading = false;
      if (again) { again = false; loadConversation(); }
    }
  };

  // Every change of the session's status follows a hook event, and so a change of its
  // transcript: each status document cues a reload of the conversation.
  const status = new EventSource('/supercode/v1/status/stream');
  status.addEventListener('status', (e) => {
    showStatus(JSON.parse(e.data));
    loadConversation();
  });
  status.onerror = () => { stateEl.textContent = 'reconnecting'; };
  // The transcript also grows between hook events (the agent's text while it works).
  setInterval(() => { if (!document.hidden) loadConversation(); }, 3000);
  loadConversation();
})();
