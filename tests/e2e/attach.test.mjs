// Choosing a runtime opens it (issue 5): Attach in the window hands the browser a one-time URL
// on the attach proxy, which lands an authenticated browser on the runtime's own page.

import { stat } from 'node:fs/promises';
import { join } from 'node:path';

import { assert, test } from './harness.mjs';
import { browse, clickInRow, paintedScreenshot, receiptOf, rowSelector, waitForBrowserUrl, waitForRow, writeRecordingBrowser } from './support.mjs';

const NAME = 'attach-me';

let browser;

/** The app opens attach URLs with SUPERCODE_BROWSER: a script that records the URL. */
export async function env({ stateDir }) {
  browser = await writeRecordingBrowser(join(stateDir, 'browser'));
  return { SUPERCODE_BROWSER: browser.program };
}

// Proves: clicking Attach makes the app open the browser on a one-time URL of a loopback proxy
// (not the runtime's own address); a cookie-keeping client following it reaches the runtime's
// authenticated page (its name in the HTML) without ever holding the token; and the same URL
// used a second time is refused with 403.
test('attach opens a one-time URL that reaches the runtime page once', async (t) => {
  await t.startDemoRuntime(NAME);
  const app = await t.openApp();
  const row = await waitForRow(app, `${NAME} listed as running`, NAME, (r) => r.status === 'running');

  await clickInRow(app, row.id, '[data-testid="action-attach"]');
  const url = await waitForBrowserUrl(t, browser);
  assert.equal((await stat(browser.urlFile)).mode & 0o777, 0o600, 'the recorded URL file is private');
  const match = /^http:\/\/127\.0\.0\.1:(\d+)\/__attach\/([0-9A-Za-z_-]+)$/.exec(url);
  assert.ok(match, 'the URL is http://127.0.0.1:PORT/__attach/CODE (value withheld)');
  const receipt = await receiptOf(t.env.SUPERCODE_RUNTIME_DIR, `demo:${NAME}`);
  assert.ok(receipt.address !== `127.0.0.1:${match[1]}`, "the URL names the proxy, not the runtime's own address");
  await app.waitFor('the Attach button to be idle again', async () => (await (await app.find(`${rowSelector(row.id)} [data-testid="action-attach"]`)).attribute('aria-busy')) === null);
  assert.deepEqual(await app.findAll('[data-testid="row-error"]'), [], 'the row reports no error');

  const first = await browse(url);
  assert.deepEqual(first.hops, [303, 200], 'the code is traded for a session cookie, then the page is served');
  assert.equal(first.cookies.size, 1, 'one session cookie was set');
  assert.equal(first.status, 200);
  assert.ok(first.body.includes(`<h1 id="runtime-name">${NAME}</h1>`), "the runtime's own page (it names the runtime) was served through the proxy");

  const again = await browse(url);
  assert.equal(again.status, 403, 'a used attach URL is refused');
  assert.ok(!again.body.includes(NAME), 'and shows nothing of the runtime');
  await paintedScreenshot(t, app, 'attached');
});
