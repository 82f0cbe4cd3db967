// The window keeps the user's place (issue 31, item 4): in a long list of agents asking for
// approval, one click on Approve moves that card down the list (the core sorts what still needs
// you first), and the view stays where it was: the other requests stay in view, and focus does
// not follow the moved card (it lands on the list's heading, which no update moves).

import { agentRow, waitForAgentRow } from './agents.mjs';
import { assert, test } from './harness.mjs';

/** Enough asking agents that the list overflows the window (~560 px) and can be scrolled. */
const ASKING = ['ask-1', 'ask-2', 'ask-3', 'ask-4', 'ask-5', 'ask-6'];

/** How long a debug app under load may take to hear every runtime's first documents. */
const ALL_ASKING_TIMEOUT_MS = 90_000;

/**
 * What the window shows of its list now: the scroll position of its scroll area, the rows in
 * order with their state and whether they are (at least partly) in view, and where focus is.
 */
function layout(app) {
  return app.execute(`
    const main = document.querySelector('.app-main');
    const box = main.getBoundingClientRect();
    const rows = [...document.querySelectorAll('[data-testid="runtime-row"]')].map((row) => {
      const r = row.getBoundingClientRect();
      return {
        name: row.querySelector('.row-name').textContent,
        state: row.dataset.agentState ?? null,
        inView: r.bottom > box.top + 1 && r.top < box.bottom - 1,
      };
    });
    const active = document.activeElement;
    const focusedRow = active?.closest('[data-testid="runtime-row"]');
    return {
      scrollTop: main.scrollTop,
      scrollable: main.scrollHeight > main.clientHeight + 1,
      rows,
      focus: active === document.body ? 'body' : (active?.id || active?.dataset?.testid || active?.tagName),
      focusedRow: focusedRow ? focusedRow.querySelector('.row-name').textContent : null,
    };
  `);
}

// Proves (issue 31): with six agents asking for approval, the list scrolled so the second card is
// at the top, Approve on that card sends the approval (the runtime moves on), its card is re-sorted
// after the ones still asking, and the window's scroll position is unchanged: every card that was in
// view and still asks is still in view, and focus is on the list's heading, not in the moved card.
test('Approve in a long list of requests keeps the scroll position and the other requests in view', async (t) => {
  for (const name of ASKING) await t.startDemoRuntime(name, { args: ['--scenario', 'approval'] });
  const app = await t.openApp();
  for (const name of ASKING) {
    await waitForAgentRow(app, `${name} to ask for approval`, name, (r) => r.state === 'needs-approval', ALL_ASKING_TIMEOUT_MS);
  }

  // Scroll so the second card's top is the top of the view, as a user reading down the list would.
  const target = await app.execute(`
    const main = document.querySelector('.app-main');
    const rows = [...document.querySelectorAll('[data-testid="runtime-row"]')];
    main.scrollTop = rows[1].getBoundingClientRect().top - main.getBoundingClientRect().top + main.scrollTop - 8;
    return rows[1].querySelector('.row-name').textContent;
  `);
  const before = await layout(app);
  assert.ok(before.scrollable, 'the list overflows the window, so it can be scrolled');
  assert.ok(before.scrollTop > 0, `the list is scrolled (scrollTop ${before.scrollTop})`);
  const inViewBefore = before.rows.filter((r) => r.inView).map((r) => r.name);
  assert.ok(inViewBefore.length >= 2, `more than one card in view: ${inViewBefore.join(', ')}`);
  assert.equal(before.rows.findIndex((r) => r.name === target), 1);

  const row = await agentRow(app, target);
  const approve = await app.find(`[data-testid="runtime-row"][data-runtime-id="${row.id}"] [data-testid="agent-action"][data-action-id="approve"]`);
  await approve.click();

  // The runtime moved on, and the core sorted its card after the ones still asking.
  await waitForAgentRow(app, `${target} to move on after Approve`, target, (r) => r.state !== 'needs-approval');
  const after = await app.waitFor(`${target}'s card to be sorted after the requests`, async () => {
    const now = await layout(app);
    const index = now.rows.findIndex((r) => r.name === target);
    const lastAsking = now.rows.map((r) => r.state).lastIndexOf('needs-approval');
    return index > lastAsking ? now : undefined;
  });
  console.log(`       (scrollTop ${before.scrollTop} → ${after.scrollTop}; in view before: ${inViewBefore.join(', ')}; after: ${after.rows.filter((r) => r.inView).map((r) => r.name).join(', ')}; focus ${after.focus})`);

  assert.ok(Math.abs(after.scrollTop - before.scrollTop) <= 1, `the scroll position stayed (${before.scrollTop} → ${after.scrollTop})`);
  const stillAsking = inViewBefore.filter((name) => name !== target);
  for (const name of stillAsking) {
    const now = after.rows.find((r) => r.name === name);
    assert.equal(now?.state, 'needs-approval', `${name} still asks`);
    assert.equal(now?.inView, true, `${name}, in view before the click, is still in view`);
  }
  assert.equal(after.focusedRow, null, 'focus did not follow the moved card');
  assert.equal(after.focus, 'runtimes-title', 'focus is on the list heading');
  await t.screenshot(app, 'after-approve');
});
