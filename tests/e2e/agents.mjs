// Agent state (issue 15) as the tests look at it: through the real CLI (`list --json`, `act`,
// `events --json`) run with the test file's environment, through the window's runtime rows, and
// through the tray menu's per-runtime submenus.
//
//   const entry = await listed(t, 'alpha');              // its `list --json` entry
//   const row = await agentRow(app, 'alpha');            // { state, title, actions, ... }
//   const sub = submenuOf(await tray.menu(), 'alpha');   // { state, title, entries }

import { execFile } from 'node:child_process';

/** How long one CLI run may take: a debug build reading the keychain and asking each running
 *  runtime once (2 s each, concurrently) on a loaded 2-core CI machine. */
export const CLI_TIMEOUT_MS = 60_000;

/** The tray menu's word for each agent state (src-tauri/app/tray/view.rs `state_label`). */
export const STATE_LABELS = {
  working: 'Working',
  'needs-approval': 'Needs approval',
  'needs-input': 'Needs input',
  idle: 'Idle',
  error: 'Error',
  'not-answering': 'Not answering',
};

/** The notification heading for each state the user is told about (src-tauri/app/alerts.rs). */
export const ALERT_HEADINGS = {
  'needs-approval': 'Needs your approval',
  'needs-input': 'Waiting for you',
  error: 'Failed',
  'not-answering': 'Not answering',
};

/**
 * Runs `<app> ARGS...` with the test file's environment and no stdin (so nothing can be
 * confirmed on a terminal). Resolves with `{ code, stdout, stderr }` whatever the exit status.
 * Every run is added to `transcript` (when given), for the leak searches.
 */
export function runCli(t, args, { transcript } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(t.app, args, { env: t.env, timeout: CLI_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') {
        reject(new Error(`supercode-tray ${args[0]}: ${error.message}`));
        return;
      }
      const result = { code: error ? error.code : 0, stdout, stderr };
      transcript?.push({ where: `supercode-tray ${args.join(' ')} stdout`, text: stdout }, { where: `supercode-tray ${args.join(' ')} stderr`, text: stderr });
      resolve(result);
    });
    child.stdin?.end();
  });
}

/** `supercode-tray list --json`, parsed. */
export async function listJson(t, options) {
  const args = ['list', '--json'];
  const { code, stdout, stderr } = await runCli(t, args, options);
  if (code !== 0) throw new Error(`list --json exited ${code}: ${stderr.trim()}`);
  return JSON.parse(stdout);
}

/** The `list --json` entry of the runtime named `name`, or undefined. */
export async function listed(t, name, options) {
  return (await listJson(t, options)).runtimes.find((r) => r.name === name);
}

/** Polls `list --json` until the entry named `name` satisfies `predicate`; returns it. */
export function waitForListed(t, description, name, predicate, timeoutMs = CLI_TIMEOUT_MS, options) {
  return t.waitUntil(description, async () => {
    const entry = await listed(t, name, options);
    return entry && predicate(entry) ? entry : undefined;
  }, timeoutMs);
}

/**
 * The window's row of runtime `name` as the agent part shows it, or null:
 * `{ id, state, needsYou, stateText, title, detail, people, actions: [{ id, label }],
 *    alerts: [text of any error or notice in the row] }`. `state` is the row's
 * `data-agent-state` (absent, so null, for `unknown`).
 */
export function agentRow(app, name) {
  return app.execute(`
    const row = [...document.querySelectorAll('[data-testid="runtime-row"]')].find((r) => r.querySelector('.row-name')?.textContent === arguments[0]);
    if (!row) return null;
    const text = (css) => row.querySelector(css)?.textContent ?? '';
    return {
      id: row.dataset.runtimeId,
      state: row.dataset.agentState ?? null,
      needsYou: row.dataset.needsYou === 'true',
      stateText: text('[data-testid="agent-state"]'),
      title: text('[data-testid="agent-title"]'),
      detail: text('[data-testid="agent-detail"]'),
      people: text('[data-testid="agent-people"]'),
      actions: [...row.querySelectorAll('[data-testid="agent-action"]')].map((b) => ({ id: b.dataset.actionId, label: b.textContent })),
      alerts: [...row.querySelectorAll('[data-testid="row-error"], [data-testid="row-notice"]')].map((e) => e.textContent).filter((s) => s.trim() !== ''),
    };
  `, [name]);
}

/** Waits until the window's row of `name` satisfies `predicate`; returns the row. */
export function waitForAgentRow(app, description, name, predicate, timeoutMs) {
  return app.waitFor(description, async () => {
    const row = await agentRow(app, name);
    return row && predicate(row) ? row : undefined;
  }, timeoutMs);
}

/**
 * The tray menu's submenu of runtime `name` ("NAME — STATE: TITLE"), as
 * `{ label, state, title, entries }` (`state` the menu's word, `entries` the labels inside), or
 * undefined when the runtime has no submenu (no known agent state: "Attach NAME (KIND)").
 */
export function submenuOf(menu, name) {
  const prefix = `${name} \u2014 `;
  const entry = menu.find((e) => e.label.startsWith(prefix) && e.children.length > 0);
  if (!entry) return undefined;
  const rest = entry.label.slice(prefix.length);
  const colon = rest.indexOf(': ');
  return {
    label: entry.label,
    state: colon < 0 ? rest : rest.slice(0, colon),
    title: colon < 0 ? '' : rest.slice(colon + 2),
    entries: entry.children.map((c) => c.label),
  };
}
