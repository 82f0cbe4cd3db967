// The session's page: its status (the status API's own card, status-card.js, with Approve/Deny
// for a pending request) and the conversation so far. Everything shown comes from the session,
// so it is set with textContent, never as markup; the page's CSP allows no other script and no
// inline code.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const list = $('conversation');
  const note = $('conversation-note');

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
  // transcript: each status document the card shows cues a reload of the conversation.
  document.addEventListener('supercode-status', () => loadConversation());
  // The transcript also grows between hook events (the agent's text while it works).
  setInterval(() => { if (!document.hidden) loadConversation(); }, 3000);
  loadConversation();
})();
