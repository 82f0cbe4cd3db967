// The tray in a real panel (issue 15): Debian's xfce4-panel, whose systray plugin is a
// StatusNotifierWatcher and host, runs on the suite's Xvfb and session bus instead of the
// stand-in tray host, with a configuration made for this file (its own XDG_CONFIG_HOME: one
// panel at the top holding only the systray plugin, and its own xfconfd serving that
// configuration). The app's icon is found on screen, its menu opened with real X input
// (xdotool), and the screen captured (ImageMagick's `import`).
//
// No window manager runs: the panel is started with --disable-wm-check, and GTK's menus are
// override-redirect windows, which need none.

import { execFile } from 'node:child_process';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { listed, waitForAgentRow, waitForListed } from './agents.mjs';
import { assert, test } from './harness.mjs';
import { startProcess, waitForBusNameReleased } from './processes.mjs';
import { canary, writePrivateFile } from './support.mjs';

const run = promisify(execFile);

const DOCS_SCREENSHOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'tray-panel.png');
const WATCHER = 'org.kde.StatusNotifierWatcher';
const XFCONF = 'org.xfce.Xfconf';
const XFCONFD = '/usr/lib/x86_64-linux-gnu/xfce4/xfconf/xfconfd';

/** The panel's height in pixels, as configured below. */
const PANEL_SIZE = 32;
/** How long the panel may take to own the watcher name and register its host (a GTK start and
 *  its external plugin process on a loaded machine). */
const PANEL_READY_TIMEOUT_MS = 60_000;
/** How long the app's item may take to show as an icon once the app runs (a debug build's
 *  start, then the panel loading the icon). */
const ICON_SHOWN_TIMEOUT_MS = 60_000;
/** How long a click may take to map a menu window (the panel asks the app for the menu layout
 *  over D-Bus first). */
const MENU_MAPPED_TIMEOUT_MS = 15_000;
/** How often X and the bus are re-read while waiting. */
const POLL_MS = 200;
/** How long the runtime works before it asks (`--phase-delay-ms`): time to see its live icon. */
const WORKING_PHASE_MS = 8_000;
/** Where the app's window is moved to, clear of the panel and its menus (the screen is
 *  1280x800, the window 440x620). */
const APP_WINDOW_AT = { x: 800, y: 120 };
/** Pixels around the panel and menus kept in the picture for the README. */
const CROP_MARGIN = 8;

const TOKEN = canary('token');
let tokenFile;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(description, probe, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await probe();
    if (result) return result;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await sleep(POLL_MS);
  }
}

/** The panel's configuration: one top panel with only the systray plugin (xfconf's XML). */
const PANEL_XML = `<?xml version="1.0" encoding="UTF-8"?>
<channel name="xfce4-panel" version="1.0">
  <property name="configver" type="int" value="2"/>
  <property name="panels" type="array">
    <value type="int" value="1"/>
    <property name="panel-1" type="empty">
      <property name="position" type="string" value="p=6;x=0;y=0"/>
      <property name="length" type="uint" value="100"/>
      <property name="position-locked" type="bool" value="true"/>
      <property name="size" type="uint" value="${PANEL_SIZE}"/>
      <property name="plugin-ids" type="array">
        <value type="int" value="1"/>
      </property>
    </property>
  </property>
  <property name="plugins" type="empty">
    <property name="plugin-1" type="string" value="systray">
      <property name="icon-size" type="int" value="24"/>
      <property name="square-icons" type="bool" value="true"/>
    </property>
  </property>
</channel>
`;

/** `dbus-send --session --print-reply ARGS...`'s output. */
async function dbus(...args) {
  return (await run('dbus-send', ['--session', '--print-reply', ...args], { timeout: 20_000 })).stdout;
}

async function nameHasOwner(name) {
  return /boolean true/.test(await dbus('--dest=org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus.NameHasOwner', `string:${name}`));
}

async function watcherProperty(name) {
  return dbus(`--dest=${WATCHER}`, '/StatusNotifierWatcher', 'org.freedesktop.DBus.Properties.Get', `string:${WATCHER}`, `string:${name}`);
}

/** The pid behind bus connection `bus` (`:1.N`). */
async function pidOf(bus) {
  const out = await dbus('--dest=org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus.GetConnectionUnixProcessID', `string:${bus}`);
  return Number(/uint32 (\d+)/.exec(out)[1]);
}

