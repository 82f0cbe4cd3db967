// The tray as a desktop sees it. Under Xvfb no panel shows the app's tray icon, so `tray-host.py`
// plays the panel: it owns org.kde.StatusNotifierWatcher on the test's private session bus,
// records the StatusNotifierItem the app (libayatana-appindicator) registers, and reads and
// clicks its menu over com.canonical.dbusmenu, exactly as a tray host does. This module starts
// it and turns its JSON-lines protocol into `TrayHost` methods.
//
//   export async function env(ctx) { host = await startTrayHost(ctx); return {}; }
//   const [pid] = await t.appPids();
//   const tray = await host.itemOf(pid);               // the item that app registered
//   await tray.waitForMenu('Quit listed', (m) => m.some((i) => i.label === 'Quit'));
//   await tray.click('Quit');

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startStandIn } from './processes.mjs';

const HOST_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'tray-host.py');

/** One request to the host: it waits up to 20 s for the app's D-Bus answer itself. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long a freshly started app may take to register its tray item: a debug build starting a
 *  webview on a loaded 2-core CI machine is slow. */
export const ITEM_REGISTERED_TIMEOUT_MS = 60_000;
/** How long the app process may take to appear after the session request launches it. */
const APP_STARTED_TIMEOUT_MS = 60_000;
/** How long the menu or icon may take to show a change the app noticed (a rescan, a rebuild). */
export const TRAY_UPDATE_TIMEOUT_MS = 30_000;
/** How often the menu and icon are re-read while waiting for a change. */
const TRAY_POLL_INTERVAL_MS = 100;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts the stand-in tray host on the session bus (the one the app will use). Call it from a
 * test file's `env(ctx)`, so it is there before the app starts and lives until the file ends.
 */
export async function startTrayHost({ artifactsDir, fileSlug, menuUpdates = false }) {
  // menuUpdates: also announce every dbusmenu LayoutUpdated / ItemsPropertiesUpdated signal,
  // with its CLOCK_MONOTONIC arrival time, as `{"event":"menu-update",...}` lines (the benchmark).
  const proc = await startStandIn('tray host', HOST_SCRIPT, menuUpdates ? ['--menu-updates'] : [], {
    logPath: join(artifactsDir, `${fileSlug}--tray-host.stderr.log`),
  });
  return new TrayHost(proc);
}

/** The stand-in tray host: what the watcher recorded, and D-Bus calls made on the test's behalf. */
export class TrayHost {
  constructor(proc) {
    this.proc = proc;
    this.nextId = 1;
  }

  /** Sends one request and resolves with its result (rejects with the host's error). */
  async request(op, args = {}) {
    const id = this.nextId++;
    const answer = this.proc.waitForLine(new RegExp(`^\\{"id":${id},`), REQUEST_TIMEOUT_MS, `the answer to request ${id} (${op})`);
    this.proc.child.stdin.write(`${JSON.stringify({ id, op, ...args })}\n`);
    const reply = JSON.parse(await answer);
    if (!reply.ok) throw new Error(`tray host: ${op}: ${reply.error}`);
    return reply.result;
  }

  /** The items registered with the watcher now: `[{ service, bus, path, pid }]`. */
  items() {
    return this.request('items');
  }

  /**
   * Waits until the app process `pid` has registered a tray item and returns it as a `TrayItem`.
   * Items are matched by the pid behind their bus connection, so an item left by an earlier app
   * of the same file is never mistaken for this one.
   */
  async itemOf(pid, timeoutMs = ITEM_REGISTERED_TIMEOUT_MS) {
    const item = await waitUntil(`the app (pid ${pid}) to register a tray item with the watcher`, async () => (await this.items()).find((i) => i.pid === pid), timeoutMs);
    return new TrayItem(this, item);
  }
}

/**
 * Launches the app of a file whose `env` sets `SUPERCODE_TRAY_OPEN_WINDOW=0` and waits for its
 * process and its tray item. tauri-driver completes the session request only once a webview
 * exists, so that request is left pending: returns `{ session, settled(), pid, tray }`, where
 * `session` resolves once a window exists and `settled()` says whether it has yet.
 */
export async function openAppInTray(t, host) {
  let settled = false;
  const session = t.openApp().finally(() => {
    settled = true;
  });
  session.catch(() => {}); // awaited later; a failure before that surfaces there
  const [pid] = await t.waitUntil('the app process to start', async () => {
    const pids = await t.appPids();
    return pids.length > 0 ? pids : undefined;
  }, APP_STARTED_TIMEOUT_MS);
  const tray = await host.itemOf(pid);
  return { session, settled: () => settled, pid, tray };
}

/** One registered StatusNotifierItem: its properties, icon and menu. */
export class TrayItem {
  constructor(host, { bus, path, pid, service }) {
    this.host = host;
    this.bus = bus;
    this.path = path;
    this.pid = pid;
    this.service = service;
  }

  /** Whether the watcher still lists this item (it forgets an item whose connection left the bus). */
  async registered() {
    return (await this.host.items()).some((i) => i.service === this.service);
  }

  /** The item's org.kde.StatusNotifierItem properties (IconPixmap entries come as digests). */
  properties() {
    return this.host.request('properties', { bus: this.bus, path: this.path });
  }

