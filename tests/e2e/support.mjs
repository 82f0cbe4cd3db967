// What the app's end-to-end tests share beyond the harness: reading and writing the files the
// app watches (receipts, `$CANON_HOME`), looking at the window's rows, recording everything the
// backend sends to the webview, a one-time-URL "browser", the fake Canon, and searching for
// leaked secrets.
//
// Secrets found by these helpers are never put in an assertion message: a failing search says
// where it found one, not what it found.

import { randomBytes, randomUUID } from 'node:crypto';
import { access, chmod, constants as fsConstants, mkdir, open, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

import { assert } from './harness.mjs';
import { isRunning, startProcess, stopPids } from './processes.mjs';

/** How long the window may take to show a change the backend noticed (an event, a re-render). */
export const UI_UPDATE_TIMEOUT_MS = 30_000;

/** How long the fake Canon may take to announce its address. */
const CANON_READY_TIMEOUT_MS = 30_000;

/** A fresh, unmistakable secret value whose leaks the tests look for. */
export function canary(label) {
  return `canary-${label}-${randomBytes(16).toString('hex')}`;
}

// ---- files -----------------------------------------------------------------------------------

/** Writes `text` to `path` atomically (temp file + rename in the same directory), mode 0600. */
export async function writePrivateFile(path, text) {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.${process.pid}.tmp`);
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
}

/** Writes `value` the way `@canonmsg/core` writes its files: `JSON.stringify(value, null, 2)`, 0600. */
export function writeCanonJson(path, value) {
  return writePrivateFile(path, JSON.stringify(value, null, 2));
}

/** Parses a JSON file, or undefined when it does not exist. */
export async function readJsonIfExists(path) {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** An `agents.json` entry for `profile`, as the package writes one after registration. */
export function agentProfile(profile, { apiKey = canary('api-key') } = {}) {
  return { apiKey, agentId: `agent-${profile}`, agentName: profile, registeredAt: new Date().toISOString() };
}

/** Writes `$CANON_HOME/agents.json` with one entry per profile (seed format). */
export function writeAgents(canonHome, profiles) {
  return writeCanonJson(join(canonHome, 'agents.json'), Object.fromEntries(profiles.map((p) => [p, agentProfile(p)])));
}

/** Writes `$CANON_HOME/pending-registrations.json` with one not-yet-submitted entry per profile. */
export function writePendingRegistrations(canonHome, profiles, { clientType = 'claude-code' } = {}) {
  const now = new Date().toISOString();
  const entries = profiles.map((profile) => [profile, { profile, clientType, localRegistrationId: randomUUID(), createdAt: now, updatedAt: now }]);
  return writeCanonJson(join(canonHome, 'pending-registrations.json'), Object.fromEntries(entries));
}

/** The receipts in `dir` (parsed; dot-files and non-receipts skipped), with their file paths. */
export async function readReceipts(dir) {
  let names;
  try {
    names = await readdir(dir);
  } catch (error) {
    if (error.code === 'ENOENT') return [];
    throw error;
  }
  const receipts = [];
  for (const name of names.filter((n) => /^lre_[0-9a-f]{32}\.json$/.test(n))) {
    const receipt = await readJsonIfExists(join(dir, name));
    if (receipt) receipts.push({ ...receipt, file: join(dir, name) });
  }
  return receipts;
}

/** The receipt whose `runtimeId` is `runtimeId` (e.g. `demo:alpha`), or undefined. */
export async function receiptOf(dir, runtimeId) {
  return (await readReceipts(dir)).find((r) => r.runtimeId === runtimeId);
}

/**
 * Stops processes the harness did not start (a revived runtime runs detached, in its own
 * session): each of `pids`, plus whatever process the receipts of `runtimeIds` in `dir` name now.
 */
export async function stopDetachedRuntimes(dir, runtimeIds, pids = []) {
  const candidates = new Set(pids);
  for (const receipt of await readReceipts(dir).catch(() => [])) {
    if (runtimeIds.includes(receipt.runtimeId)) candidates.add(receipt.process.pid);
  }
  const alive = [];
  for (const pid of candidates) if (await isRunning(pid)) alive.push(pid);
  await stopPids(alive);
}

/** A fresh receipt endpoint: `lre_` + 32 lowercase hex digits. */
export function newEndpoint() {
  return `lre_${randomBytes(16).toString('hex')}`;
}

/** Writes a receipt by hand, as a foreign runtime would: 0600 file in the 0700 receipt dir. */
export async function writeReceipt(dir, receipt) {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const path = join(dir, `${receipt.endpoint}.json`);
  await writePrivateFile(path, JSON.stringify(receipt, null, 2));
  return path;
}

/** Field 22 of /proc/<pid>/stat: the process start time in clock ticks since boot. */
export async function processStartTime(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
}

/** Every regular file under `dir`, recursively (none when it does not exist). */
export async function filesUnder(dir) {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (error.code === 'ENOENT') return [];
    throw error;
  }
  const files = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await filesUnder(path)));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

/** The command line of every process this user can read, as `{ pid, args }`. */
export async function processCommandLines() {
  const lines = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const raw = await readFile(`/proc/${name}/cmdline`, 'utf8');
      lines.push({ pid: Number(name), args: raw.split('\0').join(' ') });
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return lines;
}

// ---- the window ------------------------------------------------------------------------------

/** CSS for the row of runtime `id` (inventory ids may contain `:`, so the value is quoted). */
export function rowSelector(id) {
  return `[data-testid="runtime-row"][data-runtime-id=${JSON.stringify(id)}]`;
}

/** The runtime rows the window shows now: `{ id, name, status, badge }` in display order. */
export function runtimeRows(app) {
  return app.execute(`return [...document.querySelectorAll('[data-testid="runtime-row"]')].map((row) => ({
    id: row.dataset.runtimeId,
    name: row.querySelector('.row-name').textContent,
    status: row.dataset.status,
    origin: row.dataset.origin,
    badge: row.querySelector('[data-testid="runtime-status"]').textContent,
  }));`);
}

/** The pending-registration rows the window shows now: `{ profile, state }`. */
export function pendingRows(app) {
  return app.execute(`return [...document.querySelectorAll('[data-testid="pending-row"]')].map((row) => ({
    profile: row.dataset.profile,
    state: row.dataset.state,
  }));`);
}

/** Waits until the window shows a runtime row named `name` for which `predicate(row)` holds. */
export function waitForRow(app, description, name, predicate = () => true, timeoutMs = UI_UPDATE_TIMEOUT_MS) {
  return app.waitFor(description, async () => (await runtimeRows(app)).find((row) => row.name === name && predicate(row)), timeoutMs);
}

/**
 * Waits until the element matching `css` shows text matching `pattern`, and returns the text.
 * (Confirmations fade in, and WebDriver reports no text for an element not yet visible.)
 */
export async function waitForText(app, css, pattern, timeoutMs = UI_UPDATE_TIMEOUT_MS) {
  let last = '';
  return app.waitFor(
    `${css} to show ${pattern}`,
    async () => {
      const [element] = await app.findAll(css);
      last = element ? await element.text() : '';
      return pattern.test(last) ? last : undefined;
    },
    timeoutMs,
  );
}

/** Clicks the element matching `css` inside the row of runtime `id`. */
export async function clickInRow(app, id, css) {
  const button = await app.waitForElement(`${rowSelector(id)} ${css}`);
  await button.click();
}

/** Marks the current page so a later `pageWasNotReloaded` can prove no reload happened since. */
export async function markPage(app) {
  const mark = randomUUID();
  await app.execute('window.__e2ePageMark = arguments[0];', [mark]);
  return mark;
}

/** True when the page still carries `mark`, i.e. it was not reloaded or replaced since `markPage`. */
export async function pageStillMarked(app, mark) {
  return (await app.execute('return window.__e2ePageMark ?? null;')) === mark;
}

/**
 * Saves a screenshot once the window has painted what its DOM holds now. WebKitGTK's WebDriver
 * screenshot returns the last frame it composited, which can lag a just-made DOM change; two
 * animation frames later, that change has been painted.
 */
export async function paintedScreenshot(t, app, label) {
  await app.executeAsync(`
    const done = arguments[arguments.length - 1];
    requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
  `);
  return t.screenshot(app, label);
}

// ---- recording what reaches the webview ------------------------------------------------------

/**
 * Starts recording, in the page, everything the backend hands to JavaScript: every command
 * response and error and every event payload (all arrive through Tauri's callback table, which
 * `__TAURI_INTERNALS__.runCallback` looks up), and every DOM text and attribute value ever set.
 *
 * `__TAURI_INTERNALS__.invoke` itself is a non-writable property, so it cannot be wrapped;
 * instead each callback already registered (the window's event listeners) is replaced with a
 * recording wrapper, and the table's `set` is shadowed so callbacks registered later (each
 * invoke's resolve/reject pair, new listeners) are wrapped as they are added. That sees exactly
 * what `runCallback` delivers, which is everything the backend sends.
 */
export async function startRecording(app) {
  const result = await app.execute(`
    const internals = window.__TAURI_INTERNALS__;
    if (!internals || !(internals.callbacks instanceof Map)) return 'no __TAURI_INTERNALS__.callbacks table';
    if (window.__e2eIpcLog) return 'installed';
    const ipcLog = (window.__e2eIpcLog = []);
    const asText = (data) => {
      if (data instanceof ArrayBuffer) return new TextDecoder().decode(data);
      if (ArrayBuffer.isView(data)) return new TextDecoder().decode(data);
      try { return JSON.stringify(data) ?? String(data); } catch (e) { return String(data); }
    };
    const wrap = (fn) => {
      if (typeof fn !== 'function' || fn.__e2eRecorded) return fn;
      const recorded = function (data) { ipcLog.push(asText(data)); return fn.apply(this, arguments); };
      recorded.__e2eRecorded = true;
      return recorded;
    };
    const table = internals.callbacks;
    const set = Map.prototype.set;
    for (const [id, fn] of [...table]) set.call(table, id, wrap(fn));
    Object.defineProperty(table, 'set', { value: function (id, fn) { return set.call(this, id, wrap(fn)); } });

    const domLog = (window.__e2eDomLog = [document.documentElement.outerHTML]);
    new MutationObserver((mutations) => {
      for (const m of mutations) {
        if (m.type === 'attributes') domLog.push(m.attributeName + '=' + (m.target.getAttribute(m.attributeName) ?? ''));
        else if (m.type === 'characterData') domLog.push(m.target.data);
        else for (const node of m.addedNodes) domLog.push(node.nodeType === 1 ? node.outerHTML : (node.textContent ?? ''));
      }
    }).observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
    return 'installed';
  `);
  if (result !== 'installed') throw new Error(`could not record the webview's IPC: ${result}`);
}

/** What `startRecording` has seen so far: `{ ipc: string[], dom: string[] }`. */
export async function recorded(app) {
  return app.execute('return { ipc: window.__e2eIpcLog ?? null, dom: window.__e2eDomLog ?? null };');
}

/**
 * Asks the backend for a snapshot through the page's own IPC bridge (as the window does) and
 * returns it. Only the test uses it, to learn ids and pids the window does not show.
 */
export function backendSnapshot(app) {
  return app.executeAsync(`
    const done = arguments[arguments.length - 1];
    window.__TAURI_INTERNALS__.invoke('snapshot').then(done, (e) => done({ error: String(e) }));
  `);
}

// ---- the browser attach opens ----------------------------------------------------------------

/**
 * Writes a stand-in browser for `SUPERCODE_BROWSER` into `dir` (0700): a script that records the
 * URL it is given into `dir/opened-url` (0600, written atomically). Returns `{ program, urlFile }`.
 */
export async function writeRecordingBrowser(dir) {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const program = join(dir, 'record-url');
  const urlFile = join(dir, 'opened-url');
  const script = `#!/bin/sh
# Stand-in browser for the e2e tests: records the URL it was asked to open.
umask 077
tmp="${urlFile}.$$.tmp"
printf '%s\\n' "$1" > "$tmp" && mv "$tmp" "${urlFile}"
`;
  await writeFile(program, script, { mode: 0o700 });
  await chmod(program, 0o700);
  return { program, urlFile };
}

/**
 * Waits until the stand-in browser of `writeRecordingBrowser` has been given a URL, and returns
 * it (trimmed). Polls with `t.waitUntil`, since the app opens the browser in the background.
 */
export function waitForBrowserUrl(t, browser, timeoutMs) {
  return t.waitUntil('the browser to be given a URL', async () => {
    try {
      return (await readFile(browser.urlFile, 'utf8')).trim();
    } catch (error) {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    }
  }, timeoutMs);
}

/**
 * GETs `url` like a browser that keeps cookies: redirects are followed by hand (`redirect:
 * "manual"`) within the same origin, and every `Set-Cookie` is sent back on later requests.
 * Returns `{ status, body, cookies, hops }` of the last response.
 */
export async function browse(url, { cookies = new Map(), maxHops = 5 } = {}) {
  let current = new URL(url);
  const hops = [];
  for (let hop = 0; hop <= maxHops; hop++) {
    const headers = {};
    if (cookies.size > 0) headers.cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const response = await fetch(current, { redirect: 'manual', headers, signal: AbortSignal.timeout(30_000) });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      if (at > 0) cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    hops.push(response.status);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.arrayBuffer();
      const next = new URL(location, current);
      if (next.origin !== current.origin) throw new Error(`redirected to another origin (${next.origin})`);
      current = next;
      continue;
    }
    return { status: response.status, body: await response.text(), cookies, hops };
  }
  throw new Error(`more than ${maxHops} redirects`);
}

