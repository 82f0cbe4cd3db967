// Secrets stay in the backend (docs/ARCHITECTURE.md, "Secrets"): through a whole session of
// listing, attaching, a runtime dying and being revived, neither a runtime's bearer token, nor a
// profile's API key, nor a runtime's loopback address reaches the webview (DOM or IPC), a log
// file, or a process command line.

import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

import { assert, test } from './harness.mjs';
import { isRunning } from './processes.mjs';
import {
  agentProfile,
  backendSnapshot,
  browse,
  canary,
  clickInRow,
  filesUnder,
  findLeaks,
  loopbackPorts,
  processCommandLines,
  readReceipts,
  recorded,
  rowSelector,
  runtimeRows,
  startRecording,
  stopDetachedRuntimes,
  waitForBrowserUrl,
  waitForRow,
  waitForText,
  writeCanonJson,
  writePrivateFile,
  writeRecordingBrowser,
} from './support.mjs';

/** The bearer token both demo runtimes serve with (read from a file, never an argument). */
const TOKEN = canary('token');
const PROFILE = 'vega';
/** The API key agents.json holds for PROFILE. */
const API_KEY = canary('api-key');
const PLAIN = 'canary-plain';
const CANON = 'canary-canon';

/** Revive waits up to 30 s for the runtime to come up; leave room on a loaded machine. */
const REVIVE_TIMEOUT_MS = 60_000;

let browser;

export async function env({ stateDir }) {
  browser = await writeRecordingBrowser(join(stateDir, 'browser'));
  return { SUPERCODE_BROWSER: browser.program };
}

/** Loopback addresses (`127.0.0.1:PORT`) of the runtimes now registered in `dir`. */
async function runtimeAddresses(dir) {
  return (await readReceipts(dir)).map((r) => r.address);
}

