// Self-test of the e2e harness itself (WebDriver client, runner, process helper) without the
// app: tauri-driver launches WebKitGTK's MiniBrowser as the "application".
//
//   scripts/test-env.sh node tests/e2e/run.mjs \
//     --app /usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser tests/e2e/selftest/harness.selftest.mjs

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { assert, test } from '../harness.mjs';
import { isRunning, startProcess } from '../processes.mjs';
import { WebDriverError } from '../webdriver.mjs';

const PAGE = `<!doctype html><title>harness self-test</title>
<ul data-testid="list"><li class="item" data-kind="a">first</li><li class="item" data-kind="b">second</li></ul>
<button data-testid="add" onclick="setTimeout(() => {
  const p = document.createElement('p'); p.dataset.testid = 'late'; p.textContent = 'arrived';
  document.body.append(p);
}, 300)">add</button>`;

// Proves: session start through tauri-driver, navigation, css lookup, text, attributes, a
// missing element raising "no such element", script execution with arguments, a click whose
// effect appears later (waitForElement), and a screenshot that is a real PNG file.
test('the WebDriver client drives a WebKitGTK window through tauri-driver', async (t) => {
  // WebKitWebDriver adds --automation itself only when no browser args are given, and
  // tauri-driver always gives some (the app's, [] here). A Tauri app does not need the flag.
  const page = await t.openApp({ args: ['--automation'] });
  await page.navigate(`data:text/html;charset=utf-8,${encodeURIComponent(PAGE)}`);
  assert.equal(await page.title(), 'harness self-test');

  const items = await page.findAll('li.item');
  assert.deepEqual(await Promise.all(items.map((item) => item.text())), ['first', 'second']);
  assert.equal(await items[1].attribute('data-kind'), 'b');
  assert.equal(await items[1].attribute('data-missing'), null);
  const list = await page.find('[data-testid="list"]');
  assert.equal((await list.findAll('li')).length, 2);

  await assert.rejects(page.find('[data-testid="nothing-here"]'), (error) => error instanceof WebDriverError && error.error === 'no such element');

  assert.equal(await page.execute('return arguments[0] + arguments[1];', [40, 2]), 42);
  assert.equal(await page.executeAsync('const done = arguments[arguments.length - 1]; setTimeout(() => done("later"), 10);'), 'later');

  await (await page.find('[data-testid="add"]')).click();
  const late = await page.waitForElement('[data-testid="late"]', 10_000);
  assert.equal(await late.text(), 'arrived');
  assert.equal(await late.displayed(), true);

  const shot = await t.screenshot(page, 'selftest-page');
  const png = await readFile(shot);
  assert.ok(png.length > 1000, `screenshot ${shot} is only ${png.length} bytes`);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
});

// Proves: a started process's stdout lines can be awaited, and stop() ends its whole process
// group (the grandchild too), so a test cannot leak processes.
test('the process helper awaits a stdout line and stops the whole process group', async (t) => {
  const script = `
    const { spawn } = require('node:child_process');
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    console.log('grandchild ' + child.pid);
    setInterval(() => {}, 1000);`;
  const proc = await startProcess('selftest parent', process.execPath, ['-e', script], {
    env: t.env,
    logPath: join(t.artifactsDir, 'selftest-process.stderr.log'),
  });
  const line = await proc.waitForLine(/^grandchild \d+$/, 10_000);
  const grandchild = Number(line.split(' ')[1]);
  assert.ok(await isRunning(grandchild), 'the grandchild should be running before stop()');

  const exited = await proc.stop();
  assert.equal(exited.signal, 'SIGTERM');
  await t.waitUntil('the grandchild to exit', async () => !(await isRunning(grandchild)), 10_000);
});

// Proves closeApp ends the application process itself, not just its window, so the next
// openApp starts a fresh app (a tray app outlives its window; see TestContext.closeApp).
test('closeApp stops the application process and the next openApp starts a new one', async (t) => {
  const first = await t.openApp({ args: ['--automation'] });
  const [firstPid, ...others] = await t.appPids();
  assert.ok(firstPid, 'the application process is found in tauri-driver\'s process group');
  assert.deepEqual(others, [], 'exactly one application process');

  await t.closeApp(first);
  assert.equal(await isRunning(firstPid), false);
  assert.deepEqual(await t.appPids(), []);

  const second = await t.openApp({ args: ['--automation'] });
  const [secondPid] = await t.appPids();
  assert.ok(secondPid && secondPid !== firstPid, 'a new application process');
  await second.navigate('data:text/html,<p id="again">again</p>');
  assert.equal(await (await second.find('#again')).text(), 'again');
});
