// Forget removes a stale receipt, and only that: the process its pid now names is left alone.

import { access } from 'node:fs/promises';

import { assert, test } from './harness.mjs';
import { isRunning, startProcess } from './processes.mjs';
import { clickInRow, newEndpoint, paintedScreenshot, processStartTime, rowSelector, runtimeRows, waitForRow, waitForText, writeReceipt } from './support.mjs';

async function exists(path) {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

// Proves a hand-written receipt whose pid is alive but belongs to another process (its
// startTime is wrong: a reused pid) is listed as stale; Forget, once confirmed, removes it from
// the window and deletes the receipt file, and the live process behind that pid keeps running.
test('forget removes a stale receipt and leaves the process its pid names alone', async (t) => {
  const sleeper = await startProcess('sleep 300', 'sleep', ['300'], { env: t.env, logPath: `${t.artifactsDir}/${t.fileSlug}--sleep.stderr.log` });
  const endpoint = newEndpoint();
  const workspace = `${t.stateDir}/workspaces/stale-one`;
  const receiptPath = await writeReceipt(t.env.SUPERCODE_RUNTIME_DIR, {
    version: 1,
    endpoint,
    runtimeId: 'sdk:stale-one',
    source: { sessionId: 'session-stale-one', workspace },
    // A live pid with another start time: what a receipt looks like after its runtime died and
    // the pid was reused by an unrelated process.
    process: { pid: sleeper.pid, startTime: (await processStartTime(sleeper.pid)) + 12_345 },
    address: '127.0.0.1:9',
    registeredAt: new Date(Date.now() - 5 * 60_000).toISOString(),
    metadata: { runtimeKind: 'sdk', displayName: 'stale-one', cwd: workspace },
  });

  const app = await t.openApp();
  const row = await waitForRow(app, 'stale-one listed as stale', 'stale-one', (r) => r.status === 'stale');
  assert.equal(row.id, endpoint, 'the row is the receipt (keyed by its endpoint)');
  assert.equal(row.badge, 'Stale');
  const reason = await (await app.find(`${rowSelector(endpoint)} .row-reason`)).text();
  assert.match(reason, new RegExp(`PID ${sleeper.pid} now belongs to another process`));
  await paintedScreenshot(t, app, 'stale-listed');

  await clickInRow(app, endpoint, '[data-testid="action-forget"]');
  await waitForText(app, `${rowSelector(endpoint)} [data-testid="confirm-forget"]`, /Forget stale-one\?/);
  await paintedScreenshot(t, app, 'forget-confirmation');
  await (await app.find(`${rowSelector(endpoint)} [data-testid="confirm-forget"] [data-testid="confirm-accept"]`)).click();

  await app.waitFor('stale-one to leave the window', async () => !(await runtimeRows(app)).some((r) => r.id === endpoint));
  assert.equal(await exists(receiptPath), false, 'the receipt file was deleted');
  assert.equal(await isRunning(sleeper.pid), true, 'the process behind the reused pid is untouched');
  assert.equal(sleeper.exited, undefined, 'sleep did not exit');
  const empty = await app.waitForElement('[data-testid="empty-state"]');
  assert.equal(await empty.displayed(), true, 'with nothing left, the window says so');
});
