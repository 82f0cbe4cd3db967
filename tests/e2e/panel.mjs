// A real panel for the tray (issue 15): Debian's xfce4-panel, whose systray plugin is a
// StatusNotifierWatcher and host, run on the suite's Xvfb and session bus instead of the stand-in
// tray host, with a configuration made for the test file (its own XDG_CONFIG_HOME: one panel at
// the top holding only the systray plugin, and its own xfconfd serving that configuration). The
// app's icon is found on screen, its menu opened and clicked with real X input (xdotool), and the
// screen captured (ImageMagick's `import`).
//
//   export async function env(ctx) { await startPanel(ctx); return {}; }
//   const icon = await trayIcon(pid);                     // its place in the panel
//   const { menu, submenu } = await openRuntimeSubmenu(icon);
//   await clickEntry(submenu, 1, 4);                      // the second of four entries
//
// No window manager runs: the panel is started with --disable-wm-check, and GTK's menus are
// override-redirect windows, which need none.

import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { startProcess, waitForBusNameReleased } from './processes.mjs';

const run = promisify(execFile);

const WATCHER = 'org.kde.StatusNotifierWatcher';
const XFCONF = 'org.xfce.Xfconf';
const XFCONFD = '/usr/lib/x86_64-linux-gnu/xfce4/xfconf/xfconfd';

/** The panel's height in pixels, as configured below. */
export const PANEL_SIZE = 32;
/** How long the panel may take to own the watcher name and register its host (a GTK start and
 *  its external plugin process on a loaded machine). */
const PANEL_READY_TIMEOUT_MS = 60_000;
/** How long the app's item may take to show as an icon once the app runs (a debug build's
 *  start, then the panel loading the icon). */
export const ICON_SHOWN_TIMEOUT_MS = 60_000;
/** How long a click may take to map a menu window (the panel asks the app for the menu layout
 *  over D-Bus first). */
const MENU_MAPPED_TIMEOUT_MS = 15_000;
/** How often X and the bus are re-read while waiting. */
const POLL_MS = 200;
/** Where the app's window is moved to, clear of the panel and its menus (the screen is
 *  1280x800, the window 440x620). */
const APP_WINDOW_AT = { x: 800, y: 120 };
/** Pixels around the panel and menus kept in a picture of them. */
const CROP_MARGIN = 8;
/** The screen's width (scripts/test-env.sh starts Xvfb at 1280x800). */
const SCREEN_WIDTH = 1280;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it resolves truthy (returned) or `timeoutMs` passes (then throws). */
export async function waitFor(description, probe, timeoutMs) {
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

/**
 * Starts the panel with its own configuration; call it from a test file's `env(ctx)`, so the
 * panel runs before the app and until the file ends. The stand-in tray host of other files owns
 * the watcher name only while its file runs; the name is waited free first.
 */
export async function startPanel({ stateDir, artifactsDir, fileSlug }) {
  const config = join(stateDir, 'panel-config');
  await mkdir(join(config, 'xfce4', 'xfconf', 'xfce-perchannel-xml'), { recursive: true });
  await writeFile(join(config, 'xfce4', 'xfconf', 'xfce-perchannel-xml', 'xfce4-panel.xml'), PANEL_XML);
  const panelEnv = { ...process.env, XDG_CONFIG_HOME: config, XDG_CACHE_HOME: join(stateDir, 'panel-cache'), XDG_DATA_HOME: join(stateDir, 'panel-data') };
  // The previous file's panel and xfconfd have been stopped, but the bus may release their
  // names late; an xfconfd still serving then would hand this panel another configuration.
  await waitForBusNameReleased(WATCHER);
  await waitForBusNameReleased(XFCONF);
  // Started here, not D-Bus-activated: an activated xfconfd would get the bus daemon's
  // environment and serve the configuration of whoever started the session.
  await startProcess('xfconfd', XFCONFD, [], { env: panelEnv, logPath: join(artifactsDir, `${fileSlug}--xfconfd.stderr.log`) });
  await waitFor(`xfconfd to own ${XFCONF}`, () => nameHasOwner(XFCONF), PANEL_READY_TIMEOUT_MS);
  await startProcess('xfce4-panel', 'xfce4-panel', ['--disable-wm-check'], { env: panelEnv, logPath: join(artifactsDir, `${fileSlug}--xfce4-panel.stderr.log`) });
  await waitFor('xfce4-panel to own the StatusNotifierWatcher name', () => nameHasOwner(WATCHER), PANEL_READY_TIMEOUT_MS);
  await waitFor('xfce4-panel to register its StatusNotifierHost', async () => /boolean true/.test(await watcherProperty('IsStatusNotifierHostRegistered')), PANEL_READY_TIMEOUT_MS);
}

/** The items the real watcher lists, as `{ service, bus, path, pid }`. */
export async function registeredItems() {
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

/** Waits until the app process `pid` has registered its item with the panel's watcher. */
export function itemOf(pid) {
  return waitFor('the app to register its item with the real watcher', async () => (await registeredItems()).find((i) => i.pid === pid), ICON_SHOWN_TIMEOUT_MS);
}

/** The item's `Status` property (`Active`, `NeedsAttention`, `Passive`). */
export async function itemStatus(item) {
  const out = await dbus(`--dest=${item.bus}`, item.path, 'org.freedesktop.DBus.Properties.Get', 'string:org.kde.StatusNotifierItem', 'string:Status');
  return /string "([^"]*)"/.exec(out)?.[1];
}

