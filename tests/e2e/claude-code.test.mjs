// Issue 32 end to end: a real Claude Code session in the real app, the real panel and the
// desktop's notifications. The pinned CLI (tests/claude-code, 2.1.332) runs interactively in tmux
// (terminal.mjs) against the stand-in Messages API (model-api.mjs: `run: COMMAND` → one Bash
// call of COMMAND), in a HOME of this file's with Claude Code's first-run state seeded (as
// tests/supercode_tray/claude_code.rs does) and `--permission-mode default`; the app runs with
// xfce4-panel (panel.mjs) as its tray host and the stand-in notification server.
//
// The walk: `hooks install claude-code --yes` → the window says Claude Code is connected →
// the session is in the tray menu and the window → it asks to run a command: the icon changes,
// a notification names the command at once, the menu shows it above Approve → Approve clicked
// in the panel's menu runs it and the terminal says the hook allowed it → a second request
// approved from the window's card runs → a third denied from the window's card does not.
// With SUPERCODE_UPDATE_SCREENSHOT=1 it also writes the README's pictures, docs/tray-panel.png
// (the menu with the first command above Approve) and docs/screenshot.png (the window with the
// third request waiting).
//
// Skipped with a message when the pinned CLI or tmux is missing, unless
// SUPERCODE_REQUIRE_AGENTS=1 (scripts/test-env.sh sets it), when that fails the file.

