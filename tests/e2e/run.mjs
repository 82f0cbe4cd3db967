#!/usr/bin/env node
// End-to-end test runner: drives the real app binary through tauri-driver (-> WebKitWebDriver).
//
//   node tests/e2e/run.mjs [--app PATH] [FILE.test.mjs ...]
//
// Runs tests/e2e/*.test.mjs (or the files given) one after another. Each file gets a fresh
// state directory (XDG_*, SUPERCODE_{RUNTIME,STATE,LOG}_DIR and CANON_HOME point into it; a file
// may add variables with `export const env = {...}`, or with `export async function env(ctx)`
// when they depend on the state directory or on a process the file's tests share, see
// `fileEnvironment`) and its own tauri-driver, started with
// SUPERCODE_TRAY_OPEN_WINDOW=1 so the app opens its window at start-up. Each test has a
// timeout; after each test its sessions are closed (with a screenshot first if it failed) and
// its processes stopped. The last line printed is exactly `N passed, M failed`; the exit status
// is non-zero when a test failed or no test ran.
//
// Needs a display (run it under scripts/test-env.sh). When prerequisites are missing (no app
// binary, no tauri-driver, no display) it skips, unless SUPERCODE_REQUIRE_E2E=1, then it fails.
//
// The app is launched as a user launches it, through `supercode-tray`, which execs the tray app
// `supercode-tray-app` beside it in the same process; so the app's process is the one running
// that file (`appExecutable`).
//
// Environment: SUPERCODE_APP_BINARY (default <target>/debug/supercode-tray, <target> being
// $CARGO_TARGET_DIR or ./target), TAURI_DRIVER (default .tools/bin/tauri-driver, then PATH),
// WEBKIT_WEBDRIVER (default /usr/bin/WebKitWebDriver), SUPERCODE_TEST_ARTIFACTS (default
// ./test-artifacts; screenshots and logs go to its e2e/ folder).

import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { DEFAULT_TEST_TIMEOUT_MS, assert, takeRegisteredTests } from './harness.mjs';
import {
  TRAY_APP_BINARY,
  appExecutable,
  findTauriDriver,
  groupProcessesOf,
  isExecutable,
  nativeWebDriver,
  runningProcesses,
  startDemoRuntime,
  startTauriDriver,
  stopAllProcesses,
  stopInReverse,
  stopPids,
  waitForBusNameReleased,
} from './processes.mjs';
import { DEFAULT_WAIT_TIMEOUT_MS, Session, WAIT_POLL_INTERVAL_MS, WebDriverError } from './webdriver.mjs';

const E2E_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(E2E_DIR, '..', '..');

/**
 * The app's single-instance guard (tauri-plugin-single-instance on Linux): the session bus name
 * `<identifier>.SingleInstance`. An app started while it is still owned forwards its arguments to
 * the owner and exits, or fails when the owner is gone; so the next test's app waits for it.
 */
const SINGLE_INSTANCE_BUS_NAME = `${JSON.parse(readFileSync(join(REPO_ROOT, 'tauri.conf.json'), 'utf8')).identifier}.SingleInstance`;

/** How many of the app's last log lines a failure prints (the log never holds a secret). */
const APP_LOG_TAIL_LINES = 15;

