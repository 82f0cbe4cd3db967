// One app per desktop session (issue 4): launching Supercode Tray again while it runs (from the
// menu of applications, from a terminal) must not start a second tray; the running one shows its
// window instead (tauri-plugin-single-instance: the second process hands its arguments to the
// owner of `<identifier>.SingleInstance` on the session bus and exits).
//
// The running app starts WITHOUT its window (SUPERCODE_TRAY_OPEN_WINDOW=0), as at login. As in
// tray-window.test.mjs, the WebDriver request that launched it stays pending until a window
// exists, so the session arriving after the second launch is the proof that the launch made it.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { assert, test } from './harness.mjs';
import { groupProcessesOf, isRunning, startProcess } from './processes.mjs';
import { markPage, pageStillMarked, paintedScreenshot } from './support.mjs';
import { openAppInTray, startTrayHost } from './tray.mjs';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The bus name the single-instance guard owns (as run.mjs computes it). */
const SINGLE_INSTANCE_BUS_NAME = `${JSON.parse(readFileSync(join(REPO_ROOT, 'tauri.conf.json'), 'utf8')).identifier}.SingleInstance`;
/** The window's title (tauri.conf.json / app.rs), as X reports it. */
const WINDOW_TITLE = 'Supercode Tray';
/**
 * How long the second launch may take to exit. It only reads its environment, meets the taken
 * bus name and makes one D-Bus call, but it is a debug build that loads GTK and WebKit first on a
 * loaded 2-core CI machine; a second tray that stays up never exits at all.
 */
const SECOND_LAUNCH_EXIT_TIMEOUT_MS = 30_000;
/** How long the running app may take to create its window once asked: a webview start in a
 *  debug build on a loaded 2-core CI machine. */
const WINDOW_OPENED_TIMEOUT_MS = 60_000;

let host;

/** The tray host tells when the running app finished its set-up; the window must not open. */
export async function env({ artifactsDir, fileSlug }) {
  host = await startTrayHost({ artifactsDir, fileSlug });
  return { SUPERCODE_TRAY_OPEN_WINDOW: '0' };
}

const run = promisify(execFile);

/** The top-level X windows titled `title` mapped now (xwininfo, from x11-utils). */
async function windowsTitled(title) {
  const { stdout } = await run('xwininfo', ['-root', '-children']);
  return [...stdout.matchAll(/^\s+(0x[0-9a-f]+) "([^"]*)"/gm)].filter((m) => m[2] === title).map((m) => m[1]);
}

/** The pid of the process that owns `name` on the session bus. */
async function busNameOwnerPid(name) {
  const { stdout } = await run('dbus-send', [
    '--session', '--print-reply', '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
    'org.freedesktop.DBus.GetConnectionUnixProcessID', `string:${name}`,
  ]);
  return Number(/uint32 (\d+)/.exec(stdout)?.[1]);
}

/** Launches the app with no window; `session` resolves once a window exists (file comment). */
async function launchWithoutWindow(t) {
  const { session, settled, pid } = await openAppInTray(t, host);
  // The item reaches the watcher only once the app's set-up returned, after the plugins' set-up:
  // by now the single-instance name is owned, and a start-up window would exist.
  assert.equal(await busNameOwnerPid(SINGLE_INSTANCE_BUS_NAME), pid, `the running app owns ${SINGLE_INSTANCE_BUS_NAME}`);
  assert.deepEqual(await windowsTitled(WINDOW_TITLE), [], 'no window is open before the second launch');
  assert.equal(settled(), false, 'no WebDriver session before the second launch (the app has no webview)');
  return { session, pid };
}

/** The WebDriver session of the window, once the running app has created it. */
async function windowSession(session) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the running app created no window within ${WINDOW_OPENED_TIMEOUT_MS} ms of the second launch`)), WINDOW_OPENED_TIMEOUT_MS);
  });
  return Promise.race([session, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Launches the app binary again, as a user would, with the same environment, and waits for it
 * to exit. Returns its exit and whether anything of its process group is still running.
 */
async function launchAgain(t, label) {
  const second = await startProcess(`second launch (${label})`, t.app, [], {
    env: t.env,
    logPath: join(t.artifactsDir, `${t.fileSlug}--${t.testSlug}--${label}.stderr.log`),
  });
  const startedAt = Date.now();
  let timer;
  const exited = await Promise.race([
    second.exit,
    new Promise((resolve) => {
      timer = setTimeout(() => resolve(undefined), SECOND_LAUNCH_EXIT_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  assert.ok(exited, `the second launch exits by itself within ${SECOND_LAUNCH_EXIT_TIMEOUT_MS} ms (it is still running: a second tray); log: ${second.logPath}`);
  console.log(`       (the second launch exited ${Date.now() - startedAt} ms after it started)`);
  const left = await groupProcessesOf(second.pid, t.appExecutable);
  return { exited, left, pid: second.pid };
}

// Proves: with the app running in the tray and no window, launching the binary again exits
// promptly with status 0, and the running app opens its window in answer (the pending WebDriver
// session arrives and the window is mapped); one app process remains.
test('a second launch exits at once and the running app opens its window', async (t) => {
  const { session, pid } = await launchWithoutWindow(t);

  const second = await launchAgain(t, 'no-window');
  assert.deepEqual(second.exited, { code: 0, signal: null }, 'the second launch exits with status 0');
  assert.deepEqual(second.left, [], 'nothing of the second launch keeps running');

  const app = await windowSession(session);
  assert.equal(await app.title(), WINDOW_TITLE);
  await app.waitForElement('[data-testid="secret-store"], [data-testid="empty-state"]');
  assert.equal((await windowsTitled(WINDOW_TITLE)).length, 1, 'one window is mapped');
  assert.deepEqual(await t.appPids(), [pid], 'the first app is the one app process');
  assert.equal(await busNameOwnerPid(SINGLE_INSTANCE_BUS_NAME), pid, 'the first app still owns the single-instance name');
  await paintedScreenshot(t, app, 'opened-by-second-launch');
});

// Proves: launching again while the window is open exits with status 0 and focuses that window,
// reusing it: still one window, the same page (not reloaded), one app process.
test('a second launch with the window open focuses the one window', async (t) => {
  const { session, pid } = await launchWithoutWindow(t);
  await launchAgain(t, 'to-open-the-window');
  const app = await windowSession(session);
  await app.waitForElement('[data-testid="secret-store"], [data-testid="empty-state"]');
  const [windowId] = await windowsTitled(WINDOW_TITLE);
  const mark = await markPage(app);

  // Under Xvfb with no window manager a window created without asking gets no input focus, so
  // the focus afterwards is the second launch's doing.
  const hasFocus = () => app.execute('return document.hasFocus();');
  assert.equal(await hasFocus(), false, 'precondition: the window does not have the focus yet');

  const again = await launchAgain(t, 'with-the-window-open');
  assert.deepEqual(again.exited, { code: 0, signal: null }, 'the second launch exits with status 0');
  assert.deepEqual(again.left, [], 'nothing of the second launch keeps running');
  await app.waitFor('the window to get the focus', hasFocus);
  assert.deepEqual(await windowsTitled(WINDOW_TITLE), [windowId], 'the same one window is mapped');
  assert.equal(await pageStillMarked(app, mark), true, 'the window was reused, not reloaded or recreated');
  assert.deepEqual(await t.appPids(), [pid], 'the first app is the one app process');
  assert.equal(await isRunning(pid), true, 'the first app keeps running');
});
