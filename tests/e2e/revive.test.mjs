// Revive brings a stopped runtime back from its recorded launch command, after showing the whole
// plan (absolute program, arguments, working directory, environment) for confirmation.

import { realpathSync } from 'node:fs';
import { join } from 'node:path';

import { assert, test } from './harness.mjs';
import { isRunning } from './processes.mjs';
import { clickInRow, paintedScreenshot, receiptOf, rowSelector, runtimeRows, stopDetachedRuntimes, waitForRow, waitForText, writeAgents } from './support.mjs';

const NAME = 'revive-me';
const PROFILE = 'nova';

/** How long the revive itself may take: the app waits up to 30 s for the runtime to show up. */
const REVIVE_TIMEOUT_MS = 60_000;

// Proves: a demo runtime backed by a canon profile (its lock and catalog entry), once SIGKILLed,
// is listed as not running and revivable; Revive shows the recorded launch command and, once
// confirmed, relaunches it: a new process (new pid) registers and the window lists it as running.
test('revive shows the full plan and brings a killed runtime back as a new process', async (t) => {
  const revivedPids = [];
  try {
    await writeAgents(t.env.CANON_HOME, [PROFILE]);
    const first = await t.startDemoRuntime(NAME, { args: ['--canon-profile', PROFILE] });
    const app = await t.openApp();
    await waitForRow(app, `${NAME} listed as running`, NAME, (row) => row.status === 'running');
    const receipt = await receiptOf(t.env.SUPERCODE_RUNTIME_DIR, `demo:${NAME}`);
    assert.ok(receipt, 'the demo runtime wrote a receipt');
    assert.equal(receipt.process.pid, first.pid);
    const catalogId = receipt.metadata.canonRuntimeId;
    assert.match(catalogId ?? '', /^sdk:/, 'the receipt links its canon catalog entry');
    assert.equal((await runtimeRows(app)).find((row) => row.name === NAME)?.id, catalogId, 'while it runs, its id is the catalog id (issue 31)');

    process.kill(first.pid, 'SIGKILL');
    await first.exit;
    // Without its receipt, the runtime is the catalog entry: same name as when it ran, revivable.
    await app.waitFor(
      `the catalog entry ${PROFILE} to be listed as revivable`,
      async () =>
        (await runtimeRows(app)).find((row) => row.id === catalogId && row.status !== 'running') &&
        (await (await app.find(`${rowSelector(catalogId)} [data-testid="action-revive"]`)).attribute('aria-disabled')) === null,
    );
    assert.ok(!(await runtimeRows(app)).some((row) => row.status === 'running'), 'nothing is listed as running after the kill');
    assert.equal((await runtimeRows(app)).find((row) => row.id === catalogId).name, NAME, 'the stopped runtime keeps the name it ran under');
    await paintedScreenshot(t, app, 'revivable');

    await clickInRow(app, catalogId, '[data-testid="action-revive"]');
    const confirmCss = `${rowSelector(catalogId)} [data-testid="confirm-revive"]`;
    await waitForText(app, confirmCss, /Revive .*\?/);
    await app.waitForElement(`${confirmCss} [data-testid="plan-program"]`);
    const plan = await app.execute(
      `const panel = document.querySelector(arguments[0]);
       const texts = (css) => [...panel.querySelectorAll(css)].map((e) => e.textContent);
       return {
         program: panel.querySelector('[data-testid="plan-program"]').textContent,
         args: texts('[data-testid="plan-args"] li'),
         cwd: panel.querySelector('[data-testid="plan-cwd"]').textContent,
         env: texts('[data-testid="plan-env"] .env-pair'),
       };`,
      [confirmCss],
    );
    // The command the first process was started with, exactly: the program as an absolute path,
    // then each argument; its working directory; every variable revive sets.
    const workspace = join(t.stateDir, 'workspaces', NAME);
    assert.equal(plan.program, t.app, 'the confirmation shows the absolute program');
    assert.deepEqual(plan.args, ['demo-runtime', '--name', NAME, '--workspace', workspace, '--canon-profile', PROFILE], 'then its arguments, one per item');
    assert.equal(plan.cwd, realpathSync(workspace), 'and its working directory');
    assert.deepEqual(plan.env, [`CANON_AGENT=${PROFILE}`], 'and every variable it sets');
    await paintedScreenshot(t, app, 'revive-confirmation');
    await (await app.find(`${confirmCss} [data-testid="confirm-accept"]`)).click();

    const revived = await app.waitFor(
      `${NAME} to be running again`,
      async () => {
        const again = await receiptOf(t.env.SUPERCODE_RUNTIME_DIR, `demo:${NAME}`);
        if (again) revivedPids.push(again.process.pid);
        // The catalog may say running (new pid, heartbeat) a moment before the watcher has read
        // the new receipt: wait for the row backed by the new receipt, not the catalog's own.
        // It keeps the id it had while stopped, the catalog id (issue 31).
        const row = (await runtimeRows(app)).find((r) => r.name === NAME && r.status === 'running' && r.origin === 'both');
        return again && row ? { receipt: again, row } : undefined;
      },
      REVIVE_TIMEOUT_MS,
    );
    assert.notEqual(revived.receipt.process.pid, first.pid, 'a new process');
    assert.equal(await isRunning(revived.receipt.process.pid), true, 'the revived process is alive');
    assert.notEqual(revived.receipt.endpoint, receipt.endpoint, 'with a fresh endpoint');
    assert.equal(revived.row.badge, 'Running');
    assert.equal(revived.row.id, catalogId, 'one id from running to stopped to revived');
    assert.deepEqual(await app.findAll('[data-testid="row-error"]'), [], 'no row reports an error');
    await paintedScreenshot(t, app, 'revived');
  } finally {
    // The revived runtime runs detached from the test (its own session): stop it here.
    await stopDetachedRuntimes(t.env.SUPERCODE_RUNTIME_DIR, [`demo:${NAME}`], revivedPids);
  }
});