/** The items the real watcher lists, as `{ service, bus, path, pid }`. */
async function registeredItems() {
  const out = await watcherProperty('RegisteredStatusNotifierItems');
  const items = [];
  for (const [, service] of out.matchAll(/string "([^"]+)"/g)) {
    const slash = service.indexOf('/');
    const bus = slash < 0 ? service : service.slice(0, slash);
    const path = slash < 0 ? '/StatusNotifierItem' : service.slice(slash);
    let pid;
    try {
      pid = await pidOf(bus);
    } catch {
      continue; // its connection left meanwhile
    }
    items.push({ service, bus, path, pid });
  }
  return items;
}

/** The dbusmenu layout of the item (gdbus's text form), for its labels. */
async function menuLayoutText(item) {
  const menu = /object path "([^"]+)"/.exec(await dbus(`--dest=${item.bus}`, item.path, 'org.freedesktop.DBus.Properties.Get', 'string:org.kde.StatusNotifierItem', 'string:Menu'))[1];
  return (await run('gdbus', ['call', '--session', '--dest', item.bus, '--object-path', menu, '--method', 'com.canonical.dbusmenu.GetLayout', '--', '0', '-1', '@as []'], { timeout: 20_000 })).stdout;
}

/** The root window's mapped top-level children: `{ id, x, y, width, height }`. */
async function mappedWindows() {
  const { stdout } = await run('xwininfo', ['-root', '-children'], { timeout: 20_000 });
  const windows = [];
  for (const [, id] of stdout.matchAll(/^\s+(0x[0-9a-f]+) /gm)) {
    let info;
    try {
      info = (await run('xwininfo', ['-id', id], { timeout: 20_000 })).stdout;
    } catch {
      continue; // destroyed meanwhile
    }
    if (!/Map State: IsViewable/.test(info)) continue;
    const num = (label) => Number(new RegExp(`${label}:\\s+(-?\\d+)`).exec(info)[1]);
    windows.push({ id, x: num('Absolute upper-left X'), y: num('Absolute upper-left Y'), width: num('Width'), height: num('Height') });
  }
  return windows;
}

/** The `_NET_WM_PID` of window `id`, or undefined. */
async function windowPid(id) {
  try {
    const { stdout } = await run('xprop', ['-id', id, '_NET_WM_PID'], { timeout: 20_000 });
    const match = /= (\d+)/.exec(stdout);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined; // destroyed meanwhile
  }
}

/** The systray plugin's window inside the panel (the panel's one plugin), from the tree. */
async function trayPluginWindow() {
  const { stdout } = await run('xwininfo', ['-root', '-tree'], { timeout: 20_000 });
  const match = /(0x[0-9a-f]+) "wrapper-2\.0": \("wrapper-2\.0" "Wrapper-2\.0"\)\s+(\d+)x(\d+)\+(-?\d+)\+(-?\d+)\s+\+(-?\d+)\+(-?\d+)/g;
  for (const m of stdout.matchAll(match)) {
    const [width, height, x, y] = [Number(m[2]), Number(m[3]), Number(m[6]), Number(m[7])];
    // The plugin sits inside the panel's strip at the top, holding one icon per item; its
    // unmapped 10x10 twins are not in the strip or are smaller than an icon.
    if (x >= 0 && y >= 0 && y < PANEL_SIZE + 2 && width >= 16 && height >= 16) return { id: m[1], width, height, x, y };
  }
  return undefined;
}

/** Captures the whole Xvfb screen as `path` (PNG). */
async function captureScreen(path) {
  await run('import', ['-window', 'root', path], { timeout: 30_000 });
  return path;
}

/** The raw RGB bytes of a region of a PNG. */
async function regionPixels(png, { x, y, width, height }) {
  const { stdout } = await run('convert', [png, '-crop', `${width}x${height}+${x}+${y}`, '+repage', '-depth', '8', 'rgb:-'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024, timeout: 30_000 });
  return stdout;
}

/** How many distinct colours a region holds (1 for a blank one). */
function distinctColours(rgb) {
  const seen = new Set();
  for (let i = 0; i + 2 < rgb.length; i += 3) seen.add((rgb[i] << 16) | (rgb[i + 1] << 8) | rgb[i + 2]);
  return seen.size;
}

/** xdotool with real X input events. */
function xdotool(...args) {
  return run('xdotool', args, { timeout: 20_000 });
}

