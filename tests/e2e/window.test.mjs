// Smoke test of the real app: the binary starts under tauri-driver, opens its window at
// start-up (the runner sets SUPERCODE_TRAY_OPEN_WINDOW=1) and the UI renders its first view.

import { readFile } from 'node:fs/promises';

import { assert, test } from './harness.mjs';

/** What the first view shows: the secret store status, or the empty state (fresh state dir). */
const FIRST_VIEW = '[data-testid="secret-store"], [data-testid="empty-state"]';

// Proves the app starts, its window opens at start-up, the UI bundle is embedded and renders
// (not a blank or error page), and a screenshot of the window can be taken.
test('the app window opens at start-up and renders its first view', async (t) => {
  const app = await t.openApp();
  const view = await app.waitForElement(FIRST_VIEW);
  assert.equal(await view.displayed(), true, `${FIRST_VIEW} exists but is not displayed`);
  assert.ok(['secret-store', 'empty-state'].includes(await view.attribute('data-testid')));

  const shot = await t.screenshot(app, 'window');
  const png = await readFile(shot);
  assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], `${shot} is not a PNG`);
});
