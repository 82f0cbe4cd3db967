// A runtime that dies without unregistering (SIGKILL: no clean-up, its receipt stays behind)
// stops being a running runtime in the window by itself: the app notices the exit and pushes a
// fresh snapshot. One the tray cannot relaunch stays, as exited, until dismissed (issue 31).

import { assert, test } from './harness.mjs';
import { isRunning } from './processes.mjs';
import { clickInRow, markPage, pageStillMarked, paintedScreenshot, readReceipts, runtimeRows, waitForRow } from './support.mjs';

/**
 * How soon a killed runtime must stop showing as running. The app watches each running pid (a pidfd on
 * Linux), so this takes well under a second; 8 s leaves room for a loaded CI machine while
 * staying below the watcher's 10 s backstop rescan, so a pass proves the exit itself was noticed.
 */
const EXIT_NOTICED_WITHIN_MS = 8_000;

// Proves two live demo runtimes are listed as running, and that SIGKILLing one shows it as exited
// in the open window within seconds, with no reload, while the other stays listed and running;
// the exited one offers only Dismiss, and Dismiss takes it off the list (issue 31, item 8).
test('a SIGKILLed runtime shows as exited by itself until dismissed, and the other stays', async (t) => {
  const alpha = await t.startDemoRuntime('exit-alpha');
  const beta = await t.startDemoRuntime('exit-beta');
  const app = await t.openApp();

  for (const name of ['exit-alpha', 'exit-beta']) {
    await waitForRow(app, `${name} listed as running`, name, (row) => row.status === 'running');
  }
  await paintedScreenshot(t, app, 'two-running');
  const mark = await markPage(app);
  const receiptsBefore = await readReceipts(t.env.SUPERCODE_RUNTIME_DIR);
  assert.ok(receiptsBefore.some((r) => r.process.pid === beta.pid), 'exit-beta has a receipt naming its pid');

  const killedAt = Date.now();
  process.kill(beta.pid, 'SIGKILL');
  await app.waitFor(
    'exit-beta to show as exited',
    async () => (await runtimeRows(app)).some((row) => row.name === 'exit-beta' && row.status === 'exited'),
    EXIT_NOTICED_WITHIN_MS,
  );
  const tookMs = Date.now() - killedAt;

  assert.equal(await pageStillMarked(app, mark), true, 'the page was reloaded; the update must arrive as an event');
  const rows = await runtimeRows(app);
  assert.deepEqual(
    rows.map((row) => [row.name, row.status, row.badge]),
    [['exit-alpha', 'running', 'Running'], ['exit-beta', 'exited', 'Exited']],
    'exit-alpha still running, exit-beta exited',
  );
  const exited = rows.find((row) => row.name === 'exit-beta');
  const shown = await app.execute(
    `const row = document.querySelector(arguments[0]);
     return { reason: row.querySelector('.row-reason').textContent,
              buttons: [...row.querySelectorAll('.actions button')].filter((b) => !b.closest('[hidden]')).map((b) => b.textContent) };`,
    [`[data-testid="runtime-row"][data-runtime-id=${JSON.stringify(exited.id)}]`],
  );
  assert.match(shown.reason, /stopped unexpectedly/, 'it says why, in plain words');
  assert.deepEqual(shown.buttons, ['Dismiss'], 'Dismiss is all it offers');
  assert.equal(await isRunning(alpha.pid), true, 'exit-alpha was not touched');
  // SIGKILL left the receipt behind; the app's reconciliation removed it.
  const receiptsAfter = await readReceipts(t.env.SUPERCODE_RUNTIME_DIR);
  assert.ok(!receiptsAfter.some((r) => r.process.pid === beta.pid), "the killed runtime's receipt was removed");
  await paintedScreenshot(t, app, 'one-exited');

  await clickInRow(app, exited.id, '[data-testid="action-dismiss"]');
  await app.waitFor('exit-beta to leave the window once dismissed', async () => !(await runtimeRows(app)).some((row) => row.name === 'exit-beta'));
  assert.deepEqual((await runtimeRows(app)).map((row) => [row.name, row.status]), [['exit-alpha', 'running']], 'only exit-alpha is left');
  await paintedScreenshot(t, app, 'one-left');
  console.log(`       (the killed runtime showed as exited ${tookMs} ms after SIGKILL)`);
});