/**
 * Starts the panel with its own configuration. The stand-in tray host of other files owns the
 * watcher name only while its file runs; the name is waited free first.
 */
export async function env({ stateDir, artifactsDir, fileSlug }) {
  tokenFile = join(stateDir, 'secrets', 'token');
  await writePrivateFile(tokenFile, `${TOKEN}\n`);
  const config = join(stateDir, 'panel-config');
  await mkdir(join(config, 'xfce4', 'xfconf', 'xfce-perchannel-xml'), { recursive: true });
  await writeFile(join(config, 'xfce4', 'xfconf', 'xfce-perchannel-xml', 'xfce4-panel.xml'), PANEL_XML);
  const panelEnv = { ...process.env, XDG_CONFIG_HOME: config, XDG_CACHE_HOME: join(stateDir, 'panel-cache'), XDG_DATA_HOME: join(stateDir, 'panel-data') };
  await waitForBusNameReleased(WATCHER);
  if (await nameHasOwner(XFCONF)) throw new Error(`${XFCONF} is already owned on this session bus: the panel would read another configuration`);
  // Started here, not D-Bus-activated: an activated xfconfd would get the bus daemon's
  // environment and serve the configuration of whoever started the session.
  await startProcess('xfconfd', XFCONFD, [], { env: panelEnv, logPath: join(artifactsDir, `${fileSlug}--xfconfd.stderr.log`) });
  await waitFor(`xfconfd to own ${XFCONF}`, () => nameHasOwner(XFCONF), PANEL_READY_TIMEOUT_MS);
  await startProcess('xfce4-panel', 'xfce4-panel', ['--disable-wm-check'], { env: panelEnv, logPath: join(artifactsDir, `${fileSlug}--xfce4-panel.stderr.log`) });
  await waitFor('xfce4-panel to own the StatusNotifierWatcher name', () => nameHasOwner(WATCHER), PANEL_READY_TIMEOUT_MS);
  await waitFor('xfce4-panel to register its StatusNotifierHost', async () => /boolean true/.test(await watcherProperty('IsStatusNotifierHostRegistered')), PANEL_READY_TIMEOUT_MS);
  return {};
}

