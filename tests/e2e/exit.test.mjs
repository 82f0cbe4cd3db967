// A runtime that dies without unregistering (SIGKILL: no clean-up, its receipt stays behind)
// leaves the window by itself: the app notices the exit and pushes a fresh snapshot.

import { assert, test } from './harness.mjs';
import { isRunning } from './processes.mjs';
import { markPage, pageStillMarked, paintedScreenshot, readReceipts, runtimeRows, waitForRow } from './support.mjs';

/**
 * How soon a killed runtime must leave the window. The app watches each running pid (a pidfd on
 * Linux), so this takes well under a second; 8 s leaves room for a loaded CI machine while
 * staying below the watcher's 10 s backstop rescan, so a pass proves the exit itself was noticed.
 */
const EXIT_NOTICED_WITHIN_MS = 8_000;

// Proves two live demo runtimes are listed as running, and that SIGKILLing one removes it from
// the open window within seconds, with no reload, while the other stays listed and running.
test('a SIGKILLed runtime disappears from the window by itself and the other stays', async (t) => {
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
    'exit-beta to leave the window',
    async () => !(await runtimeRows(app)).some((row) => row.name === 'exit-beta'),
    EXIT_NOTICED_WITHIN_MS,
  );
  const tookMs = Date.now() - killedAt;

  assert.equal(await pageStillMarked(app, mark), true, 'the page was reloaded; the update must arrive as an event');
  const rows = await runtimeRows(app);
  assert.deepEqual(
    rows.map((row) => [row.name, row.status]),
    [['exit-alpha', 'running']],
    'only exit-alpha is left, still running',
  );
  assert.equal(await isRunning(alpha.pid), true, 'exit-alpha was not touched');
  // SIGKILL left the receipt behind; the app's reconciliation removed it.
  const receiptsAfter = await readReceipts(t.env.SUPERCODE_RUNTIME_DIR);
  assert.ok(!receiptsAfter.some((r) => r.process.pid === beta.pid), "the killed runtime's receipt was removed");
  await paintedScreenshot(t, app, 'one-left');
  console.log(`       (the killed runtime left the window ${tookMs} ms after SIGKILL)`);
});
