// Spawning and stopping the real processes the end-to-end tests need (tauri-driver, demo
// runtimes started through the app binary's `demo-runtime` subcommand), so that no test leaves
// one running; and finding tauri-driver and the process of the app it launches.
//
// A process's stdout is kept in memory only and never written to a log or artifact: a demo
// runtime announces its endpoint there, and a runtime's loopback address is a secret.

import { execFile, spawn } from 'node:child_process';
import { accessSync, createWriteStream, realpathSync, constants as fsConstants } from 'node:fs';
import { mkdir, readFile, readdir, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { basename, delimiter, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { driverStatus } from './webdriver.mjs';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** How long a process gets to exit after SIGTERM before it is killed: the app and runtimes
 *  remove their receipts on a clean exit, which is quick, but CI machines are slow. */
export const STOP_TIMEOUT_MS = 10_000;

/** How long a demo runtime may take to announce itself (first stdout line) after spawn. */
export const DEMO_RUNTIME_READY_TIMEOUT_MS = 30_000;

/** How often /proc is re-read while waiting for a process to exit. */
const EXIT_POLL_INTERVAL_MS = 50;

/** How long tauri-driver (and the WebKitWebDriver it starts) may take to answer /status. */
const DRIVER_READY_TIMEOUT_MS = 30_000;
/** How often /status is re-polled while tauri-driver starts. */
const DRIVER_POLL_INTERVAL_MS = 100;

/** The Python whose GObject introspection (python3-gi) the stand-in desktop services need: the
 *  system one, since a pyenv or venv python3 earlier on PATH has no `gi`. */
const SYSTEM_PYTHON = process.env.SUPERCODE_TRAY_HOST_PYTHON ?? '/usr/bin/python3';
/** How long a stand-in may take to own its bus name after it starts (a Python start on a loaded
 *  CI machine). */
const STAND_IN_READY_TIMEOUT_MS = 30_000;

const running = new Set();

/** A child process started with `startProcess`, in its own process group. */
export class RunningProcess {
  constructor(name, child, logPath) {
    this.name = name;
    this.child = child;
    this.logPath = logPath;
    this.lines = [];
    this.waiters = [];
    this.exit = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        running.delete(this);
        this.exited = { code, signal };
        for (const waiter of this.waiters) waiter.reject(new Error(`${name} exited (code ${code}, signal ${signal}) before ${waiter.description}; log: ${logPath}`));
        this.waiters = [];
        resolve(this.exited);
      });
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      this.lines.push(line);
      this.waiters = this.waiters.filter((waiter) => {
        if (!waiter.matches(line)) return true;
        waiter.resolve(line);
        return false;
      });
    });
  }

  get pid() {
    return this.child.pid;
  }

  /** Resolves with the first stdout line (already seen or still to come) matching `pattern`. */
  waitForLine(pattern, timeoutMs, description = `a stdout line matching ${pattern}`) {
    const matches = (line) => pattern.test(line);
    const seen = this.lines.find(matches);
    if (seen !== undefined) return Promise.resolve(seen);
    if (this.exited) return Promise.reject(new Error(`${this.name} already exited before ${description}; log: ${this.logPath}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== done);
        reject(new Error(`${this.name}: no ${description} within ${timeoutMs} ms; log: ${this.logPath}`));
      }, timeoutMs);
      const done = (line) => {
        clearTimeout(timer);
        resolve(line);
      };
      const fail = (error) => {
        clearTimeout(timer);
        reject(error);
      };
      this.waiters.push({ matches, resolve: done, reject: fail, description });
    });
  }

  /** Sends SIGTERM to the whole process group, then SIGKILL after `timeoutMs`; resolves on exit. */
  async stop(timeoutMs = STOP_TIMEOUT_MS) {
    if (this.exited) return this.exited;
    signalGroup(this.child.pid, 'SIGTERM');
    let timer;
    const killed = new Promise((resolve) => {
      timer = setTimeout(() => {
        signalGroup(this.child.pid, 'SIGKILL');
        resolve();
      }, timeoutMs);
    });
    await Promise.race([this.exit, killed]);
    clearTimeout(timer);
    return this.exit;
  }
}

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch (error) {
    if (error.code !== 'ESRCH') throw error;
  }
}

/**
 * Starts `command args` in its own process group (so stopping it also stops what it spawned).
 * stderr goes to `logPath`; stdout lines are kept in memory (see `waitForLine`). `stdin: 'pipe'`
 * gives the process a stdin to write requests to (`proc.child.stdin`); by default it has none.
 */
export async function startProcess(name, command, args, { env = process.env, cwd, logPath, stdin = 'ignore' }) {
  await mkdir(dirname(logPath), { recursive: true });
  const log = createWriteStream(logPath, { flags: 'a' });
  await new Promise((resolve, reject) => log.once('open', resolve).once('error', reject));
  const child = spawn(command, args, { env, cwd, detached: true, stdio: [stdin, 'pipe', log] });
  await new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) => reject(new Error(`cannot start ${name} (${command}): ${error.message}`)));
  });
  const proc = new RunningProcess(name, child, logPath);
  running.add(proc);
  proc.exit.then(() => log.end());
  return proc;
}

/**
 * Starts a demo runtime through the app binary (`<app> demo-runtime --name NAME --workspace DIR
 * [ARGS...]`) and waits until it announces itself on stdout. Resolves with the process; the
 * announcement line is `proc.lines[0]` (keep it out of logs: it names the runtime's endpoint).
 */
export async function startDemoRuntime({ app, name, workspace, args = [], env, logPath }) {
  const proc = await startProcess(`demo runtime ${name}`, app, ['demo-runtime', '--name', name, '--workspace', workspace, ...args], {
    env,
    cwd: workspace,
    logPath,
  });
  try {
    await proc.waitForLine(/\S/, DEMO_RUNTIME_READY_TIMEOUT_MS, 'its start-up announcement');
  } catch (error) {
    await proc.stop();
    throw error;
  }
  return proc;
}

/**
 * Starts a stand-in desktop service (`script`: tray-host.py, notification-server.py) with the
 * system Python, and waits until it says it owns its bus name (`{"event":"ready"}`); on
 * `{"event":"error"}` it stops it and throws that message. It gets a stdin (requests to it; its
 * closing, when this process is gone, stops it too).
 */
export async function startStandIn(name, script, args, { logPath }) {
  const proc = await startProcess(name, SYSTEM_PYTHON, [script, ...args], { logPath, stdin: 'pipe' });
  const ready = JSON.parse(await proc.waitForLine(/^\{"event":"(ready|error)"/, STAND_IN_READY_TIMEOUT_MS, 'its "ready" line'));
  if (ready.event !== 'ready') {
    await proc.stop();
    throw new Error(`${name}: ${ready.message}`);
  }
  return proc;
}

/** The processes started here that have not exited yet. */
export function runningProcesses() {
  return [...running];
}

/** Stops every process started here that is still running (used between tests and on exit). */
export async function stopAllProcesses() {
  await stopInReverse([...running]);
}

/**
 * Stops `procs` (in the order they were started) the last started first, each gone before the
 * next: a process may use one started before it while it exits (xfce4-panel saves to xfconfd),
 * and one stopped under it would be D-Bus-activated again, outliving the test file.
 */
export async function stopInReverse(procs) {
  for (const proc of [...procs].reverse()) await proc.stop();
}

/** The state letter and process group of `pid` from /proc, or undefined once it is gone. */
async function procStat(pid) {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], pgrp: Number(fields[2]) };
  } catch (error) {
    if (error.code === 'ENOENT' || error.code === 'ESRCH') return undefined;
    throw error;
  }
}

/** Whether `pid` is running (an exited process not yet reaped, state Z, is not). */
export async function isRunning(pid) {
  const stat = await procStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/**
 * Running processes of process group `pgid` whose executable is `exe` (a real path). The app
 * runs as a grandchild of tauri-driver (via WebKitWebDriver), in tauri-driver's group; this is
 * how the runner finds it, since WebDriver never says which process it launched.
 */
export async function groupProcessesOf(pgid, exe) {
  const pids = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await procStat(name);
    if (!stat || stat.state === 'Z' || stat.pgrp !== pgid) continue;
    let path;
    try {
      path = await readlink(`/proc/${name}/exe`);
    } catch {
      continue; // exited meanwhile, or not ours to read
    }
    if (path === exe || path === `${exe} (deleted)`) pids.push(Number(name));
  }
  return pids;
}

/** SIGTERM to each of `pids`, SIGKILL to those still running after `timeoutMs`; resolves when all are gone. */
export async function stopPids(pids, timeoutMs = STOP_TIMEOUT_MS) {
  const signal = (pid, sig) => {
    try {
      process.kill(pid, sig);
    } catch (error) {
      if (error.code !== 'ESRCH') throw error;
    }
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  let killed = false;
  for (;;) {
    const alive = [];
    for (const pid of pids) if (await isRunning(pid)) alive.push(pid);
    if (alive.length === 0) return;
    if (Date.now() >= deadline) {
      if (killed) throw new Error(`processes ${alive.join(', ')} survived SIGKILL`);
      for (const pid of alive) signal(pid, 'SIGKILL');
      killed = true;
    }
    await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_INTERVAL_MS));
  }
}

/** Whether `name` has an owner on the session bus; false when there is no session bus to ask. */
async function busNameHasOwner(name) {
  if (!process.env.DBUS_SESSION_BUS_ADDRESS) return false;
  const { stdout } = await promisify(execFile)('dbus-send', [
    '--session', '--print-reply', '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
    'org.freedesktop.DBus.NameHasOwner', `string:${name}`,
  ]);
  return /boolean true/.test(stdout);
}

/**
 * Resolves once no connection owns `name` on the session bus. A process that exited has closed
 * its bus socket, but dbus-daemon may release its names only after it has served a newer
 * process's request for them.
 */
export async function waitForBusNameReleased(name, timeoutMs = STOP_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (await busNameHasOwner(name)) {
    if (Date.now() >= deadline) throw new Error(`the session bus name ${name} is still owned ${timeoutMs} ms after its process was stopped`);
    await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_INTERVAL_MS));
  }
}

// ---- tauri-driver and the app it launches ----------------------------------------------------

export function isExecutable(path) {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findOnPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The binary `supercode-tray` execs to start the tray app, installed beside it. */
export const TRAY_APP_BINARY = 'supercode-tray-app';

/**
 * The executable of the app's process once it runs. `supercode-tray` (what the tests launch, as
 * a user does) starts the tray by exec'ing `supercode-tray-app` beside it in the same process,
 * so the app process is the one running that file; any other `--app` (MiniBrowser) runs itself.
 */
export function appExecutable(app) {
  if (basename(app) !== 'supercode-tray') return realpathSync(app);
  const beside = join(dirname(realpathSync(app)), TRAY_APP_BINARY);
  return isExecutable(beside) ? realpathSync(beside) : undefined;
}

/** The WebDriver tauri-driver forwards to: `$WEBKIT_WEBDRIVER`, else Debian's WebKitWebDriver. */
export function nativeWebDriver() {
  return process.env.WEBKIT_WEBDRIVER ?? '/usr/bin/WebKitWebDriver';
}

/** `$TAURI_DRIVER`, else the repository's `.tools/bin/tauri-driver`, else one on PATH. */
export function findTauriDriver() {
  if (process.env.TAURI_DRIVER) return resolve(process.env.TAURI_DRIVER);
  const local = join(REPO_ROOT, '.tools', 'bin', 'tauri-driver');
  return isExecutable(local) ? local : findOnPath('tauri-driver');
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * Starts tauri-driver (forwarding to `nativeDriver`, WebKitWebDriver) on free ports with `env`,
 * which every app it launches inherits, and waits until it answers `/status`. Resolves with
 * `{ proc, url }`; the app of a session runs in `proc`'s process group (`groupProcessesOf`).
 */
export async function startTauriDriver({ tauriDriver, nativeDriver, env, logPath }) {
  const port = await freePort();
  let nativePort = await freePort();
  while (nativePort === port) nativePort = await freePort();
  const proc = await startProcess(
    'tauri-driver',
    tauriDriver,
    ['--port', String(port), '--native-port', String(nativePort), '--native-driver', nativeDriver],
    { env, logPath },
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + DRIVER_READY_TIMEOUT_MS;
  for (;;) {
    if (proc.exited) throw new Error(`tauri-driver exited during start-up (code ${proc.exited.code}); log: ${logPath}`);
    try {
      const status = await driverStatus(url);
      if (status?.ready !== false) return { proc, url };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await proc.stop();
      throw new Error(`tauri-driver did not answer ${url}/status within ${DRIVER_READY_TIMEOUT_MS} ms; log: ${logPath}`);
    }
    await new Promise((r) => setTimeout(r, DRIVER_POLL_INTERVAL_MS));
  }
}
