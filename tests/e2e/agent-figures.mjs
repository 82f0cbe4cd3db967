#!/usr/bin/env node
// Agent-state figures of the real app (issue 15), for docs/BENCHMARKS.md; a benchmark, not a
// test. Run it inside a desktop session, e.g. the throwaway one of scripts/test-env.sh:
//
//   scripts/test-env.sh node tests/e2e/agent-figures.mjs --bin target/release/supercode-tray \
//     --runtimes 50 --idle-secs 60 --cycles 100
//
// It starts the stand-in tray host (recording, with arrival times, every menu-change signal) and
// the stand-in notification server (recording each Notify's arrival time), then the app with no
// subcommand and its window closed, three times:
//
// - with no runtime, with `--runtimes` runtimes that do not serve the status API (`no-api`),
//   and with `--runtimes` that do (steady `idle`: one subscription each, checked through their
//   `observers`): VmRSS of the app after `--settle-secs`, so "memory per subscription" is
//   (RSS subscribed - RSS no-api) / runtimes, and (RSS subscribed - RSS none) / runtimes with
//   the inventory's own share;
// - in the subscribed run, utime + stime of the app over `--idle-secs`;
// - then, in that same app, `--measured` runtimes of the `error` scenario are driven in turn,
//   `--cycles` times: `retry` (POSTed with the token) makes one go `working`, and after
//   `--phase-ms` it fails (`error`). For each change the reference time is when the driver's
//   own subscription to that runtime's stream received the document; measured from it: the
//   core's event as `supercode-tray events --json` prints it (the same core and subscription
//   code the app runs), the app's tray update (the first dbusmenu signal from the app), and for
//   each `error` the app's notification ("Failed") reaching the notification server. The
//   runtimes take turns so each one's alerts are more than the core's 3 s alert interval apart.
//
// All times are CLOCK_MONOTONIC (Node's hrtime here, Python's time.clock_gettime in the two
// stand-ins), so they compare across the processes.
//
// With `--window` it skips the memory and idle runs and measures the same changes with the
// app's window open: the app is launched through tauri-driver (as the e2e tests launch it),
// beside `--runtimes` steady runtimes as above, and a MutationObserver injected into its page
// records when each runtime row's shown state (`data-agent-state`) changes, and when the next
// animation frame after it starts. "Window" is then state change → the window's DOM shows it:
// the core, the IPC event and the render. The page reads `performance.timeOrigin +
// performance.now()`; so does this driver, whose reading differs from hrtime by a constant
// (both run at CLOCK_MONOTONIC's pace), which turns the page's times into the driver's. The
// two origins were both taken from CLOCK_REALTIME, so the comparison is off by whatever that
// clock was stepped or slewed between them; a round-trip check printed with the figures bounds it.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { startNotificationServer } from './notifications.mjs';
import {
  appExecutable,
  findTauriDriver,
  groupProcessesOf,
  nativeWebDriver,
  startDemoRuntime,
  startProcess,
  startTauriDriver,
  stopAllProcesses,
  stopPids,
  waitForBusNameReleased,
} from './processes.mjs';
import { readReceipts, writePrivateFile } from './support.mjs';
import { startTrayHost } from './tray.mjs';
import { Session } from './webdriver.mjs';

const run = promisify(execFile);

/** How long the app and runtimes may take to come up, and a change to be seen at all. */
const UP_TIMEOUT_MS = 120_000;
const CHANGE_TIMEOUT_MS = 10_000;
/** How often the driver re-checks a condition it waits for. */
const POLL_MS = 5;
/** How long the window may take to show what the runtime says while the driver waits, before
 *  the first measured change (a debug build's first render of 60 rows on a loaded machine). */
const WINDOW_TIMEOUT_MS = 60_000;
/**
 * How much earlier than its reference a window time may be and still be that change's: the app
 * can read the runtime's document before this driver's own subscription is handled, and the
 * page's clock is compared with this one only to about a millisecond (see `clockCheck`).
 */
