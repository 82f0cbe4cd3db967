// Issue 13, hostile local state: the app starts over a `$CANON_HOME` full of files that must not
// be trusted, lists the good catalog entries, and shows each bad file with its reason.

import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, symlink, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { assert, test } from './harness.mjs';
import { backendSnapshot, runtimeRows, writeAgents, writeCanonJson } from './support.mjs';

/**
 * How long the app may take from being launched to showing the good entries and the bad files: a
 * cold start under tauri-driver on a loaded CI machine takes a few seconds; an app whose start-up
 * opens a FIFO without O_NONBLOCK never shows anything.
 */
const SHOWN_WITHIN_MS = 25_000;

/** A catalog entry as `@canonmsg/core` 0.13 writes one for `profile`, stopped. */
function catalogEntry(profile, cwd) {
  return {
    id: `sdk:${profile}:0123456789abcdef`,
    runtime: 'sdk',
    profile,
    cwd,
    launchCommand: ['/bin/true', profile],
    status: 'offline',
    reviveCapability: 'revivable',
    lastStoppedAt: new Date(Date.now() - 60_000).toISOString(),
  };
}

/** Writes the hostile `$CANON_HOME`; returns the bad files and the reason each must show. */
async function writeHostileCanonHome(canon) {
  const runtimes = join(canon, 'runtimes');
  await mkdir(runtimes, { recursive: true });
  await mkdir(join(canon, 'locks'), { recursive: true });
  await writeAgents(canon, ['alpha']);
  await writeCanonJson(join(runtimes, 'alpha.json'), catalogEntry('alpha', canon));
  await writeCanonJson(join(runtimes, 'gone.json'), catalogEntry('gone', canon));

  const bad = [];
  execFileSync('mkfifo', [join(runtimes, 'fifo.json')]);
  bad.push(['runtimes/fifo.json', 'not a regular file (a FIFO)']);
  await symlink('/dev/zero', join(runtimes, 'zero.json'));
  bad.push(['runtimes/zero.json', 'symbolic link']);
  const huge = join(runtimes, 'huge.json');
  await writeFile(huge, '{', { mode: 0o600 });
  await truncate(huge, 100 * 1024 * 1024); // sparse
  bad.push(['runtimes/huge.json', 'over the 1048576-byte Canon file limit']);
  await writeFile(join(runtimes, 'deep.json'), '['.repeat(200_000), { mode: 0o600 });
  bad.push(['runtimes/deep.json', 'nested too deeply']);
  if (process.getuid() === 0) {
    const foreign = join(runtimes, 'foreign.json');
    await writeCanonJson(foreign, catalogEntry('foreign', canon));
    await chown(foreign, 65534, 65534);
    bad.push(['runtimes/foreign.json', 'owned by uid 65534']);
  } else {
    console.log('not root: the other-owner file is not set up in this run');
  }
  execFileSync('mkfifo', [join(canon, 'pending-registrations.json')]);
  bad.push(['pending-registrations.json', 'not a regular file (a FIFO)']);

  const wide = join(runtimes, 'wide.json');
  await writeCanonJson(wide, catalogEntry('wide', canon));
  await chmod(wide, 0o644);
  return bad;
}

/** The ignored or warned-about files the window lists (read from the DOM, collapsed or not). */
function fileRows(app, testId) {
  return app.execute(
    `return [...document.querySelectorAll('[data-testid="${testId}"]')].map((row) => ({
      file: row.querySelector('.ignored-file code').textContent,
      reason: row.querySelector('.ignored-reason').textContent,
    }));`,
  );
}

// Proves: with a FIFO, links to /dev/zero, a 100 MB file, a deep nest, another user's file and a
// 0644 file in $CANON_HOME, the app starts and within seconds lists the good catalog entries,
// shows every bad file with its reason under "Ignored files" and the 0644 one under "Files to
// check". Before issue 13 the app hung at start-up on the FIFO.
test('the app starts over a hostile $CANON_HOME and shows the good entries and each bad file with its reason', async (t) => {
  const bad = await writeHostileCanonHome(t.env.CANON_HOME);
  const launched = Date.now();
  const app = await t.openApp();
  const shown = await app.waitFor(
    'the good entries and every bad file',
    async () => {
      const rows = await runtimeRows(app);
      const ignored = await fileRows(app, 'ignored-row');
      const names = rows.map((r) => r.name).sort();
      const allBad = bad.every(([file]) => ignored.some((i) => i.file === file));
      return names.includes('alpha') && names.includes('gone') && allBad ? { rows, ignored } : undefined;
    },
    SHOWN_WITHIN_MS,
  );
  const elapsed = Date.now() - launched;
  assert.ok(elapsed < SHOWN_WITHIN_MS, `shown after ${elapsed} ms`);

  assert.deepEqual(shown.rows.map((r) => r.name).sort(), ['alpha', 'gone', 'wide'], 'only the good entries are listed');
  for (const [file, reason] of bad) {
    const row = shown.ignored.find((i) => i.file === file);
    assert.ok(row.reason.includes(reason), `${file}: "${row.reason}" lacks "${reason}"`);
  }
  assert.equal(shown.ignored.length, bad.length, 'nothing else is ignored');
  const warnings = await fileRows(app, 'warning-row');
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0].file, 'runtimes/wide.json');
  assert.match(warnings[0].reason, /permissions \(644\)/);

  // The missing profile is the package's derived capability, and the window says why not.
  const snapshot = await backendSnapshot(app);
  const gone = snapshot.runtimes.find((r) => r.profile === 'gone');
  assert.equal(gone.reviveCapability, 'missing-profile');
  assert.equal(gone.catalogStatus, 'offline');
  assert.equal(snapshot.runtimes.find((r) => r.profile === 'alpha').reviveCapability, 'revivable');
  await t.screenshot(app, 'hostile-canon');
}, { timeoutMs: 90_000 });
