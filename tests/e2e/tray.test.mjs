// Every action works from the tray menu (issue 4). The menu is read and clicked over D-Bus by
// the stand-in tray host (tray.mjs, tray-host.py), exactly as a desktop's panel does: the
// StatusNotifierItem the app registers, its properties, and its com.canonical.dbusmenu menu.
//
// The item exports no ToolTip property (libayatana-appindicator has none); the state the tooltip
// says is its Title, which panels show on hover (src-tauri/app/tray/indicator.rs), checked here
// and, with NeedsAttention, in agent-state.test.mjs.

import { mkdir, readFile, readdir, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';

import { assert, test } from './harness.mjs';
import { isRunning, startProcess } from './processes.mjs';
import { browse, receiptOf, waitForBrowserUrl, writeCanonJson, writePendingRegistrations, writeRecordingBrowser } from './support.mjs';
import { menuLabels, startTrayHost, TRAY_UPDATE_TIMEOUT_MS } from './tray.mjs';

// These tests are about the menu entries of plain runtimes ("Attach NAME (KIND)"): their demo
// runtimes do not serve the status API, so an agent state arriving mid-test cannot turn an entry
// into its state submenu (src-tauri/app/tray/view.rs's tests walk every agent state).
const PLAIN = ['--scenario', 'no-api'];

/** How long the app may take to exit after Quit: a clean Tauri shutdown of a debug build on a
 *  loaded CI machine. */
const QUIT_TIMEOUT_MS = 30_000;

/** The entries every menu ends with, in order ("---" is a separator). */
const APP_ENTRIES = ['---', 'Open Supercode Tray', 'Notify me when an agent needs me', 'Start at login', 'Open logs folder', '---', 'Quit'];

/** The check item that turns agent notifications on and off (issue 15). */
const AGENT_ALERTS = 'Notify me when an agent needs me';

let host;
let browser;
let opener;
let home;

/**
 * The tray host must own the watcher name before the app starts; attach opens a recording
 * stand-in browser; "Open logs folder" goes through `xdg-open`, here a recording stand-in first
 * on PATH; and a private HOME keeps anything written under it to this file (the autostart entry
 * goes to $XDG_CONFIG_HOME/autostart, also this file's; the entry an older app wrote is looked
 * for under $HOME/.config/autostart).
 */
export async function env({ stateDir, artifactsDir, fileSlug }) {
  host = await startTrayHost({ artifactsDir, fileSlug });
  browser = await writeRecordingBrowser(join(stateDir, 'browser'));
  opener = await writeRecordingBrowser(join(stateDir, 'opener'));
  await symlink(opener.program, join(stateDir, 'opener', 'xdg-open'));
  home = join(stateDir, 'home');
  await mkdir(home, { recursive: true, mode: 0o700 });
  return { SUPERCODE_BROWSER: browser.program, HOME: home, PATH: `${join(stateDir, 'opener')}:${process.env.PATH}` };
}

/** Starts the app and returns its WebDriver session, its pid and its tray item. */
async function openTray(t) {
  const app = await t.openApp();
  const pid = await t.appPid();
  const tray = await host.itemOf(pid);
  return { app, pid, tray };
}

const attachLabel = (name) => `Attach ${name} (demo)`;

/** The contents of `file`, or undefined until it exists. */
async function readIfExists(file) {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

// Proves: the app registers a StatusNotifierItem with the desktop's watcher, and its menu lists
// an Attach entry for each live demo runtime, then the app's own entries, with "Start at login"
// a check item that is unchecked on a fresh account.
test('the tray item registers and its menu lists each live runtime and the app entries', async (t) => {
  await t.startDemoRuntime('menu-alpha', { args: PLAIN });
  await t.startDemoRuntime('menu-beta', { args: PLAIN });
  const { tray } = await openTray(t);

  const props = await tray.properties();
  assert.equal(props.Status, 'Active', 'the item asks to be shown');
  assert.equal('ToolTip' in props, false, 'libayatana-appindicator exports no ToolTip: the Title says the state');
  const said = await t.waitUntil(
    'the Title to count both runtimes',
    async () => {
      const now = await tray.properties();
      return now.Title === 'Supercode Tray: 2 live' ? now : undefined;
    },
    TRAY_UPDATE_TIMEOUT_MS,
  );
  assert.equal(said.IconAccessibleDesc, said.Title, 'the icon is described by the state (it was "tray icon")');
  assert.match(props.Menu ?? '', /^\/\S+/, 'the item exports a menu');
  const menu = await tray.waitForMenu('both runtimes in the menu', (m) => [attachLabel('menu-alpha'), attachLabel('menu-beta')].every((label) => m.some((e) => e.label === label)));
  const labels = menuLabels(menu);
  assert.deepEqual(labels.slice(0, 2).sort(), [attachLabel('menu-alpha'), attachLabel('menu-beta')], `the menu opens with one Attach per live runtime: ${labels.join(' | ')}`);
  assert.deepEqual(labels.slice(2), APP_ENTRIES, `then the app's entries: ${labels.join(' | ')}`);
  assert.ok(menu.every((e) => e.enabled), 'every entry is enabled');
  const autostart = menu.find((e) => e.label === 'Start at login');
  assert.equal(autostart.toggleType, 'checkmark', '"Start at login" is a check item');
  assert.equal(autostart.checked, false, '"Start at login" is unchecked on a fresh account');
  assert.equal(await tray.registered(), true, 'the watcher lists the item');
});

// Proves: the tray shows the state: idle (no live runtime: idle icon, a disabled "No live
// runtimes" entry), live (a runtime started: another icon, its Attach entry), pending (a
// registration written to pending-registrations.json: a third icon and an "Approve registration"
// entry); and going back to a state brings back that state's icon.
test('the icon and menu follow the state: idle, live, pending', async (t) => {
  const { tray } = await openTray(t);
  const idleMenu = await tray.waitForMenu('the idle menu', (m) => m[0]?.label === 'No live runtimes');
  assert.equal(idleMenu[0].enabled, false, '"No live runtimes" is a state line, not an action');
  assert.deepEqual(menuLabels(idleMenu).slice(1), APP_ENTRIES);
  const idle = await tray.waitForIcon('the idle icon', () => true);
  if ('ToolTip' in idle.properties) assert.match(JSON.stringify(idle.properties.ToolTip), /no live runtimes/);

  const runtime = await t.startDemoRuntime('state-live', { args: PLAIN });
  await tray.waitForMenu('the Attach entry of the started runtime', (m) => m.some((e) => e.label === attachLabel('state-live')));
  const live = await tray.waitForIcon('the icon to change from idle', (icon) => icon.sha256 !== idle.sha256);

  await writePendingRegistrations(t.env.CANON_HOME, ['nova']);
  const pendingMenu = await tray.waitForMenu('the Approve entry', (m) => m.some((e) => e.label === 'Approve registration "nova"'));
  assert.ok(pendingMenu.some((e) => e.label === attachLabel('state-live')), 'the live runtime stays listed');
  const pending = await tray.waitForIcon('the icon to change from live', (icon) => icon.sha256 !== live.sha256);
  assert.notEqual(pending.sha256, idle.sha256, 'the pending icon differs from the idle icon too');

  // Back: the registration withdrawn, then the runtime stopped, each state's icon returns.
  await writeCanonJson(join(t.env.CANON_HOME, 'pending-registrations.json'), {});
  await tray.waitForMenu('the Approve entry to go', (m) => !m.some((e) => e.label.startsWith('Approve registration')));
  await tray.waitForIcon('the live icon again', (icon) => icon.sha256 === live.sha256);
  await runtime.stop();
  await tray.waitForMenu('the idle menu again', (m) => m[0]?.label === 'No live runtimes' && !m.some((e) => e.label.startsWith('Attach')));
  await tray.waitForIcon('the idle icon again', (icon) => icon.sha256 === idle.sha256);
});

// Proves: "Attach <name>" in the tray menu opens the runtime in the browser through the attach
// proxy: the browser is given a one-time loopback proxy URL (not the runtime's own address), and
// a cookie-keeping client following it reaches the runtime's own page.
test('clicking Attach in the tray opens the runtime page through the proxy', async (t) => {
  const name = 'tray-attach';
  await t.startDemoRuntime(name, { args: PLAIN });
  const { tray } = await openTray(t);
  await tray.click(attachLabel(name));

  const url = await waitForBrowserUrl(t, browser, TRAY_UPDATE_TIMEOUT_MS);
  assert.equal((await stat(browser.urlFile)).mode & 0o777, 0o600, 'the recorded URL file is private');
  const match = /^http:\/\/127\.0\.0\.1:(\d+)\/__attach\/([0-9A-Za-z_-]+)$/.exec(url);
  assert.ok(match, 'the URL is http://127.0.0.1:PORT/__attach/CODE (value withheld)');
  const receipt = await receiptOf(t.env.SUPERCODE_RUNTIME_DIR, `demo:${name}`);
  assert.ok(receipt.address !== `127.0.0.1:${match[1]}`, "the URL names the proxy, not the runtime's own address");

  const page = await browse(url);
  assert.deepEqual(page.hops, [303, 200], 'the code is traded for a session cookie, then the page is served');
  assert.ok(page.body.includes(`<h1 id="runtime-name">${name}</h1>`), "the runtime's own page was served through the proxy");
});

// Proves: "Start at login" writes the XDG autostart entry for the app and shows the item checked;
// clicking it again removes the entry and unchecks it. Issue 31: the entry is
// `$XDG_CONFIG_HOME/autostart/supercode-tray.desktop` (it was `$HOME/.config/autostart/Supercode
// Tray.desktop`, a space in the name, with XDG_CONFIG_HOME ignored), it carries the installed
// icon, and `Exec=` is the quoted absolute path of the running binary (no supercode-tray is
// installed at /usr/bin here), with no trailing space.
test('Start at login toggles the autostart entry and the check mark', async (t) => {
  const { tray } = await openTray(t);
  const dir = join(t.env.XDG_CONFIG_HOME, 'autostart');
  const entries = async () => (await readdir(dir).catch((error) => (error.code === 'ENOENT' ? [] : Promise.reject(error)))).filter((n) => n.endsWith('.desktop'));
  assert.deepEqual(await entries(), [], 'no autostart entry before the click');

  await tray.click('Start at login');
  // The entry is renamed into place whole (its temporary file is a dot-file not named
  // *.desktop); waiting for content as well costs nothing.
  const [[entry, desktop], ...more] = await t.waitUntil(
    'an autostart entry to be written',
    async () => {
      const found = await Promise.all((await entries()).map(async (n) => [n, await readFile(join(dir, n), 'utf8')]));
      return found.some(([, text]) => text !== '') ? found : undefined;
    },
    TRAY_UPDATE_TIMEOUT_MS,
  );
  assert.deepEqual(more, [], 'one autostart entry');
  assert.equal(entry, 'supercode-tray.desktop', 'the entry is named after the command, with no space');
  assert.match(desktop, /^\[Desktop Entry\]/, `${entry} is a desktop entry`);
  const exec = /^Exec=(.*)$/m.exec(desktop)?.[1] ?? '';
  assert.equal(exec, `"${t.appExecutable}"`, `${entry} starts the tray app's binary, quoted, with nothing after it`);
  assert.match(desktop, /^Icon=supercode-tray$/m, `${entry} names the installed icon`);
  await tray.waitForMenu('"Start at login" checked', (m) => m.find((e) => e.label === 'Start at login')?.checked === true);

  await tray.click('Start at login');
  await t.waitUntil('the autostart entry to be removed', async () => (await entries()).length === 0, TRAY_UPDATE_TIMEOUT_MS);
  await tray.waitForMenu('"Start at login" unchecked', (m) => m.find((e) => e.label === 'Start at login')?.checked === false);
});

// Proves (issue 15): "Notify me when an agent needs me" is a check item, on for a fresh account;
// clicking it turns it off and writes the setting to the app's state directory; a restarted app
// still shows it off; clicking again turns it back on.
test('Notify me when an agent needs me is on by default, toggles and is remembered across a restart', async (t) => {
  const settings = join(t.stateDir, 'tray-state', 'agent-alerts.json');
  const checked = (m) => m.find((e) => e.label === AGENT_ALERTS)?.checked;
  const first = await openTray(t);
  const menu = await first.tray.waitForMenu('the agent notifications item', (m) => m.some((e) => e.label === AGENT_ALERTS));
  const item = menu.find((e) => e.label === AGENT_ALERTS);
  assert.equal(item.toggleType, 'checkmark', `"${AGENT_ALERTS}" is a check item`);
  assert.equal(item.checked, true, 'on for a fresh account');
  assert.equal(await readIfExists(settings), undefined, 'nothing written before the user changes it');

  await first.tray.click(AGENT_ALERTS);
  await first.tray.waitForMenu('the item unchecked', (m) => checked(m) === false);
  const saved = await t.waitUntil('the setting to be saved', () => readIfExists(settings), TRAY_UPDATE_TIMEOUT_MS);
  assert.deepEqual(JSON.parse(saved), { notifyWhenAgentNeedsYou: false }, saved);

  await t.closeApp(first.app);
  const second = await openTray(t);
  assert.notEqual(second.pid, first.pid, 'a new app process');
  await second.tray.waitForMenu('the item still unchecked after a restart', (m) => checked(m) === false);
  await second.tray.click(AGENT_ALERTS);
  await second.tray.waitForMenu('the item checked again', (m) => checked(m) === true);
  // GTK checks a check item itself when it is clicked, so the menu can show the click before the
  // app has handled it: wait for the app to save the new value.
  const resaved = await t.waitUntil(
    'the setting to be saved as on',
    async () => {
      const text = await readIfExists(settings);
      return text !== undefined && JSON.parse(text).notifyWhenAgentNeedsYou !== false ? text : undefined;
    },
    TRAY_UPDATE_TIMEOUT_MS,
  );
  assert.deepEqual(JSON.parse(resaved), { notifyWhenAgentNeedsYou: true });
});

// Proves: "Open logs folder" asks the desktop (xdg-open) to open the app's log folder, the
// directory SUPERCODE_LOG_DIR names.
test('Open logs folder opens the log directory', async (t) => {
  const { tray } = await openTray(t);
  await tray.click('Open logs folder');
  const opened = (await t.waitUntil('xdg-open to be given a path', () => readIfExists(opener.urlFile), TRAY_UPDATE_TIMEOUT_MS)).trim();
  assert.equal(opened, t.env.SUPERCODE_LOG_DIR);
  assert.equal((await stat(opened)).isDirectory(), true, 'the folder exists');
});

// Proves (issue 31): "Quit" ends the app process (the tray app otherwise outlives its window) with
// exit status 0, after the core's awaited shutdown ran (its last log line, which only
// `Supercode::shutdown` writes once everything it waits for has ended), and its tray item leaves
// the watcher with it. Quit used to panic ("there is no reactor running") and exit 101 before
// shutting anything down. The app is started here as a user starts it, not through tauri-driver,
// so this test is its parent and sees its exit status.
test('Quit ends the app with status 0 after its shutdown ran', async (t) => {
  const stderr = join(t.artifactsDir, `${t.fileSlug}--${t.testSlug}--app.stderr.log`);
  const app = await startProcess('the app', t.app, [], { env: { ...t.env, SUPERCODE_TRAY_OPEN_WINDOW: '0' }, logPath: stderr });
  const tray = await host.itemOf(app.pid);
  await tray.waitForMenu('the menu', (m) => m.some((e) => e.label === 'Quit'));
  await tray.click('Quit');
  let timer;
  const exited = await Promise.race([
    app.exit,
    new Promise((resolve) => {
      timer = setTimeout(() => resolve(undefined), QUIT_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  assert.ok(exited, `the app exits within ${QUIT_TIMEOUT_MS} ms of Quit; log: ${stderr}`);
  const log = await readFile(stderr, 'utf8');
  assert.deepEqual(exited, { code: 0, signal: null }, `the app exits with status 0; log: ${stderr}`);
  assert.doesNotMatch(log, /panicked/, 'nothing panicked on the way out');
  assert.match(log, /background work stopped/, "the core's shutdown ran to its end");
  assert.equal(await isRunning(app.pid), false, 'the process is gone');
  await t.waitUntil('the tray item to be unregistered', async () => !(await tray.registered()), TRAY_UPDATE_TIMEOUT_MS);
});