// ---- the fake Canon --------------------------------------------------------------------------

/**
 * Starts the fake Canon (`canon-test-server`, beside the app binary or at `$CANON_TEST_SERVER`),
 * which issues `apiKey` after answering `pendingPolls` status polls `pending`. Call it from a test
 * file's `env(ctx)` and point the app at it with `CANON_BASE_URL: canon.baseUrl`. Returns
 * `{ baseUrl, state() }`; `state()` is what the server recorded (registrations, polls, acks).
 */
export async function startCanonTestServer({ app, artifactsDir, fileSlug }, { apiKey, pendingPolls }) {
  const server = process.env.CANON_TEST_SERVER ?? join(dirname(app), 'canon-test-server');
  try {
    await access(server, fsConstants.X_OK);
  } catch {
    throw new Error(`${server} not found; build it with: cargo build -p canon-local --features test-server --bin canon-test-server`);
  }
  const proc = await startProcess('canon-test-server', server, ['--pending-polls', String(pendingPolls)], {
    // The key goes to the server through its environment, never on a command line.
    env: { ...process.env, CANON_TEST_API_KEY: apiKey },
    logPath: join(artifactsDir, `${fileSlug}--canon-test-server.stderr.log`),
  });
  const line = await proc.waitForLine(/^listening http:\/\/127\.0\.0\.1:\d+$/, CANON_READY_TIMEOUT_MS, 'its "listening" line');
  const baseUrl = line.slice('listening '.length);
  return { baseUrl, state: () => canonTestState(baseUrl) };
}

/** What the fake Canon at `baseUrl` recorded (`/__test/state`), asserting it answered 200. */
async function canonTestState(baseUrl) {
  const response = await fetch(`${baseUrl}/__test/state`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(response.status, 200);
  return response.json();
}

// ---- looking for leaks -----------------------------------------------------------------------

/** The loopback `127.0.0.1:PORT` strings in `text`, as a set of ports. */
export function loopbackPorts(text) {
  return new Set([...text.matchAll(/127\.0\.0\.1:(\d{1,5})/g)].map((m) => Number(m[1])));
}

/**
 * Where any of `secrets` occurs among `sources` (`[{ where, text }]`): a list of
 * `"<where> holds secret #<i>"`, empty when there is no leak. Never the secret itself.
 */
export function findLeaks(sources, secrets) {
  const leaks = [];
  for (const { where, text } of sources) {
    secrets.forEach((secret, i) => {
      if (secret && text.includes(secret)) leaks.push(`${where} holds secret #${i}`);
    });
  }
  return leaks;
}