const EARLY_SLACK_MS = 50;
/** Round trips of `clockCheck`; the quickest one bounds the clocks' difference best. */
const CLOCK_CHECK_TRIPS = 20;
/** The app's single-instance bus name (see run.mjs): the next app waits until it is free. */
const SINGLE_INSTANCE = `${JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tauri.conf.json'), 'utf8')).identifier}.SingleInstance`;

function parseArgs(argv) {
  const args = { bin: undefined, runtimes: 50, idleSecs: 60, settleSecs: 10, cycles: 100, measured: 10, phaseMs: 400, window: false, artifacts: 'test-artifacts/agent-figures' };
  for (let i = 0; i < argv.length; i++) {
    const value = () => argv[++i];
    switch (argv[i]) {
      case '--bin': args.bin = resolve(value()); break;
      case '--runtimes': args.runtimes = Number(value()); break;
      case '--idle-secs': args.idleSecs = Number(value()); break;
      case '--settle-secs': args.settleSecs = Number(value()); break;
      case '--cycles': args.cycles = Number(value()); break;
      case '--measured': args.measured = Number(value()); break;
      case '--phase-ms': args.phaseMs = Number(value()); break;
      case '--window': args.window = true; break;
      case '--artifacts': args.artifacts = resolve(value()); break;
      default: throw new Error(`unknown argument ${argv[i]}`);
    }
  }
  if (!args.bin) throw new Error('usage: agent-figures.mjs --bin PATH [--runtimes N] [--idle-secs S] [--settle-secs S] [--cycles N] [--measured N] [--phase-ms MS] [--window]');
  return args;
}

/** Milliseconds on CLOCK_MONOTONIC. */
const now = () => Number(process.hrtime.bigint()) / 1e6;
/** A web page's clock (`performance.timeOrigin + performance.now()`, epoch milliseconds) minus
 *  `now()`: fixed in this process, since Node's `performance.now()` is hrtime since its origin. */
