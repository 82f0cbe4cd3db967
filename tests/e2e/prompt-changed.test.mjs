// Issue 29: an action is bound to the prompt the user saw. Through the real app, a `switch` demo
// runtime (crates/demo-runtime/src/scenario.rs) asks "Run the unit tests?" (its Approve asks
// nothing first) until it is cued with SIGUSR1, then "Drop the production database?" (its
// Approve asks first) at a new revision. The runtime prints a JSON line for every action call it
// answers (`{"event":"action",...}`) and for the cue (`{"event":"cued","revision":N}`), so these
// tests see exactly what reached it: the app must refuse the stale choice itself, before
// sending, not leave it to the runtime's own `stale-revision` check.
//
// The hard part is making the stale choice at all: once the app shows the new prompt, the old
// menu item and the old button are gone. A user meets the old item only in the moment between
// the core reading the new document and the menu showing it; the menu test holds that moment
// open by stopping the app while the runtime switches. Each test says how it makes its choice.

import { readFile } from 'node:fs/promises';

import { STATE_LABELS, agentRow, listed, runCli, submenuOf, waitForAgentRow } from './agents.mjs';
import { assert, test } from './harness.mjs';
import { startNotificationServer } from './notifications.mjs';
import { backendSnapshot, filesUnder, rowSelector } from './support.mjs';
import { startTrayHost } from './tray.mjs';

/** The runtime's first question, whose Approve runs without asking. */
const FIRST = 'Run the unit tests?';
/** What it asks once cued, whose Approve is destructive and asked about first. */
const SECOND = 'Drop the production database?';
/** What the core's refusal tells the user (Refusal::PromptChanged). */
const LOOK_AGAIN = /look again/;

/**
 * How long the menu's click, sent while the app is stopped, is given to reach the app's bus
 * connection before the app continues: dbus-daemon forwards a message within milliseconds, and
 * nothing the test can watch says it has arrived (the app answers only once it runs again).
 */
const CLICK_DELIVERY_MS = 1_000;

let host;
let notifications;