/** The dbusmenu layout of the item (gdbus's text form), for its labels. */
export async function menuLayoutText(item) {
  const menu = /object path "([^"]+)"/.exec(await dbus(`--dest=${item.bus}`, item.path, 'org.freedesktop.DBus.Properties.Get', 'string:org.kde.StatusNotifierItem', 'string:Menu'))[1];
  return (await run('gdbus', ['call', '--session', '--dest', item.bus, '--object-path', menu, '--method', 'com.canonical.dbusmenu.GetLayout', '--', '0', '-1', '@as []'], { timeout: 20_000 })).stdout;
}

/**
 * The labels of the item's menu in the order a depth-first walk meets them (an entry, then its
 * submenu's entries), read from the layout the panel reads.
 */
export async function menuLabelsInOrder(item) {
  const text = await menuLayoutText(item);
  // GVariant text quotes a string with '…', or with "…" when it holds a single quote.
  return [...text.matchAll(/'label': <(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")>/g)].map((m) => (m[1] ?? m[2]).replace(/\\(.)/g, '$1').replace(/__|_/g, (u) => (u === '__' ? '_' : '')));
}

/** The root window's mapped top-level children: `{ id, x, y, width, height }`. */
export async function mappedWindows() {
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

/**
 * With no window manager the app's window maps at the screen's top left, over the panel: this
 * waits for the windows of process `pid` and moves them out of the way of the icon and the menus.
 */
export async function moveAppWindowAside(pid) {
  const appWindows = await waitFor("the app's window to be mapped", async () => {
    const found = [];
    for (const w of await mappedWindows()) if (await windowPid(w.id) === pid) found.push(w);
    return found.length > 0 ? found : undefined;
  }, ICON_SHOWN_TIMEOUT_MS);
  for (const w of appWindows) await xdotool('windowmove', w.id, String(APP_WINDOW_AT.x), String(APP_WINDOW_AT.y));
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

/**
 * Waits until the status tray shows an icon; returns `{ plugin, icon }`: the plugin's window and
 * the icon's region in it (the app's is the only item).
 */
export async function trayIcon() {
  const plugin = await waitFor('the status tray to show an icon', trayPluginWindow, ICON_SHOWN_TIMEOUT_MS);
  return { plugin, icon: { x: plugin.x, y: plugin.y, width: Math.min(plugin.width, PANEL_SIZE), height: Math.min(plugin.height, PANEL_SIZE) } };
}

/** Captures the whole Xvfb screen as `path` (PNG). */
export async function captureScreen(path) {
  await run('import', ['-window', 'root', path], { timeout: 30_000 });
  return path;
}

/** The raw RGB bytes of a region of a PNG. */
export async function regionPixels(png, { x, y, width, height }) {
  const { stdout } = await run('convert', [png, '-crop', `${width}x${height}+${x}+${y}`, '+repage', '-depth', '8', 'rgb:-'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024, timeout: 30_000 });
  return stdout;
}

/** How many distinct colours a region holds (1 for a blank one). */
export function distinctColours(rgb) {
  const seen = new Set();
  for (let i = 0; i + 2 < rgb.length; i += 3) seen.add((rgb[i] << 16) | (rgb[i + 1] << 8) | rgb[i + 2]);
  return seen.size;
}

/** xdotool with real X input events. */
function xdotool(...args) {
  return run('xdotool', args, { timeout: 20_000 });
}

/**
 * Right-clicks the icon (the panel shows the item's menu) and hovers the menu's first entry (a
 * runtime that needs you comes first), which maps its submenu. Returns both windows once the
 * submenu is mapped; the screen is not captured.
 */
export async function openRuntimeSubmenu(icon) {
  const topLevel = new Set((await mappedWindows()).map((w) => w.id));
  await xdotool('mousemove', '--sync', String(icon.x + Math.floor(icon.width / 2)), String(icon.y + Math.floor(icon.height / 2)));
  await xdotool('click', '3');
  const menu = await waitFor('the menu window to be mapped', async () => (await mappedWindows()).find((w) => !topLevel.has(w.id) && w.width > 50 && w.height > 50), MENU_MAPPED_TIMEOUT_MS);
  if (menu.y < PANEL_SIZE - 2) throw new Error(`the menu opened over the top panel (at y ${menu.y}), not below it`);
  const firstEntryY = menu.y + 16;
  await xdotool('mousemove', '--sync', String(menu.x + Math.floor(menu.width / 2)), String(firstEntryY));
  const shown = new Set([...topLevel, menu.id]);
  const submenu = await waitFor("the runtime's submenu to be mapped", async () => (await mappedWindows()).find((w) => !shown.has(w.id) && w.width > 30 && w.height > 30), MENU_MAPPED_TIMEOUT_MS);
  await sleep(500); // the submenu's slide-in has no event to wait on; let it paint
  return { menu, submenu };
}

/**
 * Clicks entry `index` of the `count` entries of `submenu` (the agent's submenu has no
 * separators, so each entry is one equal share of its height).
 */
export async function clickEntry(submenu, index, count) {
  const y = submenu.y + Math.floor(((index + 0.5) * submenu.height) / count);
  await xdotool('mousemove', '--sync', String(submenu.x + Math.floor(submenu.width / 2)), String(y));
  await sleep(300); // GTK selects the entry under the pointer on motion
  await xdotool('click', '1');
}

/** Crops `shot` to the panel's left part with the open menus (and a margin) as `path`. */
export async function cropToMenus(shot, { plugin, menu, submenu }, path) {
  const right = Math.max(plugin.x + plugin.width, menu.x + menu.width, submenu.x + submenu.width) + CROP_MARGIN;
  const bottom = Math.max(menu.y + menu.height, submenu.y + submenu.height) + CROP_MARGIN;
  await run('convert', [shot, '-crop', `${Math.min(right, SCREEN_WIDTH)}x${bottom}+0+0`, '+repage', path], { timeout: 30_000 });
  return path;
}