// Proves the secrets above appear in no DOM text or attribute ever rendered, no IPC response,
// error or event payload, no file in the app's log directory, no output of the app or the demo
// runtimes, and no command line; and that the only loopback host:port the webview or the logs
// name is the attach proxy's, never a runtime's.
test('no token, API key or runtime address reaches the webview, a log or a command line', async (t) => {
  const tokenFile = join(t.stateDir, 'secrets', 'token');
  await writePrivateFile(tokenFile, `${TOKEN}\n`);
  await writeCanonJson(join(t.env.CANON_HOME, 'agents.json'), { [PROFILE]: agentProfile(PROFILE, { apiKey: API_KEY }) });
  const addresses = new Set();
  const commandLines = [];
  const revivedPids = [];
  const snapshotCommandLines = async (when) => {
    for (const { pid, args } of await processCommandLines()) commandLines.push({ where: `command line of pid ${pid} (${when})`, text: args });
  };

  try {
    const plain = await t.startDemoRuntime(PLAIN, { args: ['--token-file', tokenFile] });
    const canon = await t.startDemoRuntime(CANON, { args: ['--token-file', tokenFile, '--canon-profile', PROFILE] });
    const app = await t.openApp();
    await startRecording(app);
    for (const name of [PLAIN, CANON]) await waitForRow(app, `${name} running`, name, (r) => r.status === 'running');
    for (const a of await runtimeAddresses(t.env.SUPERCODE_RUNTIME_DIR)) addresses.add(a);
    assert.equal(addresses.size, 2, 'both runtimes registered an address');
    await backendSnapshot(app); // one more full snapshot through the recorded bridge
    await snapshotCommandLines('both running');

    // Attach: the proxy now holds the token and uses it on every forwarded request.
    const plainRow = (await runtimeRows(app)).find((r) => r.name === PLAIN);
    await clickInRow(app, plainRow.id, '[data-testid="action-attach"]');
    const url = await waitForBrowserUrl(t, browser);
    const proxyPort = Number(new URL(url).port);
    const page = await browse(url);
    assert.equal(page.status, 200, 'the attached page was served (the token was used)');
    await snapshotCommandLines('attached');

    // Death and revival of the canon-backed runtime.
    process.kill(canon.pid, 'SIGKILL');
    await canon.exit;
    const catalogRow = await app.waitFor('the killed runtime to be revivable', async () =>
      (await runtimeRows(app)).find((r) => r.id.startsWith('sdk:') && r.status !== 'running'),
    );
    await app.waitFor('Revive to be available', async () => (await (await app.find(`${rowSelector(catalogRow.id)} [data-testid="action-revive"]`)).attribute('aria-disabled')) === null);
    await clickInRow(app, catalogRow.id, '[data-testid="action-revive"]');
    await waitForText(app, `${rowSelector(catalogRow.id)} [data-testid="confirm-revive"]`, /Revive .*\?/);
    // Confirm runs only the plan it shows, so it waits for the plan to arrive.
    await app.waitForElement(`${rowSelector(catalogRow.id)} [data-testid="confirm-revive"] [data-testid="plan-program"]`);
    await (await app.find(`${rowSelector(catalogRow.id)} [data-testid="confirm-revive"] [data-testid="confirm-accept"]`)).click();
    // Running again with a new receipt (the catalog entry alone says running a moment earlier).
    await waitForRow(app, `${CANON} running again`, CANON, (r) => r.status === 'running' && r.origin === 'both', REVIVE_TIMEOUT_MS);
    for (const receipt of await readReceipts(t.env.SUPERCODE_RUNTIME_DIR)) {
      addresses.add(receipt.address);
      if (receipt.runtimeId === `demo:${CANON}`) revivedPids.push(receipt.process.pid);
    }
    assert.equal(addresses.size, 3, 'the revived runtime registered a new address');
    assert.equal(await isRunning(plain.pid), true);
    await backendSnapshot(app);
    await snapshotCommandLines('revived');

    // Everything the webview got.
    const { ipc, dom } = await recorded(app);
    const html = await app.execute('return document.documentElement.outerHTML;');
    assert.ok(ipc.some((p) => p.includes('"event":"supercode://snapshot"')), 'the recorder saw snapshot events');
    assert.ok(ipc.some((p) => p.includes(`"name":"${PLAIN}"`)), 'the recorder saw the runtimes cross IPC');
    assert.ok(dom.length > 1, 'the DOM recorder saw changes');
    const webview = [
      { where: 'final DOM', text: html },
      ...ipc.map((text, i) => ({ where: `IPC payload ${i}`, text })),
      ...dom.map((text, i) => ({ where: `DOM record ${i}`, text })),
    ];

    // Everything written to disk as logs: the app's log directory (its log, the revived
    // runtime's output), and the app's and runtimes' own output captured by the harness.
    const logFiles = [
      ...(await filesUnder(t.env.SUPERCODE_LOG_DIR)),
      ...(await filesUnder(t.artifactsDir)).filter((f) => f.includes(`${t.fileSlug}--`) && f.endsWith('.log')),
    ];
    const inLogDir = logFiles.filter((f) => f.startsWith(t.env.SUPERCODE_LOG_DIR));
    assert.ok(inLogDir.length >= 2, `the app's log and the revived runtime's log are there to check (found ${inLogDir.length})`);
    const logs = [];
    for (const file of logFiles) {
      if ((await stat(file)).size > 0) logs.push({ where: file, text: await readFile(file, 'utf8') });
    }

    const secrets = [TOKEN, API_KEY, ...addresses];
    assert.deepEqual(findLeaks(webview, secrets), [], 'no secret in the webview');
    assert.deepEqual(findLeaks(logs, secrets), [], 'no secret in a log');
    assert.deepEqual(findLeaks(commandLines, secrets), [], 'no secret on a command line');
    assert.ok(commandLines.some((c) => c.text.includes(tokenFile)), 'the command-line scan saw the runtimes (they name only the token file)');

    // Any loopback host:port the webview or the app's own logs name must be the attach proxy's
    // (runtime addresses are covered above, exactly, everywhere). The harness's driver log is
    // left out of this rule only: tauri-driver and WebKitWebDriver may name their own ports.
    const appLogs = logs.filter(({ where }) => !where.endsWith('--tauri-driver.log'));
    for (const { where, text } of [...webview, ...appLogs]) {
      const others = [...loopbackPorts(text)].filter((port) => port !== proxyPort);
      assert.deepEqual(others.length, 0, `${where} names a loopback port other than the attach proxy's`);
    }
  } finally {
    await stopDetachedRuntimes(t.env.SUPERCODE_RUNTIME_DIR, [`demo:${CANON}`], revivedPids);
  }
});
