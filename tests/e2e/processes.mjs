// Spawning and stopping the real processes the end-to-end tests need (tauri-driver, demo
// runtimes started through the app binary's `demo-runtime` subcommand), so that no test leaves
// one running.
//
// A process's stdout is kept in memory only and never written to a log or artifact: a demo
// runtime announces its endpoint there, and a runtime's loopback address is a secret.

import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';

/** How long a process gets to exit after SIGTERM before it is killed: the app and runtimes
 *  remove their receipts on a clean exit, which is quick, but CI machines are slow. */
export const STOP_TIMEOUT_MS = 10_000;

/** How long a demo runtime may take to announce itself (first stdout line) after spawn. */
export const DEMO_RUNTIME_READY_TIMEOUT_MS = 30_000;

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
 * stderr goes to `logPath`; stdout lines are kept in memory (see `waitForLine`).
 */
export async function startProcess(name, command, args, { env = process.env, cwd, logPath }) {
  await mkdir(dirname(logPath), { recursive: true });
  const log = createWriteStream(logPath, { flags: 'a' });
  await new Promise((resolve, reject) => log.once('open', resolve).once('error', reject));
  const child = spawn(command, args, { env, cwd, detached: true, stdio: ['ignore', 'pipe', log] });
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
 * Starts a demo runtime through the app binary (`<app> demo-runtime --name NAME --workspace DIR`)
 * and waits until it announces itself on stdout. Resolves with the process; the announcement
 * line is `proc.lines[0]` (keep it out of logs: it names the runtime's endpoint).
 */
export async function startDemoRuntime({ app, name, workspace, env, logPath }) {
  const proc = await startProcess(`demo runtime ${name}`, app, ['demo-runtime', '--name', name, '--workspace', workspace], {
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

/** The processes started here that have not exited yet. */
export function runningProcesses() {
  return [...running];
}

/** Stops every process started here that is still running (used between tests and on exit). */
export async function stopAllProcesses() {
  await Promise.all([...running].map((proc) => proc.stop()));
}
