// Self-test of the stand-in notification server (notification-server.py, notifications.mjs)
// without the app: a client (gdbus) calls it as any notifying program would, and the server must
// answer as the Desktop Notifications Specification says and record what it was sent.
//
//   scripts/test-env.sh node tests/e2e/run.mjs \
//     --app /usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser tests/e2e/selftest/notification-server.selftest.mjs

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { assert, test } from '../harness.mjs';
import { startNotificationServer } from '../notifications.mjs';
import { startProcess } from '../processes.mjs';

/** How long `dbus-monitor` may take to become a monitor. */
const MONITOR_READY_TIMEOUT_MS = 30_000;
/** How long a signal may take to reach the monitor. */
const SIGNAL_TIMEOUT_MS = 10_000;

const DEST = ['--session', '--dest', 'org.freedesktop.Notifications', '--object-path', '/org/freedesktop/Notifications'];
const METHOD = 'org.freedesktop.Notifications';

let server;

export async function env({ artifactsDir, fileSlug }) {
  // Showing buttons, as most desktops' servers do (the app's tests of actions use one).
  server = await startNotificationServer({ artifactsDir, fileSlug }, { actions: true });
  return {};
}

/**
 * Watches the notification signals on the session bus with `dbus-monitor`, once it is a monitor:
 * the bus takes its name away (`NameLost`) when it becomes one, so every signal after that line
 * is seen. (`gdbus monitor` prints its "is owned by" line before it subscribes, so a signal sent
 * right after that line could be missed.)
 */
async function startMonitor(t, slug) {
  const monitor = await startProcess('dbus-monitor', 'dbus-monitor', ['--session', `type='signal',interface='${METHOD}'`], {
    logPath: join(t.artifactsDir, `${t.fileSlug}--${slug}.stderr.log`),
  });
  await monitor.waitForLine(/member=NameLost/, MONITOR_READY_TIMEOUT_MS, 'it to become a monitor');
  return monitor;
}

/** Every `member` signal the monitor printed, each as its arguments (`uint32 2`, `string "approve"`). */
function signals(monitor, member) {
  const found = [];
  monitor.lines.forEach((line, at) => {
    if (!line.includes(`member=${member}`)) return;
    const args = [];
    for (let next = at + 1; next < monitor.lines.length && /^\s/.test(monitor.lines[next]); next += 1) {
      args.push(monitor.lines[next].trim());
    }
    found.push(args);
  });
  return found;
}

/** Waits for the first `member` signal with `count` arguments, and returns them. */
async function signal(t, monitor, member, count) {
  return t.waitUntil(`a ${member} signal`, () => signals(monitor, member).find((args) => args.length === count), SIGNAL_TIMEOUT_MS);
}

const call = async (method, ...args) => (await promisify(execFile)('gdbus', ['call', ...DEST, '--method', `${METHOD}.${method}`, '--', ...args])).stdout.trim();

// Proves: GetServerInformation and GetCapabilities answer; Notify answers a fresh id, or the id it
// replaces, and records app name, summary, body, actions and hint names; CloseNotification emits
// NotificationClosed(id, 3) for an id it issued, and nothing for one it did not.
test('the stand-in notification server answers and records as the spec says', async (t) => {
  assert.match(await call('GetServerInformation'), /^\('supercode-e2e-notifications', 'supercode', '1', '1\.2'\)$/);
  assert.equal(await call('GetCapabilities'), "(['actions', 'body'],)");

  const first = await call('Notify', 'probe-app', '0', '', 'First summary', 'first body', "['default', 'Open']", "{'urgency': <byte 1>}", '5000');
  const second = await call('Notify', 'probe-app', '0', '', 'Second summary', 'second body', '[]', '{}', '-1');
  assert.equal(first, '(uint32 1,)');
  assert.equal(second, '(uint32 2,)');
  assert.equal(await call('Notify', 'probe-app', '1', '', 'First, replaced', 'new body', '[]', '{}', '-1'), '(uint32 1,)', 'a replacement keeps the id');

  const recorded = await t.waitUntil('three notifications recorded', () => (server.all().length === 3 ? server.all() : undefined));
  assert.deepEqual(recorded.map(({ id, appName, replacesId, summary, body, actions, hints, expireTimeout }) => ({ id, appName, replacesId, summary, body, actions, hints, expireTimeout })), [
    { id: 1, appName: 'probe-app', replacesId: 0, summary: 'First summary', body: 'first body', actions: ['default', 'Open'], hints: ['urgency'], expireTimeout: 5000 },
    { id: 2, appName: 'probe-app', replacesId: 0, summary: 'Second summary', body: 'second body', actions: [], hints: [], expireTimeout: -1 },
    { id: 1, appName: 'probe-app', replacesId: 1, summary: 'First, replaced', body: 'new body', actions: [], hints: [], expireTimeout: -1 },
  ]);
  assert.ok(recorded.every((n) => typeof n.sender === 'string' && n.sender.startsWith(':')), 'each names its sender connection');

  const monitor = await startMonitor(t, 'dbus-monitor');
  try {
    assert.equal(await call('CloseNotification', '99'), '()', 'closing an unknown id is no error');
    assert.equal(await call('CloseNotification', '2'), '()');
    const closed = await signal(t, monitor, 'NotificationClosed', 2);
    assert.deepEqual(closed, ['uint32 2', 'uint32 3'], 'NotificationClosed(2, 3: closed by CloseNotification)');
    assert.equal(signals(monitor, 'NotificationClosed').length, 1, 'no signal for the unknown id 99');
    // The server writes its record line after emitting the signal: wait for it, then check it is
    // the only one.
    const closedLines = () => server.proc.lines.filter((l) => l.startsWith('{"event":"closed"'));
    await t.waitUntil('the close recorded', () => (closedLines().length > 0 ? true : undefined));
    assert.deepEqual(closedLines(), ['{"event":"closed","id":2}']);
  } finally {
    await monitor.stop();
  }
});

// Proves: a click played on a button emits ActionInvoked(id, key) and then NotificationClosed(id,
// 2: dismissed by the user), as a server does, and is announced as "invoked".
test('a click played on a button is signalled as the spec says', async (t) => {
  const issued = await call('Notify', 'probe-app', '0', '', 'Asking', 'body', "['approve', 'Approve', 'app:open', 'Open']", '{}', '-1');
  const id = Number(/uint32 (\d+)/.exec(issued)[1]);
  const monitor = await startMonitor(t, 'dbus-monitor-actions');
  try {
    await server.invoke(id, 'approve');
    assert.deepEqual(await signal(t, monitor, 'ActionInvoked', 2), [`uint32 ${id}`, 'string "approve"']);
    assert.deepEqual(await signal(t, monitor, 'NotificationClosed', 2), [`uint32 ${id}`, 'uint32 2'], 'closed as dismissed by the user');
    const members = monitor.lines.filter((l) => /member=(ActionInvoked|NotificationClosed)/.test(l)).map((l) => /member=(\w+)/.exec(l)[1]);
    assert.deepEqual(members, ['ActionInvoked', 'NotificationClosed'], 'the click first, then the close');
  } finally {
    await monitor.stop();
  }
});
