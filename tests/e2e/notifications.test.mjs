// Desktop notifications (issue 4): what the app tells the user without its window, through the
// desktop's notification server (org.freedesktop.Notifications on the session bus). A stand-in
// server (notifications.mjs, notification-server.py) owns that name on the test's private bus
// and records every Notify call with the pid of the process that sent it.
//
// A runtime that dies (SIGKILL: its receipt stays behind) is told as "Runtime stopped"; one that
// stops cleanly (SIGTERM: it removes its receipt) is not. A registration that becomes "waiting
// for approval" is told as "Registration waiting". No notification carries a token.

import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

import { assert, test } from './harness.mjs';
import { isRunning } from './processes.mjs';
import {
  canary,
  findLeaks,
  loopbackPorts,
  pendingRows,
  readJsonIfExists,
  runtimeRows,
  startCanonTestServer,
  waitForRow,
  writeCanonJson,
  writePendingRegistrations,
  writePrivateFile,
} from './support.mjs';
import { notificationTexts, startNotificationServer } from './notifications.mjs';

/** The bearer token both demo runtimes serve with; it must reach no notification. */
const TOKEN = canary('token');
/** The API key the fake Canon would issue (it never approves here). */
const API_KEY = canary('api-key');
/** The poll token of a registration submitted outside the app; it must reach no notification. */
const POLL_TOKEN = canary('poll-token');
/** Status polls answered `pending`: more than the test can ever make (one every 2 s), so the
 *  submitted registration stays waiting for approval. */
const PENDING_FOREVER = 1_000_000;
/** How long the submission to the fake Canon may take after Approve (one HTTP round trip; a
 *  loaded CI machine gets plenty). */
const SUBMIT_TIMEOUT_MS = 60_000;
/** How soon a runtime's exit must show in the window (see exit.test.mjs): under the watcher's
 *  10 s backstop rescan, so the exit itself was noticed. */
const EXIT_NOTICED_WITHIN_MS = 8_000;

const STOPPED = 'Runtime stopped';
const WAITING = 'Registration waiting';

let notifications;
let canon;

/**
 * The notification server must own its name before the app starts; the fake Canon, which keeps
 * every registration pending, must be running for CANON_BASE_URL to name it.
 */
export async function env({ app, artifactsDir, fileSlug }) {
  notifications = await startNotificationServer({ artifactsDir, fileSlug });
  canon = await startCanonTestServer({ app, artifactsDir, fileSlug }, { apiKey: API_KEY, pendingPolls: PENDING_FOREVER });
  return { CANON_BASE_URL: canon.baseUrl };
}

/** Asserts that no notification holds any of `secrets` or a loopback address. */
function assertNoLeaks(secrets) {
  const texts = notificationTexts(notifications.all());
  assert.deepEqual(findLeaks(texts, secrets), [], 'no notification carries a secret');
  const ports = texts.flatMap(({ text }) => [...loopbackPorts(text)]);
  assert.deepEqual(ports, [], 'no notification names a loopback address');
}

// Proves: SIGKILLing a live runtime makes the app send one "Runtime stopped" notification that
// names it, while a runtime that stopped cleanly before (SIGTERM: it removed its own receipt) got
// none. The clean stop comes first, so the kill's notification is the barrier: had the clean stop
// been told, its notification would have arrived before it.
test('a SIGKILLed runtime is notified as stopped, a cleanly stopped one is not', async (t) => {
  const tokenFile = join(t.stateDir, 'runtime-token');
  await writePrivateFile(tokenFile, `${TOKEN}\n`);
  const clean = await t.startDemoRuntime('notify-clean', { args: ['--token-file', tokenFile] });
  const doomed = await t.startDemoRuntime('notify-doomed', { args: ['--token-file', tokenFile] });
  const app = await t.openApp();
  const pid = await t.appPid();
  for (const name of ['notify-clean', 'notify-doomed']) {
    await waitForRow(app, `${name} listed as running`, name, (row) => row.status === 'running');
  }

  process.kill(clean.pid, 'SIGTERM');
  const cleanExit = await clean.exit;
  assert.equal(cleanExit.code, 0, `the clean runtime exited by itself (${JSON.stringify(cleanExit)})`);
  await app.waitFor('notify-clean to leave the window', async () => !(await runtimeRows(app)).some((row) => row.name === 'notify-clean'), EXIT_NOTICED_WITHIN_MS);

  process.kill(doomed.pid, 'SIGKILL');
  await doomed.exit;
  const told = await notifications.waitFor(`a "${STOPPED}" notification naming notify-doomed`, (n) => n.pid === pid && n.summary === STOPPED && n.body.includes('notify-doomed'));
  console.log(`       (app name ${JSON.stringify(told.appName)}; body ${JSON.stringify(told.body)})`);
  assert.match(told.body, /^notify-doomed stopped unexpectedly\./, 'the body starts with the runtime name');
  // A plain demo runtime has no launch command the tray could run (issue 31).
  assert.doesNotMatch(told.body, /Revive/, 'a runtime the tray cannot relaunch is not offered Revive');
  assert.equal(told.appName, 'supercode-tray', 'the notification names the app it comes from');

  const stopped = notifications.from(pid).filter((n) => n.summary === STOPPED);
  assert.deepEqual(stopped.map((n) => n.body.split(' ')[0]), ['notify-doomed'], 'only the killed runtime was told as stopped');
  assert.ok(!notifications.all().some((n) => n.body.includes('notify-clean') || n.summary.includes('notify-clean')), 'no notification names the cleanly stopped runtime');
  assertNoLeaks([TOKEN, API_KEY]);
});