function parseArgs(argv) {
  const options = { app: undefined, files: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--app') options.app = argv[++i];
    else if (arg === '-h' || arg === '--help') {
      console.log('usage: node tests/e2e/run.mjs [--app PATH] [FILE.test.mjs ...]');
      process.exit(0);
    } else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}`);
    else options.files.push(resolve(arg));
  }
  return options;
}

function defaultAppBinary() {
  if (process.env.SUPERCODE_APP_BINARY) return resolve(process.env.SUPERCODE_APP_BINARY);
  const target = process.env.CARGO_TARGET_DIR ? resolve(REPO_ROOT, process.env.CARGO_TARGET_DIR) : join(REPO_ROOT, 'target');
  return join(target, 'debug', 'supercode-tray');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function slug(text) {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 80);
}

/** What a test function receives. */
class TestContext {
  constructor({ app, appExecutable, driver, env, stateDir, artifactsDir, fileSlug, testSlug }) {
    /** What is launched: `supercode-tray` (or `--app`); also what runs `demo-runtime`. */
    this.app = app;
    /** The executable of the app's process once it started (see `appExecutable`). */
    this.appExecutable = appExecutable;
    this.driver = driver;
    this.driverUrl = driver.url;
    this.env = env;
    this.stateDir = stateDir;
    this.artifactsDir = artifactsDir;
    this.fileSlug = fileSlug;
    this.testSlug = testSlug;
    this.sessions = [];
  }

  /** Starts the app (a WebDriver session through tauri-driver); `args` go to the app. */
  async openApp({ args = [] } = {}) {
    const session = await Session.start(this.driverUrl, {
      'tauri:options': { application: this.app, args },
    });
    this.sessions.push(session);
    return session;
  }

  /** Pids of the app processes running now (started through this test's sessions or earlier). */
  appPids() {
    return groupProcessesOf(this.driver.proc.pid, this.appExecutable);
  }

  /** The pid of the one app process running now; fails when there is none or more than one. */
  async appPid() {
    const pids = await this.appPids();
    assert.equal(pids.length, 1, `one app process runs (found ${pids.length})`);
    return pids[0];
  }

  /**
   * Ends `session` and stops the app process. Deleting a WebDriver session only closes the
   * window, and a tray app keeps running without one; the next openApp would then meet the
   * single-instance guard instead of starting a fresh app.
   */
  async closeApp(session) {
    try {
      await session.delete();
    } catch (error) {
      // The window may already be gone; the process is what matters.
      if (!(error instanceof WebDriverError)) throw error;
    }
    await this.stopApp();
  }

  /**
   * Stops the app process, then waits until the session bus has released its single-instance
   * name: dbus-daemon can notice the exit only after the next app asked for the name, and that
   * app then exits with "failed to forward arguments to the running instance".
   */
  async stopApp() {
    await stopPids(await this.appPids());
    await waitForBusNameReleased(SINGLE_INSTANCE_BUS_NAME);
  }

  /**
   * Starts `<app> demo-runtime --name NAME --workspace DIR [ARGS...]` with this file's
   * environment (`args`: more options, e.g. `['--token-file', path]`).
   */
  async startDemoRuntime(name, { workspace, args = [] } = {}) {
    const dir = workspace ?? join(this.stateDir, 'workspaces', name);
    await mkdir(dir, { recursive: true });
    return startDemoRuntime({
      app: this.app,
      name,
      workspace: dir,
      args,
      env: this.env,
      logPath: join(this.artifactsDir, `${this.fileSlug}--${this.testSlug}--${slug(name)}.stderr.log`),
    });
  }

  /** Polls `probe` until it resolves truthy (returned) or `timeoutMs` passes (then throws). */
  async waitUntil(description, probe, timeoutMs = DEFAULT_WAIT_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const result = await probe();
      if (result) return result;
      if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
      await sleep(WAIT_POLL_INTERVAL_MS);
    }
  }

  /** Saves a screenshot of `session`'s window as test-artifacts/e2e/<file>--<label>.png. */
  screenshot(session, label) {
    return session.screenshot(join(this.artifactsDir, `${this.fileSlug}--${slug(label)}.png`));
  }

  /** Closes the sessions this test opened (screenshots first when the test failed) and stops the app. */
  async closeSessions({ failed }) {
    for (const session of this.sessions) {
      if (session.deleted) continue;
      if (failed) {
        try {
          const path = await this.screenshot(session, `${this.testSlug}-failure`);
          console.log(`       failure screenshot: ${path}`);
        } catch (error) {
          console.log(`       (no failure screenshot: ${error.message})`);
        }
      }
      try {
        await session.delete();
      } catch (error) {
        if (!(error instanceof WebDriverError)) throw error;
        // Expected when the window is already gone; the app process is stopped below.
      }
    }
    await this.stopApp();
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function listTestFiles() {
  const names = (await readdir(E2E_DIR)).filter((n) => n.endsWith('.test.mjs')).sort();
  return names.map((n) => join(E2E_DIR, n));
}

function skipOrFail(reason) {
  if (process.env.SUPERCODE_REQUIRE_E2E === '1') {
    console.error(`e2e: cannot run: ${reason} (SUPERCODE_REQUIRE_E2E=1, so this is a failure)`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
  console.log(`e2e: skipped: ${reason} (set SUPERCODE_REQUIRE_E2E=1 to make this a failure)`);
  console.log('0 passed, 0 failed');
  process.exit(0);
}

/** The last `count` lines of the app's newest log file in `dir`, or none if it wrote none. */
async function appLogTail(dir, count) {
  const files = (await readdir(dir).catch(() => [])).filter((name) => name.startsWith('supercode-tray')).sort();
  if (files.length === 0) return [];
  const text = await readFile(join(dir, files[files.length - 1]), 'utf8').catch(() => '');
  return text.trimEnd().split('\n').filter(Boolean).slice(-count);
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const app = options.app ? resolve(options.app) : defaultAppBinary();
  const tauriDriver = findTauriDriver();
  const nativeDriver = nativeWebDriver();
  const artifactsDir = join(resolve(REPO_ROOT, process.env.SUPERCODE_TEST_ARTIFACTS ?? 'test-artifacts'), 'e2e');

  if (!isExecutable(app)) skipOrFail(`the app binary ${app} does not exist (build it with: cargo build --bins)`);
  const executable = appExecutable(app);
  if (!executable) skipOrFail(`${TRAY_APP_BINARY} is missing beside ${app}, which starts the tray by running it (build both with: cargo build --bins)`);
  if (!tauriDriver) skipOrFail('tauri-driver not found (scripts/install-deps.sh --test installs it into .tools/)');
  if (!isExecutable(nativeDriver)) skipOrFail(`${nativeDriver} not found (apt-get install webkit2gtk-driver)`);
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) skipOrFail('no display (run it under scripts/test-env.sh)');

  const files = options.files.length > 0 ? options.files : await listTestFiles();
  await mkdir(artifactsDir, { recursive: true });

  let passed = 0;
  let failed = 0;
  const failures = [];
  const fail = (label, error) => {
    failed++;
    failures.push(label);
    console.log(`  FAIL ${label}\n       ${String(error?.stack ?? error).split('\n').join('\n       ')}`);
  };

  for (const file of files) {
    const fileSlug = slug(basename(file).replace(/\.test\.mjs$|\.mjs$/, ''));
    console.log(`e2e: ${basename(file)}`);
    let tests;
    let envSpec = {};
    try {
      const module = await import(pathToFileURL(file).href);
      tests = takeRegisteredTests();
      envSpec = module.env ?? {};
      if (tests.length === 0) throw new Error('the file registers no test');
    } catch (error) {
      fail(`${basename(file)} (loading)`, error);
      continue;
    }

    const stateDir = await mkdtemp(join(tmpdir(), `supercode-e2e-${fileSlug}-`));
    let fileEnv;
    let fileProcesses;
    try {
      ({ fileEnv, fileProcesses } = await fileEnvironment(envSpec, { app, stateDir, artifactsDir, fileSlug }));
    } catch (error) {
      for (const t of tests) fail(`${basename(file)} › ${t.name}`, error);
      await stopAllProcesses();
      await rm(stateDir, { recursive: true, force: true });
      continue;
    }
    const env = {
      ...process.env,
      XDG_CONFIG_HOME: join(stateDir, 'config'),
      XDG_DATA_HOME: join(stateDir, 'data'),
      XDG_STATE_HOME: join(stateDir, 'state'),
      XDG_CACHE_HOME: join(stateDir, 'cache'),
      // The app and the demo runtimes a test starts share these, and nothing else does.
      SUPERCODE_RUNTIME_DIR: join(stateDir, 'live-runtimes'),
      SUPERCODE_STATE_DIR: join(stateDir, 'tray-state'),
      SUPERCODE_LOG_DIR: join(stateDir, 'logs'),
      CANON_HOME: join(stateDir, 'canon'),
      SUPERCODE_TRAY_OPEN_WINDOW: '1',
      ...fileEnv,
    };
    let driver;
    // The app's own stdout/stderr end up here too (tauri-driver -> WebKitWebDriver -> app).
    const driverLog = join(artifactsDir, `${fileSlug}--tauri-driver.log`);
    try {
      driver = await startTauriDriver({ tauriDriver, nativeDriver, env, logPath: driverLog });
    } catch (error) {
      for (const t of tests) fail(`${basename(file)} › ${t.name}`, error);
      await stopAllProcesses();
      await rm(stateDir, { recursive: true, force: true });
      continue;
    }

    for (const t of tests) {
      const label = `${basename(file)} › ${t.name}`;
      const ctx = new TestContext({ app, appExecutable: executable, driver, env, stateDir, artifactsDir, fileSlug, testSlug: slug(t.name) });
      const started = Date.now();
      let error;
      try {
        await withTimeout(Promise.resolve().then(() => t.fn(ctx)), t.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS, `test "${t.name}"`);
      } catch (e) {
        error = e;
      }
      await ctx.closeSessions({ failed: Boolean(error) });
      // Processes the test started (demo runtimes) go; tauri-driver and the file's own stay.
      await stopAllProcessesExcept([driver.proc, ...fileProcesses]);
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      if (error) {
        fail(`${label} (${secs}s)`, error);
        console.log(`       app and driver output: ${driverLog}`);
        // CI keeps only this output in view: the app's own last log lines say what it did.
        for (const line of await appLogTail(env.SUPERCODE_LOG_DIR, APP_LOG_TAIL_LINES)) console.log(`       app log: ${line}`);
      } else {
        passed++;
        console.log(`  ok   ${label} (${secs}s)`);
      }
    }
    await driver.proc.stop();
    await stopInReverse(fileProcesses);
    await rm(stateDir, { recursive: true, force: true });
  }

  if (passed + failed === 0) {
    console.log('e2e: no test ran (no tests/e2e/*.test.mjs file?)');
    failed = 1;
  }
  if (failures.length > 0) console.log(`e2e: failed:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  await stopAllProcesses();
  console.log(`${passed} passed, ${failed} failed`);
  // Exit now rather than when fetch's idle keep-alive sockets time out.
  process.exit(failed > 0 ? 1 : 0);
}

