// The app lists a running runtime, and never puts the runtime's loopback address in the page.

import { assert, test } from './harness.mjs';

/** host:port forms of a loopback address: none may appear in the webview. */
const LOOPBACK_ADDRESS = /(127(?:\.\d{1,3}){3}|\[::1\]|localhost):\d{2,5}/;

// Proves a demo runtime started through `supercode-tray demo-runtime` (a real process writing
// a real receipt in this file's state directory) shows up by name in the app window, and that
// the DOM then contains no loopback host:port (the address is a secret; see ARCHITECTURE.md).
test('a running demo runtime appears by name and its address stays out of the page', async (t) => {
  await t.startDemoRuntime('demo-alpha');
  const app = await t.openApp();
  await app.waitFor('"demo-alpha" in the window', () => app.execute('return document.body.innerText.includes("demo-alpha");'));
  await t.screenshot(app, 'demo-alpha-listed');

  const html = await app.execute('return document.documentElement.outerHTML;');
  // assert.ok on a boolean, so a failure message cannot carry the leaked address itself.
  assert.ok(!LOOPBACK_ADDRESS.test(html), 'the page contains a loopback host:port (value withheld from this log)');
});