// Proves: submitting a pending registration (Approve in the window, against a Canon that keeps it
// pending) makes the app send one "Registration waiting" notification naming the profile, and
// neither the poll token Canon issued nor any other secret is in it.
test('a registration submitted for approval is notified as waiting, by profile', async (t) => {
  const profile = 'nova-waiting';
  const pendingFile = join(t.env.CANON_HOME, 'pending-registrations.json');
  try {
    await writePendingRegistrations(t.env.CANON_HOME, [profile]);
    const app = await t.openApp();
    const pid = await t.appPid();
    await app.waitFor(`${profile} listed as not yet submitted`, async () => (await pendingRows(app)).some((p) => p.profile === profile && p.state === 'unsubmitted'));
    const before = notifications.all().length;

    await (await app.find(`[data-testid="pending-row"][data-profile="${profile}"] [data-testid="action-approve"]`)).click();
    const submitted = await app.waitFor('the submission to be saved with its poll token', async () => {
      const entry = (await readJsonIfExists(pendingFile))?.[profile];
      return entry?.requestId && entry?.pollToken ? entry : undefined;
    }, SUBMIT_TIMEOUT_MS);
    const told = await notifications.waitFor(`a "${WAITING}" notification naming ${profile}`, (n) => n.pid === pid && n.summary === WAITING && n.body.includes(`"${profile}"`));
    assert.equal(told.body, `The agent registration "${profile}" is waiting for approval.`);
    assert.ok(notifications.all().findIndex((n) => n.id === told.id) >= before, 'the notification came after Approve');

    const state = await canon.state();
    assert.equal(state.registrations.length, 1, 'Canon saw one registration');
    assert.equal(state.registrations[0].requestId, submitted.requestId, 'the file names the request Canon issued');
    assert.equal(state.registrations[0].acked, false, 'still waiting: never approved, never acknowledged');
    const waiting = notifications.from(pid).filter((n) => n.summary === WAITING);
    assert.equal(waiting.length, 1, `one "${WAITING}" notification (saw ${waiting.length})`);
    assertNoLeaks([submitted.pollToken, TOKEN, API_KEY]);
  } finally {
    // The next app of this file would resume polling a registration left submitted.
    await rm(pendingFile, { force: true });
  }
});

// Proves: a registration submitted outside the app (requestId and pollToken written to
// pending-registrations.json, as @canonmsg/core does) makes the running app send a
// "Registration waiting" notification naming the profile, and the poll token is not in it.
test('a registration written as submitted while the app runs is notified as waiting', async (t) => {
  const profile = 'nova-elsewhere';
  const pendingFile = join(t.env.CANON_HOME, 'pending-registrations.json');
  try {
    const app = await t.openApp();
    const pid = await t.appPid();
    await app.waitForElement('[data-testid="secret-store"], [data-testid="empty-state"]');
    const now = new Date().toISOString();
    await writeCanonJson(pendingFile, {
      [profile]: {
        profile,
        clientType: 'claude-code',
        localRegistrationId: randomUUID(),
        requestId: randomUUID(),
        pollToken: POLL_TOKEN,
        createdAt: now,
        updatedAt: now,
      },
    });
    await app.waitFor(`${profile} listed as waiting`, async () => (await pendingRows(app)).some((p) => p.profile === profile && p.state === 'waiting'));
    const told = await notifications.waitFor(`a "${WAITING}" notification naming ${profile}`, (n) => n.pid === pid && n.summary === WAITING && n.body.includes(`"${profile}"`));
    assert.equal(told.body, `The agent registration "${profile}" is waiting for approval.`);
    assertNoLeaks([POLL_TOKEN, TOKEN, API_KEY]);
    assert.equal(await isRunning(pid), true, 'the app is still running');
  } finally {
    await rm(pendingFile, { force: true });
  }
});
