// The desktop's notification server, as the app meets it. Under Xvfb nothing owns
// org.freedesktop.Notifications, so `notification-server.py` does: it owns the name on the test's
// private session bus, answers Notify / GetCapabilities / GetServerInformation /
// CloseNotification as the Desktop Notifications Specification says, and announces every
// notification it is sent. This module starts it and keeps what it recorded.
//
//   export async function env(ctx) { server = await startNotificationServer(ctx); return {}; }
//   const [pid] = await t.appPids();
//   const n = await server.waitFor('a Runtime stopped notification', (n) => n.pid === pid && n.summary === 'Runtime stopped');
//
// A notification's text stays in memory, like any stdout of a process the harness starts.

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startStandIn } from './processes.mjs';

const SERVER_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'notification-server.py');

/**
 * How long a notification may take to arrive after the app noticed what it is about. The watcher
 * reacts within a second; the plugin sends from a blocking task over its own D-Bus connection,
 * and a debug build on a loaded 2-core CI machine is slow.
 */
export const NOTIFICATION_TIMEOUT_MS = 30_000;
/** How often the recorded notifications are re-read while waiting for one. */
const POLL_INTERVAL_MS = 50;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts the stand-in notification server on the session bus the app will use. Call it from a
 * test file's `env(ctx)`, so it owns the name before the app starts and lives until the file ends.
 */
export async function startNotificationServer({ artifactsDir, fileSlug }, { actions = false } = {}) {
  const proc = await startStandIn('notification server', SERVER_SCRIPT, actions ? ['--actions'] : [], {
    logPath: join(artifactsDir, `${fileSlug}--notification-server.stderr.log`),
  });
  return new NotificationServer(proc);
}

/** What the stand-in server was sent. */
export class NotificationServer {
  constructor(proc) {
    this.proc = proc;
  }

  /**
   * Every notification received so far, in order:
   * `{ id, appName, replacesId, appIcon, summary, body, actions, hints, expireTimeout, sender, pid }`.
   */
  all() {
    return this.proc.lines.filter((line) => line.startsWith('{"event":"notify"')).map((line) => JSON.parse(line).notification);
  }

  /** The ids of the notifications closed by a `CloseNotification` call, in order. */
  closed() {
    return this.proc.lines.filter((line) => line.startsWith('{"event":"closed"')).map((line) => JSON.parse(line).id);
  }

  /** Polls until notification `id` has been closed by a `CloseNotification` call. */
  async waitForClosed(description, id, timeoutMs = NOTIFICATION_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed().includes(id)) {
      if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description} (closed: ${this.closed().join(', ') || 'none'})`);
      await sleep(POLL_INTERVAL_MS);
    }
  }

  /** Plays a click on button `action` of notification `id` (a server started with `actions`). */
  async invoke(id, action) {
    this.proc.child.stdin.write(`${JSON.stringify({ invoke: id, action })}\n`);
    await this.proc.waitForLine(new RegExp(`^\\{"event":"invoked","id":${id},`), NOTIFICATION_TIMEOUT_MS, `the click on ${action}`);
  }

  /** The notifications sent by process `pid`. */
  from(pid) {
    return this.all().filter((n) => n.pid === pid);
  }

  /** Polls until a notification matching `predicate` has arrived, and returns it. */
  async waitFor(description, predicate, timeoutMs = NOTIFICATION_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.all().find(predicate);
      if (found) return found;
      if (Date.now() >= deadline) {
        const seen = this.all().map((n) => `${JSON.stringify(n.summary)} (pid ${n.pid})`).join(', ') || 'none';
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}; notifications seen: ${seen}`);
      }
      await sleep(POLL_INTERVAL_MS);
    }
  }
}

/** Every text a notification shows or carries (for leak searches), with where it came from. */
export function notificationTexts(notifications) {
  return notifications.flatMap((n, i) => [
    { where: `notification ${i} app name`, text: n.appName },
    { where: `notification ${i} icon`, text: n.appIcon },
    { where: `notification ${i} summary`, text: n.summary },
    { where: `notification ${i} body`, text: n.body },
    { where: `notification ${i} actions`, text: n.actions.join('\n') },
  ]);
}
