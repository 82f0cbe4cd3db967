// The status card of a runtime's page, the one every runtime of this project serves
// (`STATUS_CARD_PATH`): it follows the status stream and shows each offered action as a button
// that POSTs it with the revision it was shown for, asking first where the action says to.
// Everything from the document is set as text, never markup. The page holds the card's
// elements by id (status-state, status-title, status-detail, status-actions, status-result;
// status-meta if it shows who drives the runtime), and hears of each document shown as a
// `supercode-status` event on the document.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const stateEl = $('status-state');
  const titleEl = $('status-title');
  const detailEl = $('status-detail');
  const metaEl = $('status-meta');
  const actionsEl = $('status-actions');
  const resultEl = $('status-result');

  const act = async (action, revision) => {
    const label = String(action.label);
    if (action.confirm && !window.confirm(String(action.confirm))) return;
    resultEl.textContent = label + '…';
    try {
      const response = await fetch('/supercode/v1/actions/' + encodeURIComponent(action.id), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ revision }),
      });
      const body = await response.json().catch(() => ({}));
      resultEl.textContent = response.status === 202
        ? label + ': accepted'
        : label + ': refused (' + String((body.error && body.error.message) || response.status) + ')';
    } catch (e) {
      resultEl.textContent = label + ': failed';
    }
  };

  const show = (doc) => {
    stateEl.textContent = String(doc.state);
    titleEl.textContent = String(doc.title);
    detailEl.textContent = doc.detail === undefined ? '' : String(doc.detail);
    if (metaEl) {
      const controller = doc.controller && doc.controller.kind !== 'none'
        ? 'driven from ' + String(doc.controller.kind) : 'not driven';
      metaEl.textContent = controller + ' · ' + String(doc.observers) + ' watching · since ' + String(doc.since);
    }
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
    document.dispatchEvent(new CustomEvent('supercode-status', { detail: doc }));
  };

  const status = new EventSource('/supercode/v1/status/stream');
  status.addEventListener('status', (e) => show(JSON.parse(e.data)));
  status.onerror = () => { stateEl.textContent = 'reconnecting'; };
})();