export async function env({ artifactsDir, fileSlug }) {
  host = await startTrayHost({ artifactsDir, fileSlug });
  notifications = await startNotificationServer({ artifactsDir, fileSlug });
  // A click that meets another item of the changed menu than Approve could be Attach: it opens
  // nothing.
  return { SUPERCODE_BROWSER: '/bin/true' };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the app; returns its session, pid and tray item. */
async function openApp(t) {
  const app = await t.openApp();
  const pid = await t.appPid();
  const item = await host.itemOf(pid);
  return { app, pid, item };
}

/** Starts a `switch` runtime. */
function startSwitch(t, name) {
  return t.startDemoRuntime(name, { args: ['--scenario', 'switch'] });
}

/** Cues `runtime` (SIGUSR1) and returns the revision of the document that shows its new question. */
async function cue(runtime) {
  process.kill(runtime.pid, 'SIGUSR1');
  const { revision } = JSON.parse(await runtime.waitForLine(/^\{"event":"cued"/, 10_000, 'its "cued" line'));
  assert.equal(typeof revision, 'number', 'the cue switched the question');
  return revision;
}

/** Every action call `runtime` answered so far: `{ action, revision, outcome }`. */
function actionCalls(runtime) {
  return runtime.lines.filter((line) => line.startsWith('{"event":"action"')).map((line) => JSON.parse(line));
}

/** The text of every log file in the file's log directory (the app's and the runtimes'). */
async function logs(t) {
  const files = await filesUnder(t.env.SUPERCODE_LOG_DIR);
  return (await Promise.all(files.map((file) => readFile(file, 'utf8')))).join('\n');
}

/**
 * What the core logged each time it refused an action on runtime `name` because its prompt had
 * changed: the revision the action was chosen from (`seen`) and the runtime's latest.
 */
async function refusedRevisions(t, name) {
  const refusal = new RegExp(`action refused: the prompt changed runtime=${name} .*seen=(\\d+) latest=(\\d+)`, 'g');
  return [...(await logs(t)).matchAll(refusal)].map((m) => ({ seen: Number(m[1]), latest: Number(m[2]) }));
}

/** Waits until the tray menu shows `name`'s submenu asking `title`; returns that submenu's menu entry. */
async function waitForQuestion(item, name, title) {
  const label = `${name} \u2014 ${STATE_LABELS['needs-approval']}: ${title}`;
  const menu = await item.waitForMenu(`the tray menu to show ${name} asking "${title}"`, (m) => submenuOf(m, name)?.label === label);
  return menu.find((e) => e.label === label);
}

/**
 * After a refused stale choice: the runtime got no action call, still asks the second question
 * (`list --json`), and the core logged the refusal of a choice made on the first question.
 */
async function assertNothingReached(t, runtime, name, cued) {
  assert.deepEqual(actionCalls(runtime), [], 'no action call reached the runtime: the app refused it before sending');
  const entry = await listed(t, name);
  assert.equal(entry.state?.value, 'needs-approval', 'the runtime still asks');
  assert.equal(entry.state.title, SECOND, 'it asks the second question: nothing approved it');
  const refused = await t.waitUntil('the core to log its refusal', async () => (await refusedRevisions(t, name)).at(-1));
  assert.ok(refused.seen < cued, `the refused choice was made on a document before the switch (seen ${refused.seen}, switched at ${cued})`);
  assert.ok(refused.latest >= cued, `the core had read the switched document (latest ${refused.latest})`);
  return entry;
}

/**
 * Plays the race of a click on runtime `name`'s Approve as its question changes: with the app
 * stopped (SIGSTOP), the runtime switches to its second question and the tray host sends the
 * click on the Approve item the menu showed with the first; then the app continues and meets
 * both at once. Returns what the click met, once settled:
 * - `refused by the app`: the old item (`act:approve:N:ID`), after the core read the new
 *   question: the app refused it before sending (`chosen` N, `refused` what the core logged);
 * - `sent`: the old item, before the core read the new question: the app sent it, with N;
 * - `new item`: the menu changed first and the click met the item now at that place (logged as
 *   `chosen`; the new Approve… only opens the window's confirmation);
 * - `gone`: the menu changed first and the item is gone ("does not refer to a menu item").
 */
async function raceOldApprove(t, { pid, item }, runtime, name) {
  const asking = await waitForQuestion(item, name, FIRST);
  assert.deepEqual(asking.children.map((e) => e.label), ['cargo test --lib', 'Approve', 'Deny\u2026', 'Attach'], 'Approve runs without asking');
  const approve = asking.children.find((e) => e.label === 'Approve');
  const menuPath = await item.menuPath();
  const { id } = await listed(t, name);

  let cued;
  let click;
  process.kill(pid, 'SIGSTOP');
  try {
    cued = await cue(runtime);
    click = host.request('click', { bus: item.bus, path: menuPath, item: approve.id });
    click.catch(() => {}); // awaited below, once the app answers
    await sleep(CLICK_DELIVERY_MS);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  try {
    await click;
  } catch (error) {
    if (/does not refer to a menu item/.test(error.message)) return { outcome: 'gone', cued, id };
    throw error;
  }
  const chosenLine = new RegExp(`tray menu item chosen item=(\\S*):${id}\\b`);
  const chosen = await t.waitUntil('the app to log the item the click chose', async () => chosenLine.exec(await logs(t))?.[1]);
  const old = /^act:approve:(\d+)$/.exec(chosen);
  if (!old) return { outcome: 'new item', chosen, cued, id };
  return t.waitUntil('the app to refuse or send the approve', async () => {
    const refused = (await refusedRevisions(t, name)).at(-1);
    if (refused) return { outcome: 'refused by the app', chosen: Number(old[1]), refused, cued, id };
    if (actionCalls(runtime).length > 0) return { outcome: 'sent', chosen: Number(old[1]), cued, id };
    return undefined;
  });
}

/**
 * How many runtimes the menu's race is played with before the test gives up on the click meeting
 * the old item after the core read the new question (see the test): in eight trial runs it did
 * on the first attempt seven times (once the menu had changed first).
 */
const MENU_RACE_ATTEMPTS = 6;

// Proves (issue 29): the menu item for Approve shown with the first question (`act:approve:N:ID`,
// no confirmation), chosen as the question changes to a destructive one, is refused by the app
// when the core has read the new question (it tells the user "Action failed ... look again") and
// never reaches the runtime, which still asks the new question; the menu then shows the new one,
// its Approve asked in the window.
//
// The race is held open by stopping the app (SIGSTOP) while the runtime switches and the tray host
// sends the click on the old item (raceOldApprove). When the app continues, which it handles first
// is up to its threads: the click may also meet the new menu (gone, or the item now in its place)
// or reach the core before it read the new document (then the runtime's own `stale-revision`
// refuses it). Each of those is checked to be harmless too, and the race is played again with a
// new runtime, until the click met the old item after the core read the change.
test('issue 29: an Approve chosen from the menu before the prompt changed is refused and never reaches the runtime', async (t) => {
  const app = await openApp(t);
  const outcomes = [];
  for (let attempt = 1; attempt <= MENU_RACE_ATTEMPTS; attempt++) {
    const name = `switch-menu-${attempt}`;
    const runtime = await startSwitch(t, name);
    const race = await raceOldApprove(t, app, runtime, name);
    outcomes.push(race.outcome);
    // Whatever the click met, nothing approved the destructive question.
    assert.deepEqual(actionCalls(runtime).filter((c) => c.outcome !== 'stale-revision'), [], `${name}: no action but a stale one reached the runtime (${race.outcome})`);
    const entry = await listed(t, name);
    assert.equal(entry.state?.value, 'needs-approval', `${name} still asks`);
    assert.equal(entry.state.title, SECOND, `${name} asks the second question: nothing approved it`);
    if (race.outcome !== 'refused by the app') {
      await runtime.stop();
      continue;
    }

    const failed = await notifications.waitFor('the app to say the action failed', (n) => n.pid === app.pid && n.summary === 'Action failed');
    assert.match(failed.body, LOOK_AGAIN, 'it tells the user the prompt changed');
    assert.match(failed.body, new RegExp(name), 'naming the runtime');
    assert.ok(race.chosen < race.cued, `the item carried the revision of the first question (${race.chosen}, switched at ${race.cued})`);
    await assertNothingReached(t, runtime, name, race.cued);
    assert.equal(race.refused.seen, race.chosen, 'the core refused the revision the item carried');

    const asked = await waitForQuestion(app.item, name, SECOND);
    assert.deepEqual(asked.children.map((e) => e.label), ["psql production -c 'DROP DATABASE app'", 'Approve\u2026', 'Deny\u2026', 'Attach'], 'the new Approve is asked in the window');

    // What reaches the runtime is seen: an action sent on the new question is in its log.
    const denied = await runCli(t, ['act', race.id, 'deny', '--yes']);
    assert.equal(denied.code, 0, `act deny --yes (stderr: ${denied.stderr.trim()})`);
    assert.deepEqual(actionCalls(runtime).map((c) => [c.action, c.outcome]), [['deny', 'accepted']], 'the runtime logs what reaches it');
    console.log(`       the click met the old item after the core read the change on attempt ${attempt} (${outcomes.join(', ')})`);
    return;
  }
  assert.fail(`in ${MENU_RACE_ATTEMPTS} attempts the click never met the old item after the core read the change: ${outcomes.join(', ')}`);
}, { timeoutMs: 300_000 });

// Proves (issue 29): Approve sent from the window with the revision the window showed with the
// first question, once the question changed to a destructive one, is refused with a message that
// says to look again, never reaches the runtime, and the card shows the new question.
//
// It is sent through the page's own IPC bridge (the `act` command the card's Approve button
// invokes, with the revision of the snapshot the card rendered the first question from), not by
// a click: once the card shows the new question its button sends the new revision, and a click
// cannot be made to land between the core reading the change and the page rendering it. (Tried:
// holding the page's script thread to make room for one held up the app's own handling too; the
// tray showed the change only once the page was let go, and the click was refused by the
// runtime's `stale-revision`, not by the app.) The real click on a prompt that changed under it
// is the confirmation test below.
test('issue 29: an Approve sent from the window with the revision it showed is refused with "look again" once the prompt changed, and never reaches the runtime', async (t) => {
  const name = 'switch-window';
  const { app } = await openApp(t);
  const runtime = await startSwitch(t, name);
  const row = await waitForAgentRow(app, `${name} to ask "${FIRST}"`, name, (r) => r.state === 'needs-approval' && r.title === FIRST);
  assert.deepEqual(row.actions.map((a) => a.label), ['Approve', 'Deny\u2026'], 'Approve runs without asking');
  const shown = (await backendSnapshot(app)).runtimes.find((r) => r.id === row.id).state;
  assert.equal(shown.title, FIRST, 'the snapshot the card rendered asks the first question');

  const cued = await cue(runtime);
  assert.ok(shown.revision < cued, `the card's revision (${shown.revision}) is older than the switch (${cued})`);
  const changed = await waitForAgentRow(app, 'the card to show the new question', name, (r) => r.title === SECOND);
  assert.deepEqual(changed.actions.map((a) => a.label), ['Approve\u2026', 'Deny\u2026'], 'whose Approve asks first');
  const answer = await app.executeAsync(`
    const [id, revision, done] = arguments;
    window.__TAURI_INTERNALS__.invoke('act', { id, action: 'approve', revision }).then((outcome) => done({ outcome }), (error) => done({ error }));
  `, [row.id, shown.revision]);
  assert.equal(answer.error?.code, 'refused', `the app refuses it: ${JSON.stringify(answer)}`);
  assert.match(answer.error.message, LOOK_AGAIN, 'and says to look again');

  await assertNothingReached(t, runtime, name, cued);
  assert.equal((await refusedRevisions(t, name)).at(-1).seen, shown.revision, 'the core refused the revision the window showed');
  const after = await agentRow(app, name);
  assert.equal(after.state, 'needs-approval');
  assert.equal(after.title, SECOND, 'the card shows the new question');
});

// Proves (issue 29): a confirmation opened on the first question confirms what it asked, not the
// question shown when the user confirms: Deny… opened on "Run the unit tests?" stays open while
// the question changes, and its Confirm is refused ("look again") and sends nothing. Every step
// is a WebDriver click on the real window; nothing is held.
test('issue 29: a confirmation opened before the prompt changed is refused when confirmed and never reaches the runtime', async (t) => {
  const name = 'switch-confirm';
  const { app } = await openApp(t);
  const runtime = await startSwitch(t, name);
  const row = await waitForAgentRow(app, `${name} to ask "${FIRST}"`, name, (r) => r.state === 'needs-approval' && r.title === FIRST);
  const inRow = (css) => `${rowSelector(row.id)} ${css}`;
  await (await app.waitForElement(inRow('[data-testid="agent-action"][data-action-id="deny"]'))).click();
  await app.waitFor('the confirmation to ask about the unit tests', async () => (await (await app.find(inRow('[data-testid="confirm-act-text"]'))).text()) === 'Deny running the unit tests?');

  const cued = await cue(runtime);
  await waitForAgentRow(app, 'the card to show the new question', name, (r) => r.title === SECOND);
  assert.equal(await (await app.find(inRow('[data-testid="confirm-act-text"]'))).text(), 'Deny running the unit tests?', 'the confirmation still asks what it was opened with');
  await (await app.find(inRow('[data-testid="confirm-act"] [data-testid="confirm-accept"]'))).click();

  const refused = await waitForAgentRow(app, 'the card to say the action was refused', name, (r) => r.alerts.some((a) => LOOK_AGAIN.test(a)));
  assert.equal(refused.title, SECOND, 'the card shows the new question');
  await assertNothingReached(t, runtime, name, cued);
});
