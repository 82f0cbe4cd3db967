// What an end-to-end test file imports: `test()` to register a test, and `assert`.
//
//   import { test, assert } from './harness.mjs';
//   // Proves ...
//   test('the window lists a running demo runtime', async (t) => {
//     const runtime = await t.startDemoRuntime('demo-alpha');
//     const app = await t.openApp();
//     ...
//   });
//
// `t` is the TestContext built by run.mjs: a fresh state directory per test file, the app
// binary, and sessions/processes that the runner closes after the test whatever happens.

export { strict as assert } from 'node:assert';

/** Per-test limit unless `test(name, fn, { timeoutMs })` says otherwise: the first session of
 *  a debug build on a loaded 2-core CI machine takes a while to start. */
export const DEFAULT_TEST_TIMEOUT_MS = 180_000;

const registered = [];

/** Registers a test; files are imported by run.mjs and their tests run in order. */
export function test(name, fn, { timeoutMs = DEFAULT_TEST_TIMEOUT_MS } = {}) {
  if (typeof name !== 'string' || typeof fn !== 'function') {
    throw new TypeError('test(name, fn[, { timeoutMs }]) expects a string and a function');
  }
  registered.push({ name, fn, timeoutMs });
}

/** Hands the tests registered so far to the runner (and forgets them). */
export function takeRegisteredTests() {
  return registered.splice(0);
}
