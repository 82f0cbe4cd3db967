// A minimal W3C WebDriver client over fetch (Node 20): just what the end-to-end tests use.
// Spec: https://www.w3.org/TR/webdriver2/ . Works against tauri-driver, which forwards to
// WebKitWebDriver on Linux.

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** The key under which W3C WebDriver returns element references. */
const ELEMENT_KEY = 'element-6066-11e4-a52e-4f735466cecf';

/** How long one HTTP call to the driver may take. Starting a session launches the app, which
 *  on a loaded 2-core CI machine can take tens of seconds, so this is generous. */
const COMMAND_TIMEOUT_MS = 90_000;

/** How often `waitFor*` re-queries the page while waiting for a condition. */
export const WAIT_POLL_INTERVAL_MS = 100;

/** Default for `waitFor*`: long enough for a debug build's first render on CI. */
export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

/** An error answered by the driver (`error` is the W3C error code, e.g. "no such element"). */
export class WebDriverError extends Error {
  constructor(command, status, error, message) {
    super(`${command}: ${error} (HTTP ${status}): ${message}`);
    this.name = 'WebDriverError';
    this.status = status;
    this.error = error;
  }
}

async function call(baseUrl, method, path, body) {
  const command = `${method} ${path}`;
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json; charset=utf-8' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(COMMAND_TIMEOUT_MS),
  });
  const text = await response.text();
  let payload;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new WebDriverError(command, response.status, 'invalid response', text.slice(0, 500));
  }
  const value = payload?.value;
  if (!response.ok || (value && typeof value === 'object' && typeof value.error === 'string')) {
    throw new WebDriverError(command, response.status, value?.error ?? 'unknown error', value?.message ?? text.slice(0, 500));
  }
  return value;
}

/** Answers the driver's `GET /status` (`{ ready, message }`), or throws when it is not listening. */
export async function driverStatus(baseUrl) {
  return call(baseUrl, 'GET', '/status');
}

/** A reference to one element of the page. */
export class Element {
  constructor(session, id, selector) {
    this.session = session;
    this.id = id;
    this.selector = selector;
  }

  /** The rendered text of the element. */
  text() {
    return this.session.cmd('GET', `/element/${this.id}/text`);
  }

  /** The value of attribute `name`, or null when it is absent. */
  attribute(name) {
    return this.session.cmd('GET', `/element/${this.id}/attribute/${encodeURIComponent(name)}`);
  }

  /**
   * Clicks the element as a user would: if what shows at its centre is not it (below the fold of
   * the window's scrolling list, or under its footer: a banner at the top, such as the
   * no-tray-host notice, pushes rows down), it is scrolled to the middle first; a list that
   * already shows it does not move. WebKitWebDriver answers "element not interactable" there
   * instead of scrolling itself.
   */
  async click() {
    await this.session.execute(
      `const el = arguments[0];
       const r = el.getBoundingClientRect();
       const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
       if (!hit || !el.contains(hit)) el.scrollIntoView({ block: "center" });`,
      [{ [ELEMENT_KEY]: this.id }],
    );
    return this.session.cmd('POST', `/element/${this.id}/click`, {});
  }

  /** Whether the element is displayed (visible), as the driver judges it. */
  displayed() {
    return this.session.cmd('GET', `/element/${this.id}/displayed`);
  }

  /** Elements matching `css` inside this one. */
  async findAll(css) {
    const found = await this.session.cmd('POST', `/element/${this.id}/elements`, { using: 'css selector', value: css });
    return found.map((ref) => new Element(this.session, ref[ELEMENT_KEY], css));
  }
}

/** One WebDriver session; for tauri-driver, one running instance of the app. */
export class Session {
  constructor(baseUrl, id, capabilities) {
    this.baseUrl = baseUrl;
    this.id = id;
    this.capabilities = capabilities;
    this.deleted = false;
  }

  /** Starts a session. For tauri-driver pass `{ 'tauri:options': { application: absPath } }`. */
  static async start(baseUrl, alwaysMatch) {
    const value = await call(baseUrl, 'POST', '/session', { capabilities: { alwaysMatch } });
    return new Session(baseUrl, value.sessionId, value.capabilities);
  }

  cmd(method, path, body) {
    return call(this.baseUrl, method, `/session/${this.id}${path}`, body);
  }

  navigate(url) {
    return this.cmd('POST', '/url', { url });
  }

  title() {
    return this.cmd('GET', '/title');
  }

  /** The first element matching `css`; throws WebDriverError "no such element" if none. */
  async find(css) {
    const ref = await this.cmd('POST', '/element', { using: 'css selector', value: css });
    return new Element(this, ref[ELEMENT_KEY], css);
  }

  /** All elements matching `css` (possibly none). */
  async findAll(css) {
    const found = await this.cmd('POST', '/elements', { using: 'css selector', value: css });
    return found.map((ref) => new Element(this, ref[ELEMENT_KEY], css));
  }

  /** Runs `script` (a function body; arguments in `arguments`) in the page, returns its result. */
  execute(script, args = []) {
    return this.cmd('POST', '/execute/sync', { script, args });
  }

  /** Like `execute`, for scripts that finish by calling `arguments[arguments.length - 1](result)`. */
  executeAsync(script, args = []) {
    return this.cmd('POST', '/execute/async', { script, args });
  }

  /** Polls `probe` until it returns a truthy value (which is returned) or `timeoutMs` passes. */
  async waitFor(description, probe, timeoutMs = DEFAULT_WAIT_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    let lastError;
    for (;;) {
      try {
        const result = await probe();
        if (result) return result;
      } catch (error) {
        if (!(error instanceof WebDriverError)) throw error;
        lastError = error;
      }
      if (Date.now() >= deadline) {
        const why = lastError ? ` (last error: ${lastError.message})` : '';
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}${why}`);
      }
      await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_INTERVAL_MS));
    }
  }

  /** Waits until an element matching `css` exists, and returns it. */
  waitForElement(css, timeoutMs = DEFAULT_WAIT_TIMEOUT_MS) {
    return this.waitFor(`an element matching ${css}`, async () => (await this.findAll(css))[0], timeoutMs);
  }

  /** Saves a PNG screenshot of the window to `path` (directories are created) and returns the path. */
  async screenshot(path) {
    const base64 = await this.cmd('GET', '/screenshot');
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, Buffer.from(base64, 'base64'));
    return path;
  }

  /** Ends the session (for tauri-driver: closes the app). Safe to call twice. */
  async delete() {
    if (this.deleted) return;
    this.deleted = true;
    await call(this.baseUrl, 'DELETE', `/session/${this.id}`);
  }
}