  /**
   * What the icon looks like now, as a host would draw it: `{ source, sha256 }` where source says
   * whether it came from IconPixmap or from the IconName file (libayatana-appindicator sends an
   * icon file path, with IconThemePath its folder). Undefined while the named file is being
   * replaced (the app writes a new file per change and deletes the old one).
   */
  async icon() {
    const props = await this.properties();
    if (Array.isArray(props.IconPixmap) && props.IconPixmap.length > 0) {
      const largest = props.IconPixmap.reduce((a, b) => (a.width * a.height >= b.width * b.height ? a : b));
      return { source: 'IconPixmap', sha256: largest.sha256, properties: props };
    }
    const name = props.IconName ?? '';
    if (!name) throw new Error('the tray item has neither IconPixmap nor IconName');
    const candidates = isAbsolute(name) ? [name] : [join(props.IconThemePath ?? '', `${name}.png`), join(props.IconThemePath ?? '', name)];
    for (const file of candidates) {
      try {
        const bytes = await readFile(file);
        return { source: 'IconName', file, sha256: createHash('sha256').update(bytes).digest('hex'), properties: props };
      } catch (error) {
        if (error.code !== 'ENOENT') throw error;
      }
    }
    return undefined;
  }

  /** The menu path from the item's Menu property. */
  async menuPath() {
    if (!this.cachedMenuPath) {
      const { Menu } = await this.properties();
      if (!Menu || Menu === '/') throw new Error('the tray item exports no menu (Menu property empty)');
      this.cachedMenuPath = Menu;
    }
    return this.cachedMenuPath;
  }

  /**
   * The menu as a host shows it: the root's visible children in order, as
   * `{ id, label, type, enabled, toggleType, checked, children }` (type "separator" or
   * "standard"; labels with GTK mnemonic underscores resolved; `children` the visible entries of
   * a submenu, such as a runtime's Attach and agent actions, empty otherwise).
   */
  async menu() {
    const { root } = await this.host.request('layout', { bus: this.bus, path: await this.menuPath() });
    return visibleEntries(root);
  }

  /** Polls the menu until `predicate(menu)` holds; returns the menu. */
  waitForMenu(description, predicate, timeoutMs = TRAY_UPDATE_TIMEOUT_MS) {
    return waitUntil(description, async () => {
      const menu = await this.menu();
      return predicate(menu) ? menu : undefined;
    }, timeoutMs);
  }

  /** Polls the icon until `predicate(icon)` holds; returns the icon. */
  waitForIcon(description, predicate, timeoutMs = TRAY_UPDATE_TIMEOUT_MS) {
    return waitUntil(description, async () => {
      const icon = await this.icon();
      return icon && predicate(icon) ? icon : undefined;
    }, timeoutMs);
  }

  /**
   * Clicks the enabled menu entry whose label is `label` (a string, or a RegExp to match), as a
   * host does when the user picks it: dbusmenu `Event(id, "clicked", 0, timestamp)`. Waits for
   * the entry to be listed first; returns the entry clicked. With `within` (a label or RegExp),
   * the entry is looked for only in the submenu so labelled.
   *
   * The app rebuilds its whole menu on every inventory change, and the new menu's entries get new
   * ids; an id read just before a rebuild is then refused ("does not refer to a menu item"). A
   * panel re-reads the menu when it changes; so does this: it reads it again and clicks again.
   */
  async click(label, timeoutMs = TRAY_UPDATE_TIMEOUT_MS, { within } = {}) {
    const is = (pattern, text) => (pattern instanceof RegExp ? pattern.test(text) : text === pattern);
    const matches = (entry) => entry.enabled && is(label, entry.label);
    const scope = (menu) => (within === undefined ? menu : menu.find((e) => is(within, e.label))?.children ?? []);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const menu = await this.waitForMenu(`a menu entry ${label} to click`, (m) => scope(m).some(matches), Math.max(deadline - Date.now(), 0));
      const entry = scope(menu).find(matches);
      try {
        await this.host.request('click', { bus: this.bus, path: await this.menuPath(), item: entry.id });
        return entry;
      } catch (error) {
        if (!/does not refer to a menu item/.test(error.message) || Date.now() >= deadline) throw error;
      }
    }
  }
}

function visibleEntries(node) {
  return (node.children ?? []).filter((child) => child.properties.visible !== false).map(menuEntry);
}

function menuEntry(node) {
  const p = node.properties;
  return {
    children: visibleEntries(node),
    id: node.id,
    // dbusmenu labels carry GTK mnemonics: "_" marks the access key, "__" is a literal underscore.
    label: typeof p.label === 'string' ? p.label.replace(/__|_/g, (m) => (m === '__' ? '_' : '')) : '',
    type: p.type ?? 'standard',
    enabled: p.enabled !== false,
    toggleType: p['toggle-type'] ?? '',
    checked: p['toggle-state'] === 1,
  };
}

async function waitUntil(description, probe, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await probe();
    if (result) return result;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await sleep(TRAY_POLL_INTERVAL_MS);
  }
}

/** The labels of `menu`'s entries (separators as "---"), for assertion messages. */
export function menuLabels(menu) {
  return menu.map((entry) => (entry.type === 'separator' ? '---' : entry.label));
}
