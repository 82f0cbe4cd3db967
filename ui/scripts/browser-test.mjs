// Real-browser checks of the built window (`vite preview` under the same strict
// CSP Tauri applies) against the mock backend: keyboard-only flows, live
// updates, and light/dark screenshots in ../test-artifacts/ for a human look.
// Prints "N passed, M failed" last and exits non-zero on any failure.
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const uiDir = resolve(here, "..");
const artifacts = resolve(uiDir, "..", "test-artifacts");
const PORT = Number(process.env.UI_TEST_PORT ?? 4873);
const BASE = `http://127.0.0.1:${PORT}/`;
/** Generous: CI machines are shared and slow; nothing here should take this long. */
const STEP_TIMEOUT_MS = 15_000;
/** How long the preview server may take to answer its first request. */
const SERVER_START_TIMEOUT_MS = 30_000;
const WINDOW = { width: 420, height: 560 };

const results = [];
async function test(name, fn) {
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`ok   ${name}`);
  } catch (err) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}\n     ${String(err?.stack ?? err).split("\n").slice(0, 4).join("\n     ")}`);
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}

async function waitForServer(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      lastError = new Error(`HTTP ${res.status}`);
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 150)); // polling interval, not a stand-in for a condition
  }
  throw new Error(`preview server did not answer at ${url}: ${lastError}`);
}

const server = spawn(resolve(uiDir, "node_modules/.bin/vite"), ["preview", "--host", "127.0.0.1", "--port", String(PORT), "--strictPort"], {
  cwd: uiDir,
  stdio: ["ignore", "pipe", "pipe"],
});
let serverLog = "";
server.stdout.on("data", (d) => (serverLog += d));
server.stderr.on("data", (d) => (serverLog += d));

let browser;
let exitCode = 1;
try {
  await waitForServer(BASE, SERVER_START_TIMEOUT_MS);
  await mkdir(artifacts, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });

  /** Opens the window with the mock backend; collects CSP violations and page errors. */
  async function open(query, colorScheme = "light", extra = {}) {
    const context = await browser.newContext({ viewport: WINDOW, deviceScaleFactor: 2, colorScheme, reducedMotion: "reduce", ...extra });
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    const problems = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console error: ${m.text()}`);
    });
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) => {
        window.__cspViolations = [...(window.__cspViolations ?? []), `${e.violatedDirective} ${e.blockedURI}`];
      });
    });
    await page.goto(`${BASE}?${query}`);
    return { page, context, problems };
  }
  async function expectClean(page, problems) {
    const csp = await page.evaluate(() => window.__cspViolations ?? []);
    assert(csp.length === 0, `CSP violations: ${csp.join(", ")}`);
    assert(problems.length === 0, problems.join("; "));
  }
  const focusedTestId = (page) => page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? document.activeElement?.tagName);
  async function tabUntil(page, predicate, maxTabs = 40) {
    for (let i = 0; i < maxTabs; i++) {
      await page.keyboard.press("Tab");
      if (await page.evaluate(predicate)) return i + 1;
    }
    throw new Error("focus never reached the target with Tab");
  }

  await test("renders every runtime from the mock snapshot with status badges", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    const ids = await page.getByTestId("runtime-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-runtime-id")));
    const order = ["rt-demo-a", "rt-triage", "rt-flaky", "rt-stuck", "rt-docs", "rt-fresh", "rt-legacy", "rt-review", "rt-nightly", "rt-ops", "rt-ide", "rt-manual"];
    assert(JSON.stringify(ids) === JSON.stringify(order), `rows: ${ids}`);
    // One status word per card: an agent's state where known, the runtime's status otherwise.
    const statuses = await page.locator('[data-testid="runtime-status"]:visible').allTextContents();
    assert(statuses.join(",") === "Running,Stale,Offline,Offline,Embedded,Manual", `statuses: ${statuses}`);
    // Each agent state shows its word and its icon; unknown shows nothing extra.
    const states = await page.locator('[data-testid="agent-state"]:visible').evaluateAll((chips) => chips.map((c) => `${c.textContent}:${c.querySelector("svg path") ? "icon" : "none"}`));
    assert(states.join(",") === "Needs approval:icon,Needs input:icon,Error:icon,Not answering:icon,Working:icon,Idle:icon", `states: ${states}`);
    assert((await page.locator(".summary").textContent()).includes("3 need you"), "header counts who needs you, the failed agent included");
    assert((await page.getByTestId("secret-store").textContent()).includes("OS keychain"), "secret store line");
    await expectClean(page, problems);
    await context.close();
  });

  // Issue 31: one click on Approve in a list of requests scrolled the others out of view.
  await test("Approve in a long list of requests keeps the scroll position, the others in view and focus out of the moved card", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    // Every running agent asks for approval (seven cards, more than the window shows).
    await page.evaluate(() =>
      window.__supercodeMock.update((s) => {
        for (const r of s.runtimes.filter((r) => r.status === "running")) {
          r.state = {
            value: "needs-approval",
            title: `May ${r.name} run the tests?`,
            detail: "cargo test --workspace",
            since: new Date().toISOString(),
            actions: [
              { id: "approve", label: "Approve", destructive: false, confirm: null },
              { id: "deny", label: "Deny", destructive: true, confirm: "Deny running the tests?" },
            ],
            controller: { kind: "none", label: null },
            observers: 0,
            revision: 1,
          };
        }
      }),
    );
    const layout = () =>
      page.evaluate(() => {
        const main = document.querySelector(".app-main");
        const box = main.getBoundingClientRect();
        return {
          scrollTop: main.scrollTop,
          rows: [...document.querySelectorAll('[data-testid="runtime-row"]')].map((row) => {
            const r = row.getBoundingClientRect();
            return { id: row.dataset.runtimeId, state: row.dataset.agentState ?? null, inView: r.bottom > box.top + 1 && r.top < box.bottom - 1 };
          }),
          focus: document.activeElement?.id || document.activeElement?.getAttribute("data-testid") || document.activeElement?.tagName,
        };
      });
    // Scrolled so the second request is at the top.
    const target = await page.evaluate(() => {
      const main = document.querySelector(".app-main");
      const rows = [...document.querySelectorAll('[data-testid="runtime-row"]')];
      main.scrollTop += rows[1].getBoundingClientRect().top - main.getBoundingClientRect().top - 8;
      return rows[1].dataset.runtimeId;
    });
    const before = await layout();
    assert(before.scrollTop > 0, `the list is scrolled: ${before.scrollTop}`);
    const inView = before.rows.filter((r) => r.inView).map((r) => r.id);
    assert(inView.length >= 2 && inView[0] === target, `in view: ${inView}`);
    await page.locator(`[data-runtime-id="${target}"] [data-action-id="approve"]`).click();
    await page.waitForFunction((id) => document.querySelector(`[data-runtime-id="${id}"]`).dataset.agentState === "working", target);
    const after = await layout();
    const index = after.rows.findIndex((r) => r.id === target);
    assert(index > after.rows.map((r) => r.state).lastIndexOf("needs-approval"), `the approved card sorts after the requests: ${after.rows.map((r) => r.id)}`);
    assert(after.scrollTop === before.scrollTop, `scroll position kept: ${before.scrollTop} → ${after.scrollTop}`);
    for (const id of inView.filter((id) => id !== target)) {
      const now = after.rows.find((r) => r.id === id);
      assert(now.inView && now.state === "needs-approval", `${id} is still in view and asking`);
    }
    assert(after.focus === "runtimes-title", `focus is on the list heading, not in the moved card: ${after.focus}`);
    await page.screenshot({ path: resolve(artifacts, "ui-after-approve.png") });
    await expectClean(page, problems);
    await context.close();
  });

  await test("keyboard only: Tab reaches Attach of demo-a, Enter runs it with a busy state", async () => {
    const { page, context, problems } = await open("mock&latency=400");
    await page.getByTestId("runtime-row").first().waitFor();
    const tabs = await tabUntil(page, () => document.activeElement?.getAttribute("aria-label") === "Attach demo-a");
    assert(tabs <= 3, `Attach should be among the first tab stops, took ${tabs}`);
    const attach = page.locator('[data-runtime-id="rt-demo-a"] [data-testid="action-attach"]');
    await page.keyboard.press("Enter");
    assert((await attach.getAttribute("aria-busy")) === "true", "busy while attaching");
    await page.waitForFunction(() => !document.querySelector('[data-runtime-id="rt-demo-a"] [data-testid="action-attach"]').hasAttribute("aria-busy"));
    const calls = await page.evaluate(() => window.__supercodeMock.calls.filter((c) => c.action === "attach"));
    assert(calls.length === 1 && calls[0].arg === "rt-demo-a", `attach calls: ${JSON.stringify(calls)}`);
    assert((await focusedTestId(page)) === "action-attach", "focus stays on Attach");
    await expectClean(page, problems);
    await context.close();
  });

  await test("keyboard only: Approve runs with a busy state; Deny asks first, starting on Cancel", async () => {
    const { page, context, problems } = await open("mock&latency=400");
    await page.getByTestId("runtime-row").first().waitFor();
    const row = page.locator('[data-runtime-id="rt-demo-a"]');
    await tabUntil(page, () => document.activeElement?.getAttribute("aria-label") === "Deny demo-a");
    await page.keyboard.press("Enter");
    const panel = row.getByTestId("confirm-act");
    assert((await panel.getByTestId("confirm-act-text").textContent()) === "Deny running the test suite?", "the runtime's question");
    assert((await focusedTestId(page)) === "confirm-cancel", "a destructive confirmation starts on Cancel");
    await page.keyboard.press("Escape");
    await panel.waitFor({ state: "detached" });
    assert((await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))) === "Deny demo-a", "focus back on Deny");
    await page.keyboard.press("Shift+Tab");
    assert((await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))) === "Approve demo-a", "Approve before Deny");
    await page.keyboard.press("Enter");
    await row.locator('[data-action-id="approve"][aria-busy="true"]').waitFor();
    await row.getByTestId("agent-state").filter({ hasText: "Working" }).waitFor();
    const calls = await page.evaluate(() => window.__supercodeMock.calls.filter((c) => c.action === "act"));
    assert(calls.length === 1 && calls[0].arg === "rt-demo-a" && calls[0].agentAction === "approve", `act calls: ${JSON.stringify(calls)}`);
    // Approve went with the request and the card sorted down: focus lands on the list's heading,
    // which no update moves, not on <body> and not after the card (issue 31).
    assert((await focusedTestId(page)) !== "BODY" && (await page.evaluate(() => document.activeElement?.id)) === "runtimes-title", "focus on the list heading");
    await expectClean(page, problems);
    await context.close();
  });

  await test("keyboard only: revive confirmation shows the full plan, survives a live update, Escape closes it", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    await tabUntil(page, () => document.activeElement?.getAttribute("aria-label") === "Revive review-bot");
    await page.keyboard.press("Enter");
    const panel = page.locator('[data-runtime-id="rt-review"] [data-testid="confirm-revive"]');
    await panel.getByTestId("plan-program").waitFor({ state: "visible" });
    assert((await panel.getByTestId("plan-program").textContent()) === "/usr/bin/canon-agent", "the program as an absolute path");
    const args = await panel.locator('[data-testid="plan-args"] code').allTextContents();
    assert(args[0] === "serve" && args.includes("--profile") && args.length === 5, `args: ${args}`);
    assert((await panel.getByTestId("plan-cwd").textContent()).startsWith("/home/dev/"), "the working directory");
    const env = await panel.locator('[data-testid="plan-env"] .env-pair').allTextContents();
    assert(env.join(",") === "CANON_AGENT=review", `env: ${env}`);
    assert((await focusedTestId(page)) === "confirm-accept", "focus moves into the confirmation");
    // A live update (another runtime changes) must not close the panel or move focus.
    await page.evaluate(() => window.__supercodeMock.update((s) => (s.runtimes[0].statusReason = "Busy with a long task.")));
    await page.locator('[data-runtime-id="rt-demo-a"] .row-reason').filter({ hasText: "Busy with a long task." }).waitFor();
    assert(await panel.isVisible(), "panel still open after live update");
    assert((await focusedTestId(page)) === "confirm-accept", "focus kept after live update");
    await page.keyboard.press("Escape");
    await panel.waitFor({ state: "hidden" });
    assert((await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))) === "Revive review-bot", "focus returns to Revive");
    await expectClean(page, problems);
    await context.close();
  });

  await test("keyboard only: confirm revive runs it and shows the outcome", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    await tabUntil(page, () => document.activeElement?.getAttribute("aria-label") === "Revive review-bot");
    await page.keyboard.press("Enter");
    await page.locator('[data-runtime-id="rt-review"] [data-testid="plan-program"]').waitFor();
    await page.keyboard.press("Enter"); // focus is on Confirm
    const row = page.locator('[data-runtime-id="rt-review"]');
    await row.getByTestId("row-notice").filter({ hasText: "Started review-bot" }).waitFor();
    assert((await row.getByTestId("runtime-status").textContent()) === "Running", "status became Running");
    await expectClean(page, problems);
    await context.close();
  });

  // Issue 32 item 1: the window connects Claude Code with the CLI's preview, and writes only
  // what it showed (a file changed since the preview is shown again, not written).
  await test("keyboard only: Connect Claude Code shows the preview, re-asks when the file changed, then connects", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    await tabUntil(page, () => document.activeElement?.getAttribute("aria-label") === "Connect Claude Code", 80);
    await page.keyboard.press("Enter");
    const row = page.locator('[data-testid="agent-row"][data-agent="claude-code"]');
    const preview = row.getByTestId("hooks-preview");
    await preview.filter({ hasText: "supercode-tray-hook claude-code" }).waitFor();
    assert((await preview.textContent()).includes('Adds to "hooks" in /home/user/.claude/settings.json'), "the file is named");
    assert((await row.getByTestId("hooks-backup").textContent()).includes(".supercode-backup"), "the backup is named");
    const clipped = await preview.evaluate((el) => el.scrollWidth > el.clientWidth + 1);
    assert(!clipped, "every character of the preview is in view (long commands wrap)");
    assert((await focusedTestId(page)) === "confirm-accept", "focus moves into the confirmation");
    // Another program writes the file after the preview: confirming writes nothing, shows the new preview.
    await page.evaluate(() => window.__supercodeMock.agentFile("claude-code", () => undefined));
    await page.keyboard.press("Enter");
    await row.getByTestId("hooks-plan-status").filter({ hasText: "changed since the change was shown" }).waitFor();
    assert((await row.getByTestId("agent-connection").textContent()) === "Not connected", "nothing was written");
    await row.locator('[data-testid="confirm-accept"]:not([aria-disabled])').waitFor();
    assert((await focusedTestId(page)) === "confirm-accept", "focus stays on Confirm");
    await page.keyboard.press("Enter");
    await row.getByTestId("agent-notice").filter({ hasText: "Claude Code is connected" }).waitFor();
    assert((await row.getByTestId("agent-connection").textContent()) === "Connected", "connected");
    assert((await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))) === "Disconnect Claude Code", "focus lands on Disconnect, not on <body>");
    const calls = await page.evaluate(() => window.__supercodeMock.calls.filter((c) => c.action === "hooksChange"));
    assert(calls.length === 2 && calls[0].planDigest !== calls[1].planDigest, `hooksChange calls: ${JSON.stringify(calls)}`);
    await page.screenshot({ path: resolve(artifacts, "connect-claude-code.png"), fullPage: true });
    await expectClean(page, problems);
    await context.close();
  });

  await test("keyboard only: a refused LD_PRELOAD is allowed with its checkbox, then the revive runs", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    await page.evaluate(() => window.__supercodeMock.setLaunchEnv("rt-review", { LD_PRELOAD: "/tmp/hook.so" }));
    await tabUntil(page, () => document.activeElement?.getAttribute("aria-label") === "Revive review-bot");
    await page.keyboard.press("Enter");
    const row = page.locator('[data-runtime-id="rt-review"]');
    const preload = row.locator('li[data-env-name="LD_PRELOAD"]');
    await preload.waitFor();
    assert((await preload.textContent()).includes("LD_PRELOAD is not one of the few harmless variables"), "the reason is shown");
    assert((await row.getByTestId("confirm-accept").getAttribute("aria-disabled")) === "true", "Confirm waits for the allow");
    // Focus starts on Confirm; the checkbox is just before Cancel.
    for (let i = 0; i < 5 && (await focusedTestId(page)) !== "allow-env"; i++) await page.keyboard.press("Shift+Tab");
    assert((await focusedTestId(page)) === "allow-env", "the Allow checkbox is reachable by keyboard");
    await page.keyboard.press("Space");
    await tabUntil(page, () => document.activeElement?.getAttribute("data-testid") === "confirm-accept", 3);
    assert((await row.getByTestId("confirm-accept").getAttribute("aria-disabled")) === null, "Confirm is enabled once allowed");
    await page.keyboard.press("Enter");
    await row.getByTestId("row-notice").filter({ hasText: "Started review-bot" }).waitFor();
    const calls = await page.evaluate(() => window.__supercodeMock.calls.filter((c) => c.action === "revive"));
    assert(calls.length === 1 && calls[0].allowEnv.join(",") === "LD_PRELOAD", `revive calls: ${JSON.stringify(calls)}`);
    await expectClean(page, problems);
    await context.close();
  });

  await test("forget confirmation explains it removes only the stale receipt; confirming removes the row", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    const row = page.locator('[data-runtime-id="rt-review"]');
    await row.getByTestId("action-forget").click();
    const panel = row.getByTestId("confirm-forget");
    assert((await panel.textContent()).includes("removes only this stale receipt"), "forget explanation");
    await panel.getByTestId("confirm-accept").click();
    await row.waitFor({ state: "detached" });
    assert((await page.getByTestId("runtime-row").count()) === 11, "one row fewer");
    await expectClean(page, problems);
    await context.close();
  });

  await test("forgetting a runtime Canon alone knows says its profile and lock stay; confirming removes the row", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    const row = page.locator('[data-runtime-id="rt-nightly"]');
    await row.waitFor();
    // The core's view of a crashed catalog entry: stale, forget available.
    await page.evaluate(() =>
      window.__supercodeMock.update((s) => {
        const rt = s.runtimes.find((r) => r.id === "rt-nightly");
        rt.status = "stale";
        rt.forget = { available: true, reason: null, applies: true };
      }),
    );
    await row.getByTestId("action-forget").click();
    const panel = row.getByTestId("confirm-forget");
    const text = await panel.textContent();
    assert(text.includes("removes only the record Canon keeps of this runtime"), `forget explanation: ${text}`);
    assert(text.includes("Its Canon profile, its lock"), "profile and lock stay");
    await panel.getByTestId("confirm-accept").click();
    await row.waitFor({ state: "detached" });
    const calls = await page.evaluate(() => window.__supercodeMock.calls.filter((c) => c.action === "forget"));
    assert(calls.length === 1 && calls[0].arg === "rt-nightly", `forget calls: ${JSON.stringify(calls)}`);
    await expectClean(page, problems);
    await context.close();
  });

  await test("without a tray host the window says so at the top (the core's words); with one, nothing", async () => {
    const { page, context, problems } = await open("mock&latency=0&notray");
    const notice = page.getByTestId("desktop-notice");
    await notice.waitFor();
    const text = await notice.textContent();
    assert(text.includes("The tray icon cannot show on this desktop."), `notice: ${text}`);
    assert(text.includes("AppIndicator") && text.includes("run supercode-tray again"), `notice: ${text}`);
    await page.getByTestId("runtime-row").first().waitFor();
    assert((await page.getByTestId("desktop-notice").count()) === 1, "still shown once the list is in");
    await expectClean(page, problems);
    await context.close();
    const plain = await open("mock&latency=0");
    await plain.page.getByTestId("runtime-row").first().waitFor();
    assert((await plain.page.getByTestId("desktop-notice").count()) === 0, "no notice with a tray host");
    await expectClean(plain.page, plain.problems);
    await plain.context.close();
  });

  await test("an action error shows inline on its row and can be dismissed", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    await page.evaluate(() => window.__supercodeMock.failNext("attach", { code: "internal", message: "demo-a stopped answering. Try Revive." }));
    const row = page.locator('[data-runtime-id="rt-demo-a"]');
    await row.getByTestId("action-attach").click();
    const error = row.getByTestId("row-error");
    await error.filter({ hasText: "demo-a stopped answering" }).waitFor();
    await error.getByRole("button", { name: "Dismiss error for demo-a" }).click();
    await error.waitFor({ state: "hidden" });
    await expectClean(page, problems);
    await context.close();
  });

  await test("unavailable actions stay reachable and say why", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    // Revive of a runtime whose profile is in use: it could apply once that process ends, so it is
    // shown, disabled, with why; what can never apply (Attach on a stale one) is not shown at all.
    assert(!(await page.locator('[data-runtime-id="rt-review"] [data-testid="action-attach"]').isVisible()), "no Attach on a stale runtime");
    const attach = page.locator('[data-runtime-id="rt-ops"] [data-testid="action-revive"]');
    assert((await attach.getAttribute("aria-disabled")) === "true", "aria-disabled");
    const tipId = await attach.getAttribute("aria-describedby");
    const tip = page.locator(`[id="${tipId}"]`);
    assert((await tip.textContent()) === "Its profile ops is in use by PID 7311; stop that process, then revive.", "reason text");
    await attach.focus();
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Tab"); // keyboard focus → :focus-visible → tooltip shows
    await page.waitForFunction((id) => getComputedStyle(document.getElementById(id)).visibility === "visible", tipId);
    await attach.press("Enter");
    const calls = await page.evaluate(() => window.__supercodeMock.calls.filter((c) => c.action === "revive" || c.action === "revivePlan"));
    assert(calls.length === 0, "disabled action must not call the backend");
    await expectClean(page, problems);
    await context.close();
  });

  // Claude Code's "Always allow access to DIR" names a whole folder (up to 80 characters).
  await test("a long agent action label wraps inside its card", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    const card = page.locator('[data-runtime-id="rt-demo-a"]');
    const label = card.locator('[data-testid="agent-action"] .btn-label').first();
    await label.evaluate((l) => {
      l.textContent = "Always allow access to /home/ada/src/payments-service-with-a-long-name/backend";
    });
    const [box, button] = [await card.boundingBox(), await label.locator("xpath=..").boundingBox()];
    assert(button.x >= box.x && button.x + button.width <= box.x + box.width, `the button (${button.x}+${button.width}) stays inside the card (${box.x}+${box.width})`);
    assert(button.height > 30, `the label wraps onto a second line (height ${button.height})`);
    await expectClean(page, problems);
    await context.close();
  });

  await test("approve shows 'Waiting for approval in Canon…' until Canon answers", async () => {
    const { page, context, problems } = await open("mock&latency=0&approval=60000");
    const row = page.locator('[data-profile="ci-runner"]');
    await row.getByTestId("action-approve").click();
    const approve = row.getByTestId("action-approve");
    await page.waitForFunction(() => document.querySelector('[data-profile="ci-runner"] [data-testid="action-approve"]').textContent.includes("Waiting for approval in Canon"));
    assert((await approve.getAttribute("aria-busy")) === "true", "approve busy");
    assert((await row.getByTestId("action-reject").getAttribute("aria-disabled")) === null, "reject stays usable");
    // This context asks for reduced motion: the spinner must not spin.
    const iterations = await row.getByTestId("action-approve").locator(".spinner").evaluate((el) => getComputedStyle(el).animationIterationCount);
    assert(iterations === "1", `spinner animation under reduced motion: ${iterations}`);
    await expectClean(page, problems);
    await context.close();
  });

  await test("without a reduced-motion preference the busy spinner animates", async () => {
    const { page, context, problems } = await open("mock&latency=0&approval=60000", "light", { reducedMotion: "no-preference" });
    await page.locator('[data-profile="ci-runner"]').getByTestId("action-approve").click();
    const spinner = page.locator('[data-profile="ci-runner"] [data-testid="action-approve"] .spinner');
    await spinner.waitFor();
    const iterations = await spinner.evaluate((el) => getComputedStyle(el).animationIterationCount);
    assert(iterations === "infinite", `spinner iterations: ${iterations}`);
    await expectClean(page, problems);
    await context.close();
  });

  await test("all buttons have accessible names naming their target", async () => {
    const { page, context, problems } = await open("mock&latency=0");
    await page.getByTestId("runtime-row").first().waitFor();
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll("button")]
        .filter((b) => b.offsetParent !== null || b.closest("[hidden]") === null)
        .filter((b) => (b.getAttribute("aria-label") ?? b.textContent).trim() === "")
        .map((b) => b.outerHTML.slice(0, 80)),
    );
    assert(unnamed.length === 0, `unnamed buttons: ${unnamed.join(" | ")}`);
    const labels = await page.locator('[data-runtime-id="rt-demo-a"] button[data-testid^="action-"]').evaluateAll((bs) => bs.map((b) => b.getAttribute("aria-label")));
    assert(labels.join(",") === "Attach demo-a,Revive demo-a,Forget demo-a,Dismiss demo-a", `labels: ${labels}`);
    await expectClean(page, problems);
    await context.close();
  });

  for (const scheme of ["light", "dark"]) {
    await test(`screenshots (${scheme})`, async () => {
      const { page, context, problems } = await open("mock&latency=0", scheme);
      await page.getByTestId("runtime-row").first().waitFor();
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      const dark = scheme === "dark";
      const lum = bg.match(/\d+/g).slice(0, 3).map(Number).reduce((a, b) => a + b, 0) / 3;
      assert(dark ? lum < 80 : lum > 200, `${scheme} background is ${bg}`);
      // The first screenshot shows a runtime that needs approval, with its prompt and actions.
      const approval = page.locator('[data-runtime-id="rt-demo-a"]');
      assert((await approval.getByTestId("agent-state").textContent()) === "Needs approval", "demo-a needs approval");
      const box = await approval.boundingBox();
      assert(box !== null && box.y + box.height <= WINDOW.height, `the approval row is in view: ${JSON.stringify(box)}`);
      await page.screenshot({ path: resolve(artifacts, `ui-${scheme}.png`) });
      // Transient states: an inline error, and the reason of an unavailable action shown on keyboard focus.
      await page.evaluate(() => window.__supercodeMock.failNext("attach", { code: "internal", message: "demo-a stopped answering on its port. Try again, or Revive it." }));
      await page.locator('[data-runtime-id="rt-demo-a"]').getByTestId("action-attach").click();
      await page.locator('[data-runtime-id="rt-demo-a"]').getByTestId("row-error").waitFor();
      await page.locator('[data-runtime-id="rt-ops"]').getByTestId("action-revive").focus();
      await page.keyboard.press("Shift+Tab");
      await page.keyboard.press("Tab"); // keyboard focus → :focus-visible → tooltip shows
      await page.waitForFunction(() => {
        const b = document.querySelector('[data-runtime-id="rt-ops"] [data-testid="action-revive"]');
        return getComputedStyle(document.getElementById(b.getAttribute("aria-describedby"))).opacity === "1";
      });
      await page.screenshot({ path: resolve(artifacts, `ui-${scheme}-states.png`) });
      await page.locator('[data-runtime-id="rt-demo-a"]').getByRole("button", { name: "Dismiss error for demo-a" }).click();
      // A revive confirmation open, scrolled into view.
      await page.locator('[data-runtime-id="rt-review"]').getByTestId("action-revive").click();
      await page.locator('[data-runtime-id="rt-review"]').getByTestId("confirm-revive").scrollIntoViewIfNeeded();
      await page.screenshot({ path: resolve(artifacts, `ui-${scheme}-confirm.png`) });
      // The rest of the window, pending and ignored files included, with an approval in flight.
      await page.locator('[data-runtime-id="rt-review"] [data-testid="confirm-revive"]').getByTestId("confirm-cancel").click();
      await page.evaluate(() => window.__supercodeMock.hold("approve"));
      await page.locator('[data-profile="ci-runner"]').getByTestId("action-approve").click();
      await page.locator('[data-testid="ignored-rows"] summary').click();
      await page.locator('[data-testid="ignored-rows"]').scrollIntoViewIfNeeded();
      await page.screenshot({ path: resolve(artifacts, `ui-${scheme}-bottom.png`) });
      await expectClean(page, problems);
      await context.close();

      const empty = await open("mock=empty&latency=0", scheme);
      await empty.page.getByTestId("empty-state").waitFor();
      assert((await empty.page.getByTestId("empty-state").textContent()).includes("supercode-tray demo-runtime --name demo"), "demo command");
      await empty.page.screenshot({ path: resolve(artifacts, `ui-${scheme}-empty.png`) });
      await expectClean(empty.page, empty.problems);
      await empty.context.close();

      const file = await open("mock=file-store&latency=0", scheme);
      await file.page.getByTestId("runtime-row").first().waitFor();
      assert((await file.page.getByTestId("secret-store").textContent()).includes("Plaintext"), "file store flagged");
      await file.page.screenshot({ path: resolve(artifacts, `ui-${scheme}-file-store.png`), clip: { x: 0, y: 0, width: WINDOW.width, height: 120 } });
      await file.context.close();
    });
  }

  exitCode = results.every((r) => r.ok) ? 0 : 1;
} catch (err) {
  console.log(`FAIL setup\n     ${err?.stack ?? err}\n${serverLog}`);
  results.push({ name: "setup", ok: false });
} finally {
  await browser?.close();
  server.kill("SIGTERM");
}
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? exitCode : 1);
