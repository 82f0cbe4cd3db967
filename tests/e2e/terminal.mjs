// A real terminal for a real agent (the e2e twin of tests/supercode_tray/terminal.rs): a private
// tmux server (`-L`, no configuration) with one window the agent runs in, 160 columns by 50
// lines, typed into as a user types and read as a user sees it. `stop()` kills the server (and
// with it the agent, which gets SIGHUP).
//
//   const term = await startTerminal(t.env, 'supercode-e2e-claude', script);
//   await term.waitForScreen('the prompt', /manual mode on/);
//   await term.typeLine('hello');

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The pause between typing a line and pressing Enter: an agent's prompt drops an Enter that
 *  arrives with the text. */
const TYPING_PAUSE_MS = 200;
/** How often the screen is re-read while waiting for something on it. */
const SCREEN_POLL_MS = 100;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Whether tmux can be run here. */
export async function haveTmux() {
  try {
    await run('tmux', ['-V']);
    return true;
  } catch {
    return false;
  }
}

/** Starts `program` in a new tmux server named `server`, with environment `env`. */
export async function startTerminal(env, server, program) {
  const term = new Terminal(env, server);
  await term.tmux('new-session', '-d', '-s', 'agent', '-x', '160', '-y', '50', program);
  return term;
}

class Terminal {
  constructor(env, server) {
    this.env = env;
    this.server = server;
  }

  /** Runs one tmux command on this server; resolves with its stdout. */
  async tmux(...args) {
    return (await run('tmux', ['-L', this.server, '-f', '/dev/null', ...args], { env: this.env, timeout: 20_000 })).stdout;
  }

  /** What the window shows now. */
  screen() {
    return this.tmux('capture-pane', '-p', '-t', 'agent');
  }

  /** Waits until the window shows `pattern`; fails with the screen otherwise. */
  async waitForScreen(description, pattern, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = await this.screen();
      if (pattern.test(screen)) return screen;
      if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description} (${pattern}); the terminal shows:\n${screen}`);
      await sleep(SCREEN_POLL_MS);
    }
  }

  /** Types `text` (literally), then Enter. */
  async typeLine(text) {
    await this.tmux('send-keys', '-t', 'agent', '-l', text);
    await sleep(TYPING_PAUSE_MS);
    await this.tmux('send-keys', '-t', 'agent', 'Enter');
  }

  /** Kills the server and everything running in it; no error when it is already gone. */
  async stop() {
    await this.tmux('kill-server').catch(() => undefined);
  }
}
