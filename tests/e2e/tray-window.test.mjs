// The tray menu's entries that open the window (issue 4): "Open Supercode Tray", and "Revive
// <name>…", which opens it on the revive confirmation. Here the app starts WITHOUT its window
// (SUPERCODE_TRAY_OPEN_WINDOW=0), as it does at login, so a window seen afterwards was created
// by the click.
//
// tauri-driver cannot attach to an app that has no webview: the POST /session that launches the
// app only completes once a webview exists. So these tests launch the app, leave that request
// pending, drive the tray over D-Bus (tray.mjs), check with xwininfo that no window is mapped,
// click, and only then get the session, which is the proof that the click made the window.

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { assert, test } from './harness.mjs';
import { isRunning } from './processes.mjs';
import { paintedScreenshot, stopDetachedRuntimes, waitForText, writeAgents } from './support.mjs';
import { openAppInTray, startTrayHost } from './tray.mjs';

// These tests are about the menu entries of plain runtimes ("Attach NAME (KIND)"): their demo
// runtimes do not serve the status API, so an agent state arriving mid-test cannot turn an entry
// into its state submenu (src-tauri/app/tray/view.rs's tests walk every agent state).
const PLAIN = ['--scenario', 'no-api'];

/** The window's title (tauri.conf.json / app.rs), as X reports it. */
const WINDOW_TITLE = 'Supercode Tray';
/**
 * How soon a killed runtime's Attach entry must leave the menu. The app watches each running pid,
 * so this takes well under a second; 8 s leaves room for a loaded CI machine while staying below
 * the watcher's 10 s backstop rescan, so a pass proves the exit itself was noticed.
 */
const EXIT_NOTICED_WITHIN_MS = 8_000;

let host;

/** The tray host must own the watcher name before the app starts; the window must not open. */
export async function env({ artifactsDir, fileSlug }) {
  host = await startTrayHost({ artifactsDir, fileSlug });
  return { SUPERCODE_TRAY_OPEN_WINDOW: '0' };
}

/** The titles of the top-level X windows mapped now (xwininfo, from x11-utils). */
async function mappedWindowTitles() {
  const { stdout } = await promisify(execFile)('xwininfo', ['-root', '-tree']);
  return [...stdout.matchAll(/^\s+0x[0-9a-f]+ "([^"]*)"/gm)].map((m) => m[1]);
}

/**
 * Launches the app with no window: the session request stays pending (see the file comment).
 * Returns `{ session, settled, pid, tray }`: `session` resolves once a window exists, `settled()`
 * says whether it has yet.
 */
async function launchWithoutWindow(t) {
  const launched = await openAppInTray(t, host);
  // The tray is built in the app's set-up, before the window would be opened; the item reaches
  // the watcher only after set-up returned. So by now a start-up window would exist.
  assert.ok(!(await mappedWindowTitles()).includes(WINDOW_TITLE), 'no window is open before the click');
  assert.equal(launched.settled(), false, 'no WebDriver session before the click (the app has no webview)');
  return launched;
}

// Proves: an app started without its window creates it when "Open Supercode Tray" is clicked in
// the tray menu: only then does a window appear, and the UI renders in it.
test('Open Supercode Tray in the menu creates the window', async (t) => {
  const { session, tray } = await launchWithoutWindow(t);
  await tray.click('Open Supercode Tray');
  const app = await session;
  assert.equal(await app.title(), WINDOW_TITLE);
  await app.waitForElement('[data-testid="secret-store"], [data-testid="empty-state"]');
  assert.ok((await mappedWindowTitles()).includes(WINDOW_TITLE), 'the window is mapped');
  await paintedScreenshot(t, app, 'opened-from-tray');
});

