// The window with a realistic inventory: running runtimes, a stopped one that can be revived,
// and a registration waiting for approval, saved to test-artifacts/e2e/ to look at. (The README's
// picture of the window is made by claude-code.test.mjs, from a real Claude Code session.)

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { assert, test } from './harness.mjs';
import { paintedScreenshot, pendingRows, runtimeRows, stopDetachedRuntimes, waitForRow, writeAgents, writePendingRegistrations } from './support.mjs';

/** Width and height from a PNG's IHDR chunk. */
function pngSize(png) {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'not a PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

// Proves the window renders a realistic inventory (two running runtimes, a stopped revivable
// one, a pending registration) with every row in place, and saves that picture.
test('a screenshot of the window with runtimes in it', async (t) => {
  const workspace = (name) => join(t.stateDir, 'src', name);
  await writeAgents(t.env.CANON_HOME, ['reviewer']);
  await writePendingRegistrations(t.env.CANON_HOME, ['atlas']);
  const reviewer = await t.startDemoRuntime('code-reviewer', { workspace: workspace('payments-api'), args: ['--canon-profile', 'reviewer'] });
  await t.startDemoRuntime('shop-frontend', { workspace: workspace('shop-web') });
  await t.startDemoRuntime('docs-writer', { workspace: workspace('handbook') });
  try {
    process.kill(reviewer.pid, 'SIGKILL');
    await reviewer.exit;

    const app = await t.openApp();
    for (const name of ['shop-frontend', 'docs-writer']) await waitForRow(app, `${name} running`, name, (r) => r.status === 'running');
    // A stopped canon runtime keeps the name it ran under.
    await waitForRow(app, 'the stopped reviewer', 'code-reviewer', (r) => r.status !== 'running');
    await app.waitFor('the pending registration', async () => (await pendingRows(app)).some((p) => p.profile === 'atlas'));
    assert.equal((await runtimeRows(app)).length, 3);
    // Keyboard focus rings and hover states are not part of the picture.
    await app.execute('document.activeElement?.blur(); window.scrollTo(0, 0);');

    const shot = await paintedScreenshot(t, app, 'window');
    const { width, height } = pngSize(await readFile(shot));
    assert.ok(width >= 360 && height >= 420, `the screenshot is ${width}x${height}, smaller than the window's minimum size`);
  } finally {
    await stopDetachedRuntimes(t.env.SUPERCODE_RUNTIME_DIR, ['demo:code-reviewer']);
  }
});