// Proves: the app's StatusNotifierItem is registered with xfce4-panel's own watcher and shown as
// an icon in its status tray; the icon's pixels change when the agent starts needing you; a
// right click with real X input maps the panel's menu of it, hovering the runtime's entry maps
// its submenu with the agent's actions (screenshot kept); and clicking Approve in that submenu
// reaches the runtime.
test('xfce4-panel shows the tray icon and its menu with the agent actions', async (t) => {
  const name = 'panel-agent';
  const app = await t.openApp();
  const pid = await t.appPid();
  // With no window manager the app's window maps at the screen's top left, over the panel:
  // move it out of the way of the icon and the menus.
  const appWindows = await waitFor("the app's window to be mapped", async () => {
    const found = [];
    for (const w of await mappedWindows()) if (await windowPid(w.id) === pid) found.push(w);
    return found.length > 0 ? found : undefined;
  }, ICON_SHOWN_TIMEOUT_MS);
  for (const w of appWindows) await xdotool('windowmove', w.id, String(APP_WINDOW_AT.x), String(APP_WINDOW_AT.y));
  const item = await waitFor('the app to register its item with the real watcher', async () => (await registeredItems()).find((i) => i.pid === pid), ICON_SHOWN_TIMEOUT_MS);
  assert.match(item.service, /^:\d+\.\d+/, 'the item registered under its bus connection');

  const plugin = await waitFor('the status tray to show an icon', trayPluginWindow, ICON_SHOWN_TIMEOUT_MS);
  const icon = { x: plugin.x, y: plugin.y, width: Math.min(plugin.width, PANEL_SIZE), height: Math.min(plugin.height, PANEL_SIZE) };

  // Idle (no runtime), then live (a runtime working), then needs-you (it asks for approval):
  // the icon's pixels change at each step.
  const drawn = async (label) => regionPixels(await captureScreen(join(t.artifactsDir, `${t.fileSlug}--${label}.png`)), icon);
  const idle = await drawn('idle');
  assert.ok(distinctColours(idle) > 1, 'the icon region is not blank');
  await t.startDemoRuntime(name, { args: ['--token-file', tokenFile, '--scenario', 'approval', '--phase-delay-ms', String(WORKING_PHASE_MS)] });
  await waitForAgentRow(app, `${name} to be working`, name, (r) => r.state === 'working');
  const live = await waitFor('the live icon to be drawn', async () => {
    const now = await drawn('live');
    return now.equals(idle) ? undefined : now;
  }, ICON_SHOWN_TIMEOUT_MS);
  await waitForAgentRow(app, `${name} to ask for approval`, name, (r) => r.state === 'needs-approval', WORKING_PHASE_MS + ICON_SHOWN_TIMEOUT_MS);
  await waitFor('the needs-you icon to be drawn', async () => {
    const now = await drawn('needs-you');
    return !now.equals(live) && !now.equals(idle);
  }, ICON_SHOWN_TIMEOUT_MS);
  const layout = await menuLayoutText(item);
  for (const label of ['cargo test --workspace', 'Approve', 'Deny\u2026', `${name} \u2014 Needs approval: Run the test suite?`]) {
    assert.ok(layout.includes(label), `the menu the panel reads holds "${label}"`);
  }

  // Right click on the icon: the panel shows the item's menu.
  const topLevel = new Set((await mappedWindows()).map((w) => w.id));
  await xdotool('mousemove', '--sync', String(icon.x + Math.floor(icon.width / 2)), String(icon.y + Math.floor(icon.height / 2)));
  await xdotool('click', '3');
  const menu = await waitFor('the menu window to be mapped', async () => (await mappedWindows()).find((w) => !topLevel.has(w.id) && w.width > 50 && w.height > 50), MENU_MAPPED_TIMEOUT_MS);
  assert.ok(menu.y >= PANEL_SIZE - 2, `the menu opens below the top panel (at y ${menu.y})`);

  // The runtime that needs you is the menu's first entry: hovering it opens its submenu.
  const firstEntryY = menu.y + 16;
  await xdotool('mousemove', '--sync', String(menu.x + Math.floor(menu.width / 2)), String(firstEntryY));
  const shown = new Set([...topLevel, menu.id]);
  const submenu = await waitFor("the runtime's submenu to be mapped", async () => (await mappedWindows()).find((w) => !shown.has(w.id) && w.width > 30 && w.height > 30), MENU_MAPPED_TIMEOUT_MS);
  await sleep(500); // the submenu's slide-in has no event to wait on; let it paint
  const shot = await captureScreen(join(t.artifactsDir, `${t.fileSlug}--menu.png`));
  for (const [what, region] of [['menu', menu], ['submenu', submenu]]) {
    assert.ok(distinctColours(await regionPixels(shot, region)) > 2, `the ${what} is drawn (not blank)`);
  }
  const right = Math.max(plugin.x + plugin.width, menu.x + menu.width, submenu.x + submenu.width) + CROP_MARGIN;
  const bottom = Math.max(menu.y + menu.height, submenu.y + submenu.height) + CROP_MARGIN;
  const cropped = join(t.artifactsDir, `${t.fileSlug}--menu-cropped.png`);
  await run('convert', [shot, '-crop', `${Math.min(right, 1280)}x${bottom}+0+0`, '+repage', cropped], { timeout: 30_000 });
  if (process.env.SUPERCODE_UPDATE_SCREENSHOT === '1') {
    await copyFile(cropped, DOCS_SCREENSHOT);
    console.log(`       updated ${DOCS_SCREENSHOT}`);
  }

  // The submenu holds the command (greyed out), Approve, Deny…, Attach, each one entry high:
  // Approve is the second of four (issue 31).
  await xdotool('mousemove', '--sync', String(submenu.x + Math.floor(submenu.width / 2)), String(submenu.y + Math.floor((submenu.height * 3) / 8)));
  await sleep(300); // GTK selects the entry under the pointer on motion
  await xdotool('click', '1');
  const entry = await waitForListed(t, `${name} to move on after Approve`, name, (e) => e.state?.value === 'working' || e.state?.value === 'needs-input');
  assert.ok(['working', 'needs-input'].includes(entry.state.value), 'Approve clicked in the panel reached the runtime');
  const done = await waitForAgentRow(app, `${name} to reach needs-input`, name, (r) => r.state === 'needs-input');
  assert.equal(done.title, 'Tests pass. Anything else?', 'it was approved, not denied');
  assert.equal((await listed(t, name)).state.value, 'needs-input');
});
