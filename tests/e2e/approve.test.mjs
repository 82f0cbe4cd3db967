// Approving a pending Canon agent registration from the window, against the fake Canon server
// (`canon-test-server`), through to the saved profile and the acknowledgement.

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { assert, test } from './harness.mjs';
import { notificationTexts, startNotificationServer } from './notifications.mjs';
import {
  canary,
  findLeaks,
  paintedScreenshot,
  pendingRows,
  readJsonIfExists,
  recorded,
  startCanonTestServer,
  startRecording,
  writePendingRegistrations,
} from './support.mjs';
import { startTrayHost } from './tray.mjs';

const PROFILE = 'nova';
/** The API key the fake Canon issues; it must end up in agents.json and the keychain only. */
const API_KEY = canary('api-key');
/** Status polls answered `pending` before `approved` (the app polls every 2 s). */
const PENDING_POLLS = 2;
/** Submit + 3 polls 2 s apart takes about 6 s; a loaded CI machine gets ten times that. */
const APPROVAL_TIMEOUT_MS = 60_000;

let canon;
let host;
let notifications;

/**
 * Starts the fake Canon before the app, whose CANON_BASE_URL must name it, and the stand-in tray
 * host and notification server, which must own their bus names before the app starts.
 */
export async function env({ app, artifactsDir, fileSlug }) {
  host = await startTrayHost({ artifactsDir, fileSlug });
  notifications = await startNotificationServer({ artifactsDir, fileSlug });
  canon = await startCanonTestServer({ app, artifactsDir, fileSlug }, { apiKey: API_KEY, pendingPolls: PENDING_POLLS });
  return { CANON_BASE_URL: canon.baseUrl };
}

/** The API key the app stored in the keychain for `profile`, or null. */
async function keychainApiKey(profile) {
  try {
    const { stdout } = await promisify(execFile)('secret-tool', ['lookup', 'service', 'supercode-tray', 'username', `canon-api-key:${profile}`]);
    return stdout.trim();
  } catch {
    return null;
  }
}

// Proves: a registration written to pending-registrations.json (seed format) is listed; Approve
// submits it to Canon and polls until Canon approves; then the row goes away (the entry is
// cleared), agents.json holds the profile with the key Canon issued, the key is in the keychain,
// Canon received an acknowledgement, and the key never reached the webview.
test('approving a pending registration saves the issued key and acknowledges it', async (t) => {
  const canonHome = t.env.CANON_HOME;
  await writePendingRegistrations(canonHome, [PROFILE]);
  const written = await readJsonIfExists(join(canonHome, 'pending-registrations.json'));

  const app = await t.openApp();
  await startRecording(app);
  await app.waitFor(`the pending registration ${PROFILE} to be listed`, async () => (await pendingRows(app)).some((p) => p.profile === PROFILE));
  const pendingCss = `[data-testid="pending-row"][data-profile="${PROFILE}"]`;
  await paintedScreenshot(t, app, 'pending');
  await (await app.find(`${pendingCss} [data-testid="action-approve"]`)).click();

  await app.waitFor('the Approve button to show it is waiting for Canon', async () => {
    const button = await app.find(`${pendingCss} [data-testid="action-approve"]`);
    return (await button.attribute('aria-busy')) === 'true';
  });
  await paintedScreenshot(t, app, 'waiting-for-canon');
  await app.waitFor('the approved registration to leave the window', async () => !(await pendingRows(app)).some((p) => p.profile === PROFILE), APPROVAL_TIMEOUT_MS);
  assert.deepEqual(await app.findAll('[data-testid="row-error"]'), [], 'no row reports an error');

  const agents = await readJsonIfExists(join(canonHome, 'agents.json'));
  assert.ok(agents?.[PROFILE], `agents.json has the profile ${PROFILE}`);
  assert.ok(agents[PROFILE].apiKey === API_KEY, 'agents.json holds the API key Canon issued (value withheld)');
  assert.equal(typeof agents[PROFILE].agentId, 'string');
  const pending = (await readJsonIfExists(join(canonHome, 'pending-registrations.json'))) ?? {};
  assert.ok(!(PROFILE in pending), 'the pending entry was cleared');
  assert.ok((await keychainApiKey(PROFILE)) === API_KEY, 'the keychain holds the API key (value withheld)');

  const state = await canon.state();
  assert.equal(state.registrations.length, 1, 'Canon saw one registration');
  const [registration] = state.registrations;
  assert.equal(registration.localRegistrationId, written[PROFILE].localRegistrationId, 'submitted under the idempotency key from the file');
  assert.ok(registration.polls >= PENDING_POLLS + 1, `polled until approved (${registration.polls} polls)`);
  assert.equal(registration.acked, true, 'Canon recorded the acknowledgement');
  assert.deepEqual(state.acks, [registration.requestId]);
  assert.equal(state.unauthorized, 0, 'every poll carried the poll token');

  const { ipc, dom } = await recorded(app);
  assert.ok(ipc.some((payload) => payload.includes(`"profile":"${PROFILE}"`)), 'the recorder saw the registration cross IPC (it records)');
  const leaks = findLeaks([...ipc.map((text, i) => ({ where: `IPC payload ${i}`, text })), ...dom.map((text, i) => ({ where: `DOM record ${i}`, text }))], [API_KEY]);
  assert.deepEqual(leaks, [], 'the API key never reached the webview');
  await paintedScreenshot(t, app, 'approved');
});

// Proves: "Approve registration" in the tray menu carries a registration through approval without
// the window: agents.json gets the profile with the key Canon issued, the entry leaves the menu,
// and a "Registration approved" notification names the profile and carries no key. Runs after
// the window's approval, whose assertions count Canon's registrations from a fresh server.
test('Approve registration in the tray menu completes it and says so', async (t) => {
  const profile = 'orion';
  const label = `Approve registration "${profile}"`;
  await writePendingRegistrations(t.env.CANON_HOME, [profile]);
  await t.openApp();
  const pid = await t.appPid();
  const tray = await host.itemOf(pid);

  await tray.click(label);

  const agents = await t.waitUntil(
    `agents.json to hold ${profile}`,
    async () => {
      const saved = await readJsonIfExists(join(t.env.CANON_HOME, 'agents.json'));
      return saved?.[profile] ? saved : undefined;
    },
    APPROVAL_TIMEOUT_MS,
  );
  assert.ok(agents[profile].apiKey === API_KEY, 'agents.json holds the API key Canon issued (value withheld)');
  await tray.waitForMenu('the Approve entry to go', (m) => !m.some((e) => e.label === label));
  const told = await notifications.waitFor(
    `a "Registration approved" notification naming ${profile}`,
    (n) => n.pid === pid && n.summary === 'Registration approved' && n.body.includes(`"${profile}"`),
  );
  console.log(`       (body ${JSON.stringify(told.body)})`);
  assert.deepEqual(findLeaks(notificationTexts(notifications.all()), [API_KEY]), [], 'no notification carries the API key');
});