const PAGE_CLOCK_MINUS_NOW = performance.timeOrigin + performance.now() - now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(description, probe, timeoutMs = UP_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await probe();
    if (result) return result;
    if (Date.now() >= deadline) throw new Error(`timed out waiting for ${description}`);
    await sleep(POLL_MS);
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

function summary(label, samples, target) {
  const sorted = [...samples].sort((a, b) => a - b);
  const f = (v) => `${v.toFixed(1)} ms`;
  return `| ${label} | ${sorted.length} | ${f(percentile(sorted, 50))} | ${f(percentile(sorted, 90))} | ${f(percentile(sorted, 99))} | ${f(sorted[sorted.length - 1])} | ${target} |`;
}

/** The process and its descendants (by ppid), from /proc. */
async function family(pid) {
  const parents = new Map();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  const members = [pid];
  for (let i = 0; i < members.length; i++) for (const [child, parent] of parents) if (parent === members[i]) members.push(child);
  return members;
}

async function cpuTicks(pid) {
  let ticks = 0;
  for (const member of await family(pid)) {
    const stat = await readFile(`/proc/${member}/stat`, 'utf8').catch(() => undefined);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks;
}

/** VmRSS in kB of the process and its descendants. */
async function rssKb(pid) {
  let kb = 0;
  for (const member of await family(pid)) {
    const status = await readFile(`/proc/${member}/status`, 'utf8').catch(() => '');
    kb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  return kb;
}

/** A runtime's own status stream, read as a client: `documents` with their arrival times. */
class StatusWatch {
  constructor(name, address, token) {
    this.name = name;
    this.documents = [];
    this.controller = new AbortController();
    this.done = this.read(address, token);
  }

  async read(address, token) {
    const response = await fetch(`http://${address}/supercode/v1/status/stream`, { headers: { authorization: `Bearer ${token}` }, signal: this.controller.signal });
    if (response.status !== 200) throw new Error(`${this.name}: status stream answered ${response.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        const at = now();
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
          if (data) this.documents.push({ at, document: JSON.parse(data) });
        }
      }
    } catch (error) {
      if (error.name !== 'AbortError') throw error;
    }
  }

  latest() {
    return this.documents[this.documents.length - 1]?.document;
  }

  stop() {
    this.controller.abort();
  }
}

/**
 * Installed in the app's page: records every change of the state each runtime row shows
 * (`data-agent-state`, absent for `unknown`) as `[at, name, state, frame]` in
 * `window.__figuresRowStates`. `at` is read in the MutationObserver's callback, which runs as
 * soon as the script that changed the DOM is done; `frame` when the next animation frame (the
 * one that paints the change) starts. Both on the page's `performance.timeOrigin +
 * performance.now()`.
 */
const RECORD_ROW_STATES = `
  if (window.__figuresRowStates) return 'installed';
  const log = (window.__figuresRowStates = []);
  const shown = new Map();
  const scan = () => {
    const at = performance.timeOrigin + performance.now();
    const changed = [];
    for (const row of document.querySelectorAll('[data-testid="runtime-row"]')) {
      const name = row.querySelector('.row-name')?.textContent;
      const state = row.dataset.agentState ?? null;
      if (name === undefined || shown.get(name) === state) continue;
      shown.set(name, state);
      changed.push([at, name, state, null]);
    }
    if (changed.length === 0) return;
    log.push(...changed);
    requestAnimationFrame(() => {
      const frame = performance.timeOrigin + performance.now();
      for (const entry of changed) entry[3] = frame;
    });
  };
  scan();
  new MutationObserver(scan).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-agent-state'] });
  return 'installed';
`;

/** What `RECORD_ROW_STATES` recorded since the last call (and forgets it), on `now()`'s clock. */
async function takeRowStates(page) {
  const taken = await page.execute('return window.__figuresRowStates?.splice(0) ?? null;');
  if (taken === null) throw new Error('the page lost its recorder (was it reloaded?)');
  const mine = (t) => (t === null ? undefined : t - PAGE_CLOCK_MINUS_NOW);
  return taken.map(([at, name, state, frame]) => ({ at: mine(at), name, state, frame: mine(frame) }));
}

/**
 * How far the page's clock, turned into `now()`'s, is from `now()`: of `CLOCK_CHECK_TRIPS`
 * round trips reading it, the quickest, as `{ offset, trip }`. |offset| ≤ trip / 2 plus the
 * page clock's resolution when both clocks agree.
 */
async function clockCheck(page) {
  let best;
  for (let i = 0; i < CLOCK_CHECK_TRIPS; i++) {
    const before = now();
    const pageAt = await page.execute('return performance.timeOrigin + performance.now();');
    const after = now();
    const trip = after - before;
    if (!best || trip < best.trip) best = { offset: pageAt - PAGE_CLOCK_MINUS_NOW - (before + after) / 2, trip };
  }
  return best;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const root = await mkdtemp(join(tmpdir(), 'supercode-agent-figures-'));
  const token = `bench-${randomBytes(16).toString('hex')}`;
  const tokenFile = join(root, 'token');
  await writePrivateFile(tokenFile, `${token}\n`);
  const ticksPerSec = Number((await run('getconf', ['CLK_TCK'])).stdout.trim());
  const ctx = { artifactsDir: args.artifacts, fileSlug: 'agent-figures' };
  const host = await startTrayHost({ ...ctx, menuUpdates: true });
  const notifications = await startNotificationServer(ctx);
  const lines = [];
  const say = (line) => {
    lines.push(line);
    console.log(line);
  };
  const load = async () => (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');

  let runNo = 0;
  const freshEnv = async () => {
    const dir = join(root, `run-${runNo++}`);
    return {
      ...process.env,
      XDG_CONFIG_HOME: join(dir, 'config'),
      XDG_DATA_HOME: join(dir, 'data'),
      XDG_STATE_HOME: join(dir, 'state'),
      XDG_CACHE_HOME: join(dir, 'cache'),
      SUPERCODE_RUNTIME_DIR: join(dir, 'live-runtimes'),
      SUPERCODE_STATE_DIR: join(dir, 'tray-state'),
      SUPERCODE_LOG_DIR: join(dir, 'logs'),
      CANON_HOME: join(dir, 'canon'),
      SUPERCODE_TRAY_OPEN_WINDOW: '0',
    };
  };
  const startRuntimes = async (env, prefix, count, extra) => {
    const started = [];
    for (let i = 0; i < count; i++) {
      const name = `${prefix}-${String(i).padStart(2, '0')}`;
      const workspace = join(env.SUPERCODE_RUNTIME_DIR, '..', 'workspaces', name);
      await run('mkdir', ['-p', workspace]);
      started.push(await startDemoRuntime({ app: args.bin, name, workspace, args: ['--token-file', tokenFile, ...extra], env, logPath: join(args.artifacts, `runtime-${name}.stderr.log`) }));
    }
    return started;
  };
  const startApp = async (env) => {
    await waitForBusNameReleased(SINGLE_INSTANCE);
    const app = await startProcess('app', args.bin, [], { env, logPath: join(args.artifacts, `app-${runNo}.stderr.log`) });
    const item = await host.itemOf(app.pid, UP_TIMEOUT_MS);
    return { app, item };
  };
  /** The app launched by tauri-driver with its window open; `page` is its WebDriver session. */
  const startAppWithWindow = async (env) => {
    await waitForBusNameReleased(SINGLE_INSTANCE);
    const tauriDriver = findTauriDriver();
    const executable = appExecutable(args.bin);
    if (!tauriDriver || !executable) throw new Error('--window needs tauri-driver (scripts/install-deps.sh --test) and supercode-tray-app beside --bin');
    // The app inherits tauri-driver's environment, and its stdout and stderr end up in this log.
    const driver = await startTauriDriver({ tauriDriver, nativeDriver: nativeWebDriver(), env: { ...env, SUPERCODE_TRAY_OPEN_WINDOW: '1' }, logPath: join(args.artifacts, `tauri-driver-${runNo}.log`) });
    const page = await Session.start(driver.url, { 'tauri:options': { application: args.bin, args: [] } });
    const pid = await waitFor('the app process', async () => (await groupProcessesOf(driver.proc.pid, executable))[0]);
    const stop = async () => {
      await page.delete().catch(() => {}); // the window may be gone already; the process is what matters
      await stopPids(await groupProcessesOf(driver.proc.pid, executable));
      await driver.proc.stop();
    };
    await host.itemOf(pid, UP_TIMEOUT_MS);
    return { app: { pid, stop }, page };
  };
  const addresses = async (env, prefix) => new Map((await readReceipts(env.SUPERCODE_RUNTIME_DIR)).filter((r) => r.runtimeId.startsWith(`demo:${prefix}`)).map((r) => [r.runtimeId.slice('demo:'.length), r.address]));
  const observers = async (address) => {
    const response = await fetch(`http://${address}/supercode/v1/status`, { headers: { authorization: `Bearer ${token}` } });
    return (await response.json()).observers;
  };
  const waitSubscribed = async (env, prefix) => {
    const byName = await addresses(env, prefix);
    await waitFor(`each of the ${byName.size} runtimes to count the app's subscription`, async () => {
      for (const address of byName.values()) if ((await observers(address)) < 1) return false;
      return true;
    });
  };

  // ---- latency of state changes, in a running app (`page`: its window, when it is open) --------
  const measureLatency = async (env, app, page) => {
    const events = await startProcess('events --json', args.bin, ['events', '--json'], { env, logPath: join(args.artifacts, 'events.stderr.log') });
    await events.waitForLine(/^\{"type":"snapshot"/, UP_TIMEOUT_MS, 'its first snapshot');
    const measured = await startRuntimes(env, 'measured', args.measured, ['--scenario', 'error', '--phase-delay-ms', String(args.phaseMs)]);
    const byName = await addresses(env, 'measured');
    const watches = [...byName].map(([name, address]) => new StatusWatch(name, address, token));
    // Every measured runtime has failed once (its first alert) and the app follows it.
    await waitFor('every measured runtime in error', () => watches.every((w) => w.latest()?.state === 'error'));
    await waitFor("the app's first alert for each", () => watches.every((w) => notifications.all().some((n) => n.body.startsWith(`${w.name}:`))));
    if (page) {
      const installed = await page.execute(RECORD_ROW_STATES);
      if (installed !== 'installed') throw new Error(`could not install the row recorder: ${installed}`);
      const rowState = new Map();
      await waitFor('the window to show every measured runtime in error', async () => {
        for (const entry of await takeRowStates(page)) rowState.set(entry.name, entry.state);
        return watches.every((w) => rowState.get(w.name) === 'error');
      }, WINDOW_TIMEOUT_MS);
    }
    await sleep(3_500); // the core's alert interval, so the first measured error is alerted at once

    // Each events --json line with its arrival time, read as it comes.
    const lastState = new Map();
    const eventChanges = []; // { at, name, state }
    createInterface({ input: events.child.stdout }).on('line', (line) => {
      const at = now();
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        return; // the line cut off when the process is stopped at the end
      }
      if (event.type !== 'snapshot') return;
      for (const r of event.snapshot.runtimes) {
        const state = r.state?.value;
        if (state && lastState.get(r.name) !== state) {
          lastState.set(r.name, state);
          eventChanges.push({ at, name: r.name, state });
        }
      }
    });

    const core = [];
    const tray = [];
    const shown = [];
    const references = []; // { name, state, at }, for the window, matched after the last cycle
    const missing = { core: 0, tray: 0, notification: 0, window: 0, frame: 0 };
    const appBus = (await host.itemOf(app.pid)).bus;
    const menuUpdates = () => host.proc.lines.filter((l) => l.startsWith('{"event":"menu-update"')).map((l) => JSON.parse(l)).filter((u) => u.sender === appBus).map((u) => u.at * 1000);
    let previousMatch = now();
    for (let cycle = 0; cycle < args.cycles; cycle++) {
      const watch = watches[cycle % watches.length];
      const from = watch.documents.length;
      const revision = watch.latest().revision;
      const response = await fetch(`http://${byName.get(watch.name)}/supercode/v1/actions/retry`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ revision }),
      });
      if (response.status !== 202) throw new Error(`${watch.name}: retry answered ${response.status}`);
      const working = await waitFor('the runtime to work', () => watch.documents.slice(from).find((d) => d.document.state === 'working'), CHANGE_TIMEOUT_MS);
      const failed = await waitFor('the runtime to fail', () => watch.documents.slice(from).find((d) => d.document.state === 'error'), CHANGE_TIMEOUT_MS);
      const notified = await waitFor('its notification', () => notifications.all().find((n) => n.summary === 'Failed' && n.body.startsWith(`${watch.name}:`) && n.receivedAt * 1000 > working.at), CHANGE_TIMEOUT_MS).catch(() => undefined);
      await sleep(100); // let the last signals of this cycle arrive before reading them
      for (const [reference, state, next] of [[working, 'working', failed.at], [failed, 'error', Infinity]]) {
        const change = eventChanges.find((c) => c.name === watch.name && c.state === state && c.at > previousMatch - 1 && c.at > reference.at - 50);
        if (change) core.push(change.at - reference.at);
        else missing.core++;
        const update = menuUpdates().find((at) => at > reference.at - 20 && at < next);
        if (update !== undefined) tray.push(update - reference.at);
        else missing.tray++;
        if (change) previousMatch = change.at;
        references.push({ name: watch.name, state, at: reference.at });
      }
      if (notified) shown.push(notified.receivedAt * 1000 - failed.at);
      else missing.notification++;
    }
    for (const w of watches) w.stop();

    // The window's changes, read only now so that reading them never competes with a change.
    // A change's own is the first of that runtime's row changes to its state after the
    // reference and before the runtime's next `working` (its next cycle).
    const windowShown = [];
    const frameStarted = [];
    let clock;
    if (page) {
      await sleep(1_000); // the last change's render and frame
      const rowChanges = await takeRowStates(page);
      clock = await clockCheck(page);
      references.forEach((ref, i) => {
        const until = references.slice(i + 1).find((r) => r.name === ref.name && r.state === 'working')?.at ?? Infinity;
        const change = rowChanges.find((c) => c.name === ref.name && c.state === ref.state && c.at > ref.at - EARLY_SLACK_MS && c.at < until);
        if (!change) {
          missing.window++;
          missing.frame++;
          return;
        }
        windowShown.push(change.at - ref.at);
        if (change.frame !== undefined) frameStarted.push(change.frame - ref.at);
        else missing.frame++;
      });
    }

    say(`load average at the end: ${await load()}`);
    say('');
    say('| runtime state change → | n | p50 | p90 | p99 | max | target |');
    say('|---|---|---|---|---|---|---|');
    say(summary('core event (`events --json` line)', core, 'p99 ≤ 100 ms'));
    say(summary("tray update (the app's first dbusmenu signal)", tray, 'p99 ≤ 100 ms'));
    say(summary('notification at the server (`error` → "Failed")', shown, 'p99 ≤ 250 ms'));
    if (page) {
      say(summary("window's DOM shows it (the row's `data-agent-state`)", windowShown, 'p99 ≤ 100 ms'));
      say(summary('the animation frame after it starts', frameStarted, '–'));
    }
    say(`not matched: core ${missing.core}, tray ${missing.tray}, notification ${missing.notification}${page ? `, window ${missing.window}, frame ${missing.frame}` : ''}`);
    if (page) {
      say(`window: earliest ${Math.min(...windowShown).toFixed(1)} ms after its reference; the page's clock - this one's: ${clock.offset.toFixed(2)} ms, measured over a ${clock.trip.toFixed(2)} ms round trip`);
    }
    await events.stop();
    await Promise.all(measured.map((r) => r.stop()));
  };

  say(`load average at start: ${await load()}`);

  if (args.window) {
    // ---- the same changes with the window open, beside as many steady runtimes --------------
    const env = await freshEnv();
    await startRuntimes(env, 'idle-subscribed', args.runtimes, ['--scenario', 'steady']);
    const { app, page } = await startAppWithWindow(env);
    if (args.runtimes > 0) await waitSubscribed(env, 'idle-subscribed');
    await sleep(args.settleSecs * 1000);
    say(`window open, ${args.runtimes} steady runtimes subscribed, ${args.measured} measured`);
    await measureLatency(env, app, page);
    await app.stop();
  } else {
    // ---- memory with none, with unsubscribed and with subscribed runtimes --------------------
    const memory = {};
    for (const [label, scenario] of [['none', null], ['no-api', 'no-api'], ['subscribed', 'steady']]) {
      const env = await freshEnv();
      const runtimes = scenario ? await startRuntimes(env, `idle-${label}`, args.runtimes, ['--scenario', scenario]) : [];
      const { app } = await startApp(env);
      if (scenario === 'steady') await waitSubscribed(env, `idle-${label}`);
      await sleep(args.settleSecs * 1000);
      memory[label] = await rssKb(app.pid);
      say(`RSS after ${args.settleSecs} s, ${label === 'none' ? 'no runtime' : `${args.runtimes} runtimes (${label})`}: ${(memory[label] / 1024).toFixed(1)} MiB`);

      if (scenario !== 'steady') {
        await app.stop();
        await Promise.all(runtimes.map((r) => r.stop()));
        continue;
      }

      // ---- idle CPU with every runtime subscribed --------------------------------------------
      const before = await cpuTicks(app.pid);
      const started = now();
      await sleep(args.idleSecs * 1000);
      const ticks = (await cpuTicks(app.pid)) - before;
      const secs = (now() - started) / 1000;
      const rssAfter = await rssKb(app.pid);
      say(`idle CPU, ${args.runtimes} subscribed runtimes, ${secs.toFixed(1)} s: ${ticks} ticks = ${(ticks / ticksPerSec).toFixed(2)} s CPU = ${((100 * ticks) / ticksPerSec / secs).toFixed(2)} % of one core; RSS after it ${(rssAfter / 1024).toFixed(1)} MiB`);
      say(`memory per subscription: (subscribed - no-api) / ${args.runtimes} = ${((memory.subscribed - memory['no-api']) / args.runtimes).toFixed(1)} KiB; (subscribed - none) / ${args.runtimes} = ${((memory.subscribed - memory.none) / args.runtimes).toFixed(1)} KiB`);

      await measureLatency(env, app);
      await app.stop();
    }
  }
  await stopAllProcesses();
  await rm(root, { recursive: true, force: true });
  process.exit(0);
}

main().catch(async (error) => {
  console.error(error.stack ?? error);
  await stopAllProcesses();
  process.exit(1);
});