async function stopAllProcessesExcept(keep) {
  await Promise.all(runningProcesses().filter((p) => !keep.includes(p)).map((p) => p.stop()));
}

/**
 * A file's extra environment. `export const env = {...}` is used as it is; `export async function
 * env(ctx)` is called once the file's state directory exists, with `ctx = { app, stateDir,
 * artifactsDir, fileSlug }`, before tauri-driver (and so the app) starts: the place to start a
 * process whose address the app must be given (a fake Canon server) or to write a file the
 * environment names. Processes it starts (through processes.mjs) run until the file's last test
 * is done.
 */
async function fileEnvironment(spec, ctx) {
  if (typeof spec !== 'function') return { fileEnv: spec, fileProcesses: [] };
  const before = new Set(runningProcesses());
  const fileEnv = await spec(ctx);
  const fileProcesses = runningProcesses().filter((p) => !before.has(p));
  if (fileEnv === null || typeof fileEnv !== 'object') throw new TypeError('export function env(ctx) must return an object of variables');
  return { fileEnv, fileProcesses };
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    console.log(`e2e: ${signal}: stopping processes`);
    stopAllProcesses().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });
}

main().catch(async (error) => {
  console.error(`e2e: ${error.stack ?? error}`);
  await stopAllProcesses();
  console.log('0 passed, 1 failed');
  process.exit(1);
});