// Proves: SIGKILLing a live runtime removes its Attach entry from the tray menu within seconds
// (the other runtime's stays); a killed canon-backed runtime gets a "Revive <name>…" entry; and
// clicking it opens the window on the revive confirmation, showing the exact recorded command.
test('a killed runtime leaves the menu, and Revive opens the window on the confirmation', async (t) => {
  const name = 'tray-revive';
  const profile = 'nova';
  try {
    await writeAgents(t.env.CANON_HOME, [profile]);
    const doomed = await t.startDemoRuntime(name, { args: ['--canon-profile', profile, ...PLAIN] });
    const other = await t.startDemoRuntime('tray-stays', { args: PLAIN });
    const { session, tray } = await launchWithoutWindow(t);
    // A canon-backed runtime shows its catalog kind (sdk), a plain demo runtime its receipt's (demo).
    const attach = (n) => `Attach ${n} (${n === name ? 'sdk' : 'demo'})`;
    await tray.waitForMenu('both Attach entries', (m) => [attach(name), attach('tray-stays')].every((label) => m.some((e) => e.label === label)));

    const killedAt = Date.now();
    process.kill(doomed.pid, 'SIGKILL');
    await doomed.exit;
    const menu = await tray.waitForMenu(`the Attach entry of ${name} to leave the menu`, (m) => !m.some((e) => e.label === attach(name)), EXIT_NOTICED_WITHIN_MS);
    console.log(`       (the Attach entry left the menu ${Date.now() - killedAt} ms after SIGKILL)`);
    assert.ok(menu.some((e) => e.label === attach('tray-stays')), 'the other runtime keeps its Attach entry');
    assert.equal(await isRunning(other.pid), true, 'the other runtime was not touched');

    // Without its receipt the runtime is its canon catalog entry, which keeps the runtime's name
    // (the demo runtime records it as agentName), so the entry is "Revive tray-revive…".
    const revive = await tray.waitForMenu('a Revive entry', (m) => m.some((e) => /^Revive .+…$/.test(e.label)));
    const reviveEntries = revive.filter((e) => e.label.startsWith('Revive '));
    assert.equal(reviveEntries.length, 1, `one Revive entry: ${reviveEntries.map((e) => e.label).join(' | ')}`);
    assert.equal(reviveEntries[0].label, `Revive ${name}…`, 'the stopped runtime keeps the name it ran under');
    const clicked = await tray.click(reviveEntries[0].label);

    const app = await session;
    const confirm = '[data-testid="confirm-revive"]';
    const text = await waitForText(app, confirm, /Revive .*\?/);
    const menuName = /^Revive (.+)…$/.exec(clicked.label)[1];
    const confirmName = /^Revive (.+?)\?/.exec(text)?.[1];
    assert.equal(confirmName, menuName, `the confirmation asks about the runtime the menu entry named (${JSON.stringify(text.slice(0, 80))})`);
    await app.waitForElement(`${confirm} [data-testid="plan-program"]`);
    const program = await app.execute('return document.querySelector(arguments[0]).textContent;', [`${confirm} [data-testid="plan-program"]`]);
    const args = await app.execute('return [...document.querySelectorAll(arguments[0])].map((li) => li.textContent);', [`${confirm} [data-testid="plan-args"] li`]);
    const env = await app.execute('return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent);', [`${confirm} [data-testid="plan-env"] .env-pair`]);
    assert.equal(program, t.app, 'the confirmation shows the absolute program');
    assert.deepEqual(args, ['demo-runtime', '--name', name, '--workspace', join(t.stateDir, 'workspaces', name), '--canon-profile', profile, ...PLAIN], 'then the recorded arguments, one per item');
    assert.deepEqual(env, [`CANON_AGENT=${profile}`], 'and every variable revive sets');
    await paintedScreenshot(t, app, 'revive-confirmation-from-tray');
  } finally {
    // Nothing is revived here (the confirmation is not accepted); stop one anyway if it was.
    await stopDetachedRuntimes(t.env.SUPERCODE_RUNTIME_DIR, [`demo:${name}`]);
  }
});