import { copyFile, mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { ALERT_HEADINGS, agentRow, listJson, runCli, waitForAgentRow } from './agents.mjs';
import { assert, test } from './harness.mjs';
import { TURN_END_TEXT, startModelApi } from './model-api.mjs';
import { notificationTexts, startNotificationServer } from './notifications.mjs';
import {
  ICON_SHOWN_TIMEOUT_MS,
  captureScreen,
  clickEntry,
  cropToMenus,
  itemOf,
  itemStatus,
  menuLabelsInOrder,
  moveAppWindowAside,
  openRuntimeSubmenu,
  regionPixels,
  startPanel,
  trayIcon,
  waitFor,
} from './panel.mjs';
import { canary, findLeaks, paintedScreenshot, rowSelector, waitForText } from './support.mjs';
import { haveTmux, startTerminal } from './terminal.mjs';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLAUDE = join(REPO_ROOT, 'tests/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude');
const DOCS = join(REPO_ROOT, 'docs');

/** Claude Code's key: it must reach nothing of ours. */
const API_KEY = `sk-ant-api03-${canary('claude-code-key')}`;
/** The project Claude Code runs in; the session is named after its folder. */
const PROJECT = 'shop-api';
/** The session's name in the window and the menu (the hook host names it so). */
const SESSION = `Claude Code \u00b7 ${PROJECT}`;
/** What the session is asked to run: approved in the menu, approved in the window, denied. */
const FROM_MENU = 'mkdir -p build && date > build/stamp';
const FROM_WINDOW = 'echo 0.2.0 > VERSION';
const DENIED = './scripts/deploy.sh production';
/** The project's deploy script: what it leaves when it runs. */
const DEPLOY_SCRIPT = '#!/bin/sh\necho "deploying to $1"\ntouch deployed\n';

/**
 * How long one step of Claude Code may take (a hook, a turn against the stand-in), and how long
 * the window, the menu or the panel may take to show it: generous for a loaded 2-core machine;
 * each takes about a second here.
 */
const STEP_TIMEOUT_MS = 45_000;
/**
 * How soon the notification must follow the window showing the request: both come from the
 * same change the core reads; the notification goes out over D-Bus from a blocking task.
 */
const NOTIFIED_WITHIN_MS = 10_000;

let skipped;
let home;
let notifications;
let model;

export async function env(ctx) {
  if (!(await isFile(CLAUDE)) || !(await haveTmux())) {
    const why = `the pinned Claude Code CLI (${CLAUDE}) or tmux is missing; run scripts/install-deps.sh --test`;
    if (process.env.SUPERCODE_REQUIRE_AGENTS === '1') throw new Error(`${why} (SUPERCODE_REQUIRE_AGENTS=1)`);
    skipped = why;
    return {};
  }
  home = join(ctx.stateDir, 'home');
  const project = join(home, 'src', PROJECT);
  await mkdir(join(home, '.claude'), { recursive: true, mode: 0o700 });
  await mkdir(join(project, 'scripts'), { recursive: true });
  await writeFile(join(project, 'scripts', 'deploy.sh'), DEPLOY_SCRIPT, { mode: 0o755 });
  // Claude Code's first-run state: onboarding done, the folder trusted, the key approved.
  await writeFile(join(home, '.claude.json'), JSON.stringify({
    hasCompletedOnboarding: true,
    theme: 'light',
    customApiKeyResponses: { approved: [API_KEY.slice(-20)], rejected: [] },
    projects: { [project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true, allowedTools: [] } },
  }));
  notifications = await startNotificationServer(ctx, { actions: true });
  await startPanel(ctx);
  model = await startModelApi();
  // The app, the CLI and Claude Code share this HOME, so they share ~/.claude/settings.json.
  return { HOME: home, CLAUDE_CONFIG_DIR: undefined };
}

async function isFile(path) {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

/** `sh` single quotes around `value`. */
const shellQuoted = (value) => `'${String(value).replace(/'/g, `'\\''`)}'`;

/**
 * Writes the script the terminal runs: Claude Code in the project with the app's environment
 * (what locates the receipts, the state, the keychain's bus and the hooks' socket directory) and
 * the stand-in's address and key.
 */
async function writeLaunchScript(t) {
  const kept = Object.entries(t.env).filter(([name, value]) => value !== undefined && /^(HOME|DBUS_SESSION_BUS_ADDRESS|CANON_HOME|XDG_\w+|SUPERCODE_\w+)$/.test(name));
  const vars = [
    ...kept,
    ['ANTHROPIC_BASE_URL', model.url],
    ['ANTHROPIC_API_KEY', API_KEY],
    ['DISABLE_TELEMETRY', '1'],
    ['DISABLE_AUTOUPDATER', '1'],
    ['CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', '1'],
  ];
  const script = join(t.stateDir, 'run-claude.sh');
  await writeFile(script, [
    '#!/bin/sh',
    'unset CLAUDE_CONFIG_DIR',
    ...vars.map(([name, value]) => `export ${name}=${shellQuoted(value)}`),
    `cd ${shellQuoted(join(home, 'src', PROJECT))}`,
    `exec ${shellQuoted(CLAUDE)} --permission-mode default`,
    '',
  ].join('\n'), { mode: 0o700 });
  return script;
}

/** The first line of a notification's body. */
const firstLine = (n) => n.body.split('\n')[0];

/** The labels of the session's submenu, in order, from the layout the panel reads. */
async function sessionSubmenu(item) {
  const labels = await menuLabelsInOrder(item);
  const at = labels.findIndex((l) => l.startsWith(`${SESSION} \u2014 `));
  if (at < 0) return undefined;
  // Its entries follow it; the last is Attach.
  const end = labels.indexOf('Attach', at);
  return end < 0 ? undefined : { title: labels[at], entries: labels.slice(at + 1, end + 1) };
}

/** Waits until the window's row of the session asks to run `command`; returns the row. */
function waitForRequest(app, command) {
  return waitForAgentRow(app, `the window to show the session asking to run ${command}`, SESSION, (r) => r.state === 'needs-approval' && r.detail === command, STEP_TIMEOUT_MS);
}

/** Waits until the window's row of the session shows the turn ended. */
function waitForTurnEnd(app, after) {
  return waitForAgentRow(app, `the turn to end after ${after}`, SESSION, (r) => r.state === 'needs-input' && r.title === TURN_END_TEXT, STEP_TIMEOUT_MS);
}

/** With SUPERCODE_UPDATE_SCREENSHOT=1, copies `picture` over docs/`name` (the README's). */
async function updateDocsPicture(picture, name) {
  if (process.env.SUPERCODE_UPDATE_SCREENSHOT !== '1') return;
  await copyFile(picture, join(DOCS, name));
  console.log(`       updated docs/${name}`);
}

/** Every file's text under `dir` (the app's logs), for the leak search. */
async function filesText(dir) {
  const out = [];
  for (const name of await readdir(dir).catch(() => [])) {
    out.push({ where: join(dir, name), text: await readFile(join(dir, name), 'utf8').catch(() => '') });
  }
  return out;
}

// Proves the issue's walk with the real parts: connected → listed → needs-approval (icon,
// notification with the command, the command above Approve in the panel's menu) → Approve from
// the panel's menu runs the command and Claude Code says the hook allowed it → Approve from the
// window's card runs the next → Deny from the window's card leaves the third not run; the
// session leaves the window when its terminal closes; the API key reaches nothing of ours.
test('a real Claude Code session is approved from the panel menu and the window, and denied', async (t) => {
  if (skipped) {
    console.log(`       skipped: ${skipped}`);
    return;
  }
  const project = join(home, 'src', PROJECT);
  const install = await runCli(t, ['hooks', 'install', 'claude-code', '--yes']);
  assert.equal(install.code, 0, `hooks install: ${install.stderr}`);
  assert.match(install.stdout, /PermissionRequest/);

  const app = await t.openApp();
  const pid = await t.appPid();
  await moveAppWindowAside(pid);
  const item = await itemOf(pid);
  const { plugin, icon } = await trayIcon();
  const drawn = async (label) => regionPixels(await captureScreen(join(t.artifactsDir, `${t.fileSlug}--${label}.png`)), icon);
  const empty = await drawn('no-session');
  await waitForText(app, '[data-testid="agent-row"][data-agent="claude-code"] [data-testid="agent-connection"]', /^Connected$/);

  const term = await startTerminal(t.env, `supercode-e2e-${process.pid}`, await writeLaunchScript(t));
  try {
    await term.waitForScreen('Claude Code to start', /manual mode on/, STEP_TIMEOUT_MS);
    // Listed from its first hook (SessionStart), in the window and in the menu.
    const listed = await waitForAgentRow(app, 'the session in the window', SESSION, (r) => r.state !== null, STEP_TIMEOUT_MS);
    await waitFor('the session in the tray menu', () => sessionSubmenu(item), STEP_TIMEOUT_MS);
    const live = await waitFor('the icon to show a live runtime', async () => {
      const now = await drawn('session');
      return now.equals(empty) ? undefined : now;
    }, ICON_SHOWN_TIMEOUT_MS);
    assert.equal(await itemStatus(item), 'Active', `nothing needs you yet (${listed.state})`);

    // It asks to run a command: the icon changes, the notification says so with the command,
    // and the menu shows the command above Approve.
    await term.typeLine(`run: ${FROM_MENU}`);
    const asking = await waitForRequest(app, FROM_MENU);
    const shownAt = Date.now();
    assert.equal(asking.title, 'Run Bash?');
    assert.deepEqual(asking.actions.filter((a) => a.id === 'approve' || a.id === 'deny').map((a) => a.id), ['approve', 'deny'], 'the window offers Approve and Deny');
    const notice = await notifications.waitFor('the approval notification', (n) => n.pid === pid && n.summary === ALERT_HEADINGS['needs-approval'], NOTIFIED_WITHIN_MS);
    console.log(`       the notification was there ${Date.now() - shownAt} ms after the test saw the request in the window`);
    assert.equal(firstLine(notice), `${SESSION}: Run Bash?`);
    assert.equal(notice.body.split('\n')[1], FROM_MENU, 'the command is in the body');
    await waitFor('the needs-you icon', async () => {
      const now = await drawn('needs-you');
      return !now.equals(live) && !now.equals(empty);
    }, ICON_SHOWN_TIMEOUT_MS);
    assert.equal(await itemStatus(item), 'NeedsAttention');
    const submenu = await waitFor('the menu to offer Approve', async () => {
      const sub = await sessionSubmenu(item);
      return sub?.entries.includes('Approve') ? sub : undefined;
    }, STEP_TIMEOUT_MS);
    assert.equal(submenu.title, `${SESSION} \u2014 Needs approval: Run Bash?`);
    assert.equal(submenu.entries[0], FROM_MENU, 'the command comes first');
    assert.equal(submenu.entries[1], 'Approve', 'then Approve');
    assert.ok(submenu.entries.includes('Deny\u2026'), `Deny asks first: ${submenu.entries.join(' | ')}`);
    await term.waitForScreen("Claude Code's own dialog", /Do you want to proceed\?/, STEP_TIMEOUT_MS);

    // Approve, clicked in the panel's menu with real X input.
    const opened = await openRuntimeSubmenu(icon);
    const menuShot = await cropToMenus(await captureScreen(join(t.artifactsDir, `${t.fileSlug}--menu.png`)), { plugin, ...opened }, join(t.artifactsDir, `${t.fileSlug}--menu-cropped.png`));
    await clickEntry(opened.submenu, submenu.entries.indexOf('Approve'), submenu.entries.length);
    await waitFor('the approved command to run', () => isFile(join(project, 'build', 'stamp')), STEP_TIMEOUT_MS);
    await term.waitForScreen('the terminal to say the hook allowed it', /Allowed by PermissionRequest hook/, STEP_TIMEOUT_MS);
    await waitForTurnEnd(app, 'the approval from the menu');
    const told = notifications.from(pid).filter((n) => n.summary === ALERT_HEADINGS['needs-approval'] && n.body.split('\n')[1] === FROM_MENU);
    assert.equal(told.length, 1, 'one notification for the request');

    // Approve from the window's card.
    await term.typeLine(`run: ${FROM_WINDOW}`);
    const second = await waitForRequest(app, FROM_WINDOW);
    await (await app.waitForElement(`${rowSelector(second.id)} [data-testid="agent-action"][data-action-id="approve"]`)).click();
    await waitFor('the command approved in the window to run', async () => (await readFile(join(project, 'VERSION'), 'utf8').catch(() => '')) === '0.2.0\n', STEP_TIMEOUT_MS);
    await waitForTurnEnd(app, 'the approval from the window');

    // Deny from the window's card (it asks first): the command does not run. The window
    // waiting on it is the README's picture.
    await term.typeLine(`run: ${DENIED}`);
    const third = await waitForRequest(app, DENIED);
    // The window asked the core about the desktop when it opened, long ago: the panel is a tray
    // host, so it says nothing about one missing.
    assert.deepEqual(await app.findAll('[data-testid="desktop-notice"]'), [], 'a tray host runs: no notice about its absence');
    await app.execute('document.activeElement?.blur(); window.scrollTo(0, 0);');
    const windowShot = await paintedScreenshot(t, app, 'window');
    const inRow = (css) => `${rowSelector(third.id)} ${css}`;
    await (await app.waitForElement(inRow('[data-testid="agent-action"][data-action-id="deny"]'))).click();
    await (await app.waitForElement(inRow('[data-testid="confirm-act"] [data-testid="confirm-accept"]'))).click();
    await term.waitForScreen('the terminal to say the hook denied it', /Denied by PermissionRequest hook/, STEP_TIMEOUT_MS);
    await waitForTurnEnd(app, 'the denial');
    assert.equal(await isFile(join(project, 'deployed')), false, 'the denied command did not run');

    // The API key is in nothing the app shows, sends or writes.
    const sources = [
      ...notificationTexts(notifications.all()),
      { where: 'the page', text: await app.execute('return document.documentElement.outerHTML;') },
      { where: 'list --json', text: JSON.stringify(await listJson(t)) },
      ...(await filesText(t.env.SUPERCODE_LOG_DIR)),
    ];
    assert.deepEqual(findLeaks(sources, [API_KEY]), [], 'the API key reached nothing of ours');
    // Only a walk that passed updates the README's pictures.
    await updateDocsPicture(menuShot, 'tray-panel.png');
    await updateDocsPicture(windowShot, 'screenshot.png');
  } finally {
    await term.stop();
  }
  // Its terminal closed, Claude Code exits and the session leaves the window.
  await app.waitFor('the session to leave the window', async () => (await agentRow(app, SESSION)) === null, STEP_TIMEOUT_MS);
}, { timeoutMs: 300_000 });
