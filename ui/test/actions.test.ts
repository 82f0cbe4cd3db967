// Action flows against the scriptable mock backend: busy states, inline
// errors, confirmations, and live updates that must not disturb the user.
import { afterEach, describe, expect, it, vi } from "vitest";
import { RELATIVE_TIME_REFRESH_MS } from "../src/app";
import { agentState, APPROVAL_ACTIONS, demoSnapshot, emptySnapshot, never, no, runtime } from "../src/fixtures";
import { NOTICE_TIMEOUT_MS } from "../src/views/runtime-row";
import { mockBackend } from "../src/mock-backend";
import { byTestId, mount, mountOver, NOW, pendingRow, press, row, shown, visible, type Mounted } from "./helpers";

let m: Mounted | undefined;
afterEach(() => {
  m?.app.destroy();
  vi.useRealTimers();
});

function click(el: HTMLElement): void {
  el.click();
}

/** Presses the button `testId` of the row of runtime `id`; returns that row. */
function pressOnRow(mounted: Mounted, id: string, testId: string): HTMLElement {
  const r = row(mounted.root, id);
  click(byTestId(r, testId));
  return r;
}

describe("attach", () => {
  it("shows a busy button with aria-busy until the backend answers, then calls attach with the id", async () => {
    m = await mount(demoSnapshot(NOW));
    const gate = m.mock.hold("attach");
    const attach = byTestId(row(m.root, "rt-demo-a"), "action-attach");
    click(attach);
    expect(attach.getAttribute("aria-busy")).toBe("true");
    expect(attach.getAttribute("aria-disabled")).toBe("true");
    expect(attach.textContent).toBe("Opening…");
    // Other actions of the row wait too.
    expect(byTestId(row(m.root, "rt-demo-a"), "action-forget").getAttribute("aria-disabled")).toBe("true");
    gate.release();
    await vi.waitFor(() => expect(attach.hasAttribute("aria-busy")).toBe(false));
    expect(attach.textContent).toBe("Attach");
    expect(m.mock.calls.filter((c) => c.action === "attach")).toEqual([{ action: "attach", arg: "rt-demo-a" }]);
  });

  it("ignores a second press while busy", async () => {
    m = await mount(demoSnapshot(NOW));
    const gate = m.mock.hold("attach");
    const attach = byTestId(row(m.root, "rt-demo-a"), "action-attach");
    click(attach);
    click(attach);
    gate.release();
    await vi.waitFor(() => expect(attach.hasAttribute("aria-busy")).toBe(false));
    expect(m.mock.calls.filter((c) => c.action === "attach")).toHaveLength(1);
  });

  it("does not call the backend for an unavailable action", async () => {
    m = await mount(demoSnapshot(NOW));
    click(byTestId(row(m.root, "rt-review"), "action-attach"));
    await Promise.resolve();
    expect(m.mock.calls.filter((c) => c.action === "attach")).toHaveLength(0);
  });

  it("shows the CommandError message inline on that row only, and it can be dismissed", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.failNext("attach", { code: "internal", message: "demo-a stopped answering. Try Revive." });
    const r = pressOnRow(m, "rt-demo-a", "action-attach");
    expect(r.querySelector('[data-testid="row-error"]')).toBeNull(); // not in the DOM until there is an error
    const error = await vi.waitFor(() => byTestId(r, "row-error"));
    expect(visible(error)).toBe(true);
    expect(error.textContent).toContain("demo-a stopped answering. Try Revive.");
    expect(error.getAttribute("role")).toBe("alert");
    expect(shown(row(m.root, "rt-review"), "row-error")).toBe(false);
    const dismiss = error.querySelector("button");
    expect(dismiss?.getAttribute("aria-label")).toBe("Dismiss error for demo-a");
    click(dismiss!);
    expect(r.querySelector('[data-testid="row-error"]')).toBeNull();
    expect(document.activeElement).toBe(byTestId(r, "action-attach"));
  });

  it("turns a non-CommandError rejection into a readable message", async () => {
    m = await mount(demoSnapshot(NOW));
    const gate = m.mock.hold("attach");
    const r = pressOnRow(m, "rt-demo-a", "action-attach");
    gate.fail("IPC channel closed" as never);
    await vi.waitFor(() => expect(byTestId(r, "row-error").textContent).toContain("IPC channel closed"));
  });
});

/** Presses Revive on row `id` and waits until its confirmation shows the plan. */
async function openRevive(mounted: Mounted, id: string): Promise<HTMLElement> {
  const r = row(mounted.root, id);
  click(byTestId(r, "action-revive"));
  return vi.waitFor(() => {
    const panel = byTestId(r, "confirm-revive");
    byTestId(panel, "plan-program");
    return panel;
  });
}

function planArgs(panel: HTMLElement): (string | null)[] {
  return [...panel.querySelectorAll('[data-testid="plan-args"] code')].map((c) => c.textContent);
}

describe("revive", () => {
  it("asks first, showing the absolute program, each argument, the working directory and every variable", async () => {
    m = await mount(demoSnapshot(NOW));
    const panel = await openRevive(m, "rt-review");
    expect(visible(panel)).toBe(true);
    expect(byTestId(panel, "plan-program").textContent).toBe("/usr/bin/canon-agent");
    expect(panel.textContent).toContain("recorded as canon-agent, found on PATH");
    expect(planArgs(panel)).toEqual(["serve", "--profile", "review", "--workspace", "/home/dev/src/clients/acme/services/canon-review-service"]);
    expect(byTestId(panel, "plan-cwd").textContent).toBe("/home/dev/src/clients/acme/services/canon-review-service");
    const env = [...panel.querySelectorAll('[data-testid="plan-env"] .env-pair')].map((c) => c.textContent);
    expect(env).toEqual(["CANON_AGENT=review"]);
    expect(panel.textContent).toContain("Profile: review");
    expect(m.mock.calls.some((c) => c.action === "revive")).toBe(false);
    expect(m.mock.calls.filter((c) => c.action === "revivePlan")).toEqual([{ action: "revivePlan", arg: "rt-review" }]);
    expect(document.activeElement).toBe(byTestId(panel, "confirm-accept"));
    expect(byTestId(panel, "confirm-accept").hasAttribute("aria-disabled")).toBe(false);
    expect(byTestId(row(m.root, "rt-review"), "action-revive").getAttribute("aria-expanded")).toBe("true");
  });

  it("waits for the plan before Confirm can run anything", async () => {
    m = await mount(demoSnapshot(NOW));
    const gate = m.mock.hold("revivePlan");
    const r = pressOnRow(m, "rt-review", "action-revive");
    const panel = byTestId(r, "confirm-revive");
    expect(byTestId(panel, "plan-status").textContent).toBe("Reading what it will run…");
    expect(byTestId(panel, "confirm-accept").getAttribute("aria-disabled")).toBe("true");
    click(byTestId(panel, "confirm-accept"));
    expect(m.mock.calls.some((c) => c.action === "revive")).toBe(false);
    gate.release();
    await vi.waitFor(() => byTestId(panel, "plan-program"));
    expect(byTestId(panel, "confirm-accept").hasAttribute("aria-disabled")).toBe(false);
  });

  it("keeps an argument with spaces as one visible element", async () => {
    const s = demoSnapshot(NOW);
    s.runtimes = [runtime({ id: "x", name: "x", status: "stale", revive: { available: true, reason: null, applies: true }, launchCommand: ["agent", "--workspace", "/home/dev/My Project"] })];
    m = await mount(s);
    const panel = await openRevive(m, "x");
    expect(planArgs(panel)).toEqual(["--workspace", "/home/dev/My Project"]);
  });

  it("shows a variable that is not harmless as refused, and revives only once it is allowed", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.setLaunchEnv("rt-review", { LD_PRELOAD: "/tmp/hook.so", LANG: "C.UTF-8" });
    const panel = await openRevive(m, "rt-review");
    const preload = panel.querySelector<HTMLElement>('[data-env-name="LD_PRELOAD"]')!;
    expect(preload.textContent).toContain("LD_PRELOAD=/tmp/hook.so");
    expect(preload.textContent).toContain("LD_PRELOAD is not one of the few harmless variables");
    expect(panel.querySelector('[data-env-name="LANG"] [data-testid="allow-env"]')).toBeNull();
    const accept = byTestId(panel, "confirm-accept");
    expect(accept.getAttribute("aria-disabled")).toBe("true");
    expect(panel.textContent).toContain("Allow LD_PRELOAD above to revive with it");
    click(accept);
    expect(m.mock.calls.some((c) => c.action === "revive")).toBe(false);

    byTestId<HTMLInputElement>(preload, "allow-env").click();
    expect(accept.hasAttribute("aria-disabled")).toBe(false);
    click(accept);
    await vi.waitFor(() => expect(shown(row(m!.root, "rt-review"), "row-notice")).toBe(true));
    const [call] = m.mock.calls.filter((c) => c.action === "revive");
    expect(call?.allowEnv).toEqual(["LD_PRELOAD"]);
  });

  it("shows a plan that changed since it was shown again instead of running it", async () => {
    m = await mount(demoSnapshot(NOW));
    const panel = await openRevive(m, "rt-review");
    m.mock.update((s) => {
      s.runtimes.find((r) => r.id === "rt-review")!.launchCommand = ["canon-agent", "serve", "--profile", "review", "--evil"];
    });
    click(byTestId(panel, "confirm-accept"));
    const again = await vi.waitFor(() => {
      const p = byTestId(row(m!.root, "rt-review"), "confirm-revive");
      expect(planArgs(p)).toContain("--evil");
      return p;
    });
    expect(byTestId(again, "plan-status").textContent).toContain("changed since it was shown; review it again");
    expect(shown(row(m.root, "rt-review"), "row-notice")).toBe(false);
    click(byTestId(again, "confirm-accept"));
    await vi.waitFor(() => expect(shown(row(m!.root, "rt-review"), "row-notice")).toBe(true));
    const revives = m.mock.calls.filter((c) => c.action === "revive");
    expect(revives).toHaveLength(2);
    expect(revives[0]!.planDigest).not.toBe(revives[1]!.planDigest);
  });

  it("Escape closes the confirmation and returns focus to Revive without reviving", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = pressOnRow(m, "rt-review", "action-revive");
    press("Escape");
    expect(shown(r, "confirm-revive")).toBe(false);
    expect(document.activeElement).toBe(byTestId(r, "action-revive"));
    expect(m.mock.calls.some((c) => c.action === "revive")).toBe(false);
  });

  it("Escape pressed outside the row also closes an open confirmation", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = pressOnRow(m, "rt-review", "action-revive");
    byTestId<HTMLButtonElement>(m.root, "open-logs").focus();
    press("Escape");
    expect(shown(r, "confirm-revive")).toBe(false);
    expect(document.activeElement).toBe(byTestId(m.root, "open-logs"));
  });

  it("Cancel closes the confirmation without reviving", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = pressOnRow(m, "rt-review", "action-revive");
    click(byTestId(byTestId(r, "confirm-revive"), "confirm-cancel"));
    expect(shown(r, "confirm-revive")).toBe(false);
    expect(m.mock.calls.some((c) => c.action === "revive")).toBe(false);
  });

  it("Confirm revives with a busy state, then shows the outcome and the new status", async () => {
    m = await mount(demoSnapshot(NOW));
    const gate = m.mock.hold("revive");
    const r = row(m.root, "rt-review");
    const panel = await openRevive(m, "rt-review");
    click(byTestId(panel, "confirm-accept"));
    const revive = byTestId(r, "action-revive");
    expect(shown(r, "confirm-revive")).toBe(false);
    expect(revive.getAttribute("aria-busy")).toBe("true");
    expect(revive.textContent).toBe("Reviving…");
    expect(document.activeElement).toBe(revive);
    gate.release();
    await vi.waitFor(() => expect(shown(r, "row-notice")).toBe(true));
    expect(byTestId(r, "row-notice").textContent).toContain("Started review-bot");
    expect(byTestId(r, "runtime-status").textContent).toBe("Running");
    // Running now: Revive no longer applies and is gone, and focus moved to Attach in the row.
    expect(visible(revive)).toBe(false);
    expect(document.activeElement).toBe(byTestId(r, "action-attach"));
    const revives = m.mock.calls.filter((c) => c.action === "revive");
    expect(revives).toHaveLength(1);
    expect(revives[0]).toMatchObject({ action: "revive", arg: "rt-review", allowEnv: [] });
    expect(revives[0]!.planDigest).toMatch(/^[0-9a-f]{8}$/);
  });

  it("shows a revive failure inline", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.failNext("revive", { code: "refused", message: "The launch command exited with status 127. Check that canon-agent is installed." });
    const r = row(m.root, "rt-review");
    click(byTestId(await openRevive(m, "rt-review"), "confirm-accept"));
    await vi.waitFor(() => expect(byTestId(r, "row-error").textContent).toContain("status 127"));
    expect(byTestId(r, "action-revive").hasAttribute("aria-busy")).toBe(false);
  });
});

describe("forget", () => {
  it("asks first, saying it removes only this stale receipt, and starts on Cancel", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = pressOnRow(m, "rt-review", "action-forget");
    const panel = byTestId(r, "confirm-forget");
    expect(visible(panel)).toBe(true);
    expect(panel.textContent).toContain("removes only this stale receipt");
    expect(document.activeElement).toBe(byTestId(panel, "confirm-cancel"));
    expect(m.mock.calls.some((c) => c.action === "forget")).toBe(false);
  });

  it("Confirm forgets the runtime; the row goes and focus lands on the list heading", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = pressOnRow(m, "rt-review", "action-forget");
    click(byTestId(byTestId(r, "confirm-forget"), "confirm-accept"));
    await vi.waitFor(() => expect(m!.root.querySelector('[data-runtime-id="rt-review"]')).toBeNull());
    expect(m.mock.calls.filter((c) => c.action === "forget")).toEqual([{ action: "forget", arg: "rt-review" }]);
    expect(document.activeElement?.textContent).toBe("Runtimes");
  });
});

describe("forget a runtime known only from Canon", () => {
  it("says it removes Canon's record of it and that its profile and lock stay; Confirm forgets it", async () => {
    const snapshot = demoSnapshot(NOW);
    snapshot.runtimes.push(
      runtime({
        id: "sdk:crashed:0123456789abcdef",
        name: "crashed",
        status: "stale",
        origin: "catalog",
        forget: { available: true, reason: null, applies: true },
      }),
    );
    m = await mount(snapshot);
    const r = pressOnRow(m, "sdk:crashed:0123456789abcdef", "action-forget");
    const panel = byTestId(r, "confirm-forget");
    expect(visible(panel)).toBe(true);
    expect(panel.textContent).toContain("removes only the record Canon keeps of this runtime");
    expect(panel.textContent).toContain("Its Canon profile, its lock");
    expect(panel.textContent).not.toContain("receipt");
    click(byTestId(panel, "confirm-accept"));
    await vi.waitFor(() => expect(m!.root.querySelector('[data-runtime-id="sdk:crashed:0123456789abcdef"]')).toBeNull());
    expect(m.mock.calls.filter((c) => c.action === "forget")).toEqual([{ action: "forget", arg: "sdk:crashed:0123456789abcdef" }]);
  });
});

// Issue 31, item 8: a runtime that stopped unexpectedly and cannot be revived stays, as exited,
// with its agent's last state, until dismissed; it never asks for the user.
describe("an exited runtime", () => {
  function exited(): ReturnType<typeof runtime> {
    return runtime({
      id: "lre_gone",
      name: "gone-bot",
      status: "exited",
      statusReason: "It stopped unexpectedly: its process (PID 4321) ended without unregistering, and the tray cannot relaunch it.",
      since: new Date(NOW.getTime() - 5 * 60_000).toISOString(),
      pid: 4321,
      origin: "exited",
      attach: never("It has exited."),
      forget: never("It has exited and its receipt is already gone; dismiss it instead."),
      revive: never("The tray cannot relaunch it; start it again the way you started it."),
      dismiss: { available: true, reason: null, applies: true },
      state: null,
      exited: {
        at: new Date(NOW.getTime() - 5 * 60_000).toISOString(),
        lastState: agentState("needs-approval", { title: "Run <b>the</b> tests?", actions: [], controller: null, observers: null, revision: null }),
      },
    });
  }

  it("shows its status, why, its agent's last state as text and Dismiss only; it is counted as exited, not as needing you", async () => {
    const s = emptySnapshot();
    s.runtimes = [exited()];
    s.counts = { running: 0, stale: 0, exited: 1, awaitingApproval: 0, needsYou: 0 };
    m = await mount(s);
    const r = row(m.root, "lre_gone");
    expect(byTestId(r, "runtime-status").textContent).toBe("Exited");
    expect(r.textContent).toContain("stopped unexpectedly");
    const last = byTestId(r, "exited-last");
    expect(last.textContent).toBe("Last seen: Needs approval: Run <b>the</b> tests?");
    expect(last.querySelector("b")).toBeNull();
    expect(r.hasAttribute("data-needs-you")).toBe(false);
    expect(byTestId(r, "card-time").textContent).toBe("exited 5 min ago");
    for (const action of ["attach", "revive", "forget"] as const) expect(visible(byTestId(r, `action-${action}`)), action).toBe(false);
    expect(visible(byTestId(r, "action-dismiss"))).toBe(true);
    expect(m.root.textContent).toContain("1 exited");
    expect(m.root.textContent).not.toContain("needs you");
  });

  it("Dismiss takes it off the list at once, without asking", async () => {
    const s = emptySnapshot();
    s.runtimes = [exited(), runtime({ id: "rt-live", name: "live" })];
    m = await mount(s);
    click(byTestId(row(m.root, "lre_gone"), "action-dismiss"));
    await vi.waitFor(() => expect(m!.root.querySelector('[data-runtime-id="lre_gone"]')).toBeNull());
    expect(m.mock.calls.filter((c) => c.action === "dismiss")).toEqual([{ action: "dismiss", arg: "lre_gone" }]);
    expect(row(m.root, "rt-live")).toBeTruthy();
  });
});

describe("live updates", () => {
  it("keep an open confirmation, its focus and the row's DOM node while other data changes", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = pressOnRow(m, "rt-review", "action-revive");
    const confirm = byTestId(byTestId(r, "confirm-revive"), "confirm-accept");
    expect(document.activeElement).toBe(confirm);

    const next = demoSnapshot(NOW);
    next.runtimes[0]!.statusReason = "Busy with a long task.";
    // rt-fresh now asks: the core sorts it up with the other request, so rows move around the focused one.
    next.runtimes.find((r) => r.id === "rt-fresh")!.state = agentState("needs-approval", { title: "Run it?" });
    next.runtimes.push(runtime({ id: "rt-new", name: "fresh" }));
    m.mock.setSnapshot(next);

    expect(row(m.root, "rt-review")).toBe(r);
    expect(shown(r, "confirm-revive")).toBe(true);
    expect(document.activeElement).toBe(confirm);
    expect(row(m.root, "rt-demo-a").textContent).toContain("Busy with a long task.");
    const ids = [...m.root.querySelectorAll('[data-testid="runtime-row"]')].map((e) => e.getAttribute("data-runtime-id"));
    expect(ids.slice(0, 2)).toEqual(["rt-demo-a", "rt-fresh"]);
    expect(ids).toEqual(m.mock.current().runtimes.map((r) => r.id));
  });

  it("keep an inline error until the user dismisses it", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.failNext("attach", { code: "internal", message: "Could not reach demo-a." });
    const r = pressOnRow(m, "rt-demo-a", "action-attach");
    await vi.waitFor(() => expect(shown(r, "row-error")).toBe(true));
    m.mock.emit();
    expect(shown(r, "row-error")).toBe(true);
  });

  it("disable Confirm with the reason when the action stops being available while asking", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = pressOnRow(m, "rt-review", "action-revive");
    m.mock.update((s) => {
      s.runtimes.find((r) => r.id === "rt-review")!.revive = { available: false, reason: "Already running.", applies: false };
    });
    const panel = byTestId(r, "confirm-revive");
    expect(visible(panel)).toBe(true);
    expect(byTestId(panel, "confirm-accept").getAttribute("aria-disabled")).toBe("true");
    expect(panel.textContent).toContain("Already running.");
    click(byTestId(panel, "confirm-accept"));
    expect(m.mock.calls.some((c) => c.action === "revive")).toBe(false);
  });

  it("switch from the empty state to the list when the first runtime registers", async () => {
    m = await mount(emptySnapshot());
    expect(shown(m.root, "empty-state")).toBe(true);
    m.mock.setSnapshot({ ...emptySnapshot(), firstRun: false, runtimes: [runtime({ id: "demo", name: "demo" })] });
    expect(shown(m.root, "empty-state")).toBe(false);
    expect(visible(row(m.root, "demo"))).toBe(true);
  });

  it("prefer an event that arrives while the first snapshot is loading", async () => {
    const mock = mockBackend(demoSnapshot(NOW));
    const gate = mock.hold("snapshot");
    const { root, app } = mountOver(mock);
    await vi.waitFor(() => expect(mock.calls.some((c) => c.action === "snapshot")).toBe(true));
    mock.setSnapshot({ ...demoSnapshot(NOW), runtimes: [runtime({ id: "from-event" })] }); // newer
    gate.release();
    await app.ready;
    expect(root.querySelectorAll('[data-testid="runtime-row"]')).toHaveLength(1);
    expect(row(root, "from-event")).toBeTruthy();
    app.destroy();
    expect(mock.subscriberCount()).toBe(0);
  });

  it("re-render relative times every 30 s", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let now = NOW;
    const { root, app } = mountOver(mockBackend(demoSnapshot(NOW)), () => now);
    await app.ready;
    const since = row(root, "rt-manual").querySelector("time.since")!;
    expect(since.textContent).toBe("started 2 min ago");
    now = new Date(NOW.getTime() + 3 * 60_000);
    vi.advanceTimersByTime(RELATIVE_TIME_REFRESH_MS);
    expect(since.textContent).toBe("started 5 min ago");
    app.destroy();
  });
});

describe("pending registrations", () => {
  it("Approve shows 'Waiting for approval in Canon…' while busy, then the approved state", async () => {
    m = await mount(demoSnapshot(NOW));
    const gate = m.mock.hold("approve");
    const r = pendingRow(m.root, "ci-runner");
    const approve = byTestId(r, "action-approve");
    click(approve);
    expect(approve.textContent).toBe("Waiting for approval in Canon…");
    expect(approve.getAttribute("aria-busy")).toBe("true");
    // Reject stays usable: it cancels a request that is waiting on Canon.
    expect(byTestId(r, "action-reject").hasAttribute("aria-disabled")).toBe(false);
    // A live update mid-approval keeps the busy state.
    m.mock.emit();
    expect(approve.getAttribute("aria-busy")).toBe("true");
    gate.release();
    await vi.waitFor(() => expect(r.querySelector(".badge")?.textContent).toBe("Approved"));
    expect(visible(approve)).toBe(false);
    expect(byTestId(r, "action-reject").textContent).toBe("Dismiss");
    expect(m.mock.calls.filter((c) => c.action === "approve")).toEqual([{ action: "approve", arg: "ci-runner" }]);
  });

  it("shows an approval failure inline on the request", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.failNext("approve", { code: "internal", message: "Canon did not answer. Check your connection and try again." });
    const r = pendingRow(m.root, "ci-runner");
    click(byTestId(r, "action-approve"));
    await vi.waitFor(() => expect(byTestId(r, "row-error").textContent).toContain("Canon did not answer"));
    expect(byTestId(r, "action-approve").hasAttribute("aria-busy")).toBe(false);
  });

  it("Reject removes the request", async () => {
    m = await mount(demoSnapshot(NOW));
    click(byTestId(pendingRow(m.root, "ci-runner"), "action-reject"));
    await vi.waitFor(() => expect(m!.root.querySelector('[data-profile="ci-runner"]')).toBeNull());
    expect(m.mock.calls.filter((c) => c.action === "reject")).toEqual([{ action: "reject", arg: "ci-runner" }]);
  });
});

describe("footer", () => {
  it("Open logs folder calls the backend and shows a failure as a banner", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.failNext("openLogs", { code: "internal", message: "No file manager is available to open the logs folder." });
    click(byTestId(m.root, "open-logs"));
    await vi.waitFor(() => expect(shown(m!.root, "app-error")).toBe(true));
    expect(byTestId(m.root, "app-error").textContent).toContain("No file manager");
    expect(m.mock.calls.filter((c) => c.action === "openLogs")).toHaveLength(1);
  });

  it("a failed first load says so and Retry loads again", async () => {
    const mock = mockBackend(demoSnapshot(NOW));
    mock.failNext("snapshot", { code: "internal", message: "The inventory is not ready." });
    const { root, app } = mountOver(mock);
    await app.ready;
    const banner = byTestId(root, "app-error");
    expect(visible(banner)).toBe(true);
    expect(banner.textContent).toContain("Could not load runtimes: The inventory is not ready.");
    click([...banner.querySelectorAll("button")].find((b) => b.textContent === "Retry")!);
    await vi.waitFor(() => expect(root.querySelectorAll('[data-testid="runtime-row"]')).toHaveLength(demoSnapshot(NOW).runtimes.length));
    expect(visible(banner)).toBe(false);
    app.destroy();
  });
});

describe("revive of a hostile record", () => {
  // Issue 29: a bidirectional override reorders what follows it on screen, in a webview too, so
  // a plan could show one command and run another. The window writes such characters (and every
  // control) as visible escapes, by the core's rule, as the CLI does.
  it("shows controls and bidirectional overrides in the plan as visible escapes", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.update((s) => {
      const rt = s.runtimes.find((r) => r.id === "rt-review")!;
      rt.launchCommand = ["/opt/evil.sh\u202e\u2066hs.tnega-nonac/nib/rsu/", "serve\u001b[2K", "--wipe-home"];
      rt.workspace = "/home/dev\u202ework";
      rt.profile = "review\u2067";
    });
    m.mock.setLaunchEnv("rt-review", { LANG: "C.UTF-8\u202e" });
    const panel = await openRevive(m, "rt-review");
    expect(byTestId(panel, "plan-program").textContent).toBe("/opt/evil.sh\\u{202e}\\u{2066}hs.tnega-nonac/nib/rsu/");
    expect(planArgs(panel)).toEqual(["serve\\u{1b}[2K", "--wipe-home"]);
    expect(byTestId(panel, "plan-cwd").textContent).toBe("/home/dev\\u{202e}work");
    const env = [...panel.querySelectorAll('[data-testid="plan-env"] .env-pair')].map((c) => c.textContent);
    expect(env).toContain("LANG=C.UTF-8\\u{202e}");
    expect(panel.textContent).toContain("Profile: review\\u{2067}");
    expect(panel.textContent).not.toMatch(/[\u0000-\u001f\u202a-\u202e\u2066-\u2069]/u);
  });
});

describe("revive requested from the tray menu", () => {
  it("opens that runtime's revive confirmation, showing its command, without running it", async () => {
    m = await mount(demoSnapshot(NOW));
    const revivable = demoSnapshot(NOW).runtimes.find((r) => r.revive.available);
    if (!revivable) throw new Error("the demo snapshot needs a revivable runtime");
    m.mock.requestRevive(revivable.id);
    const panel = await vi.waitFor(() => {
      const p = byTestId(row(m!.root, revivable.id), "confirm-revive");
      byTestId(p, "plan-program");
      return p;
    });
    expect(visible(panel)).toBe(true);
    const [program, ...args] = revivable.launchCommand ?? [];
    expect(byTestId(panel, "plan-program").textContent).toBe(`/usr/bin/${program}`);
    expect(planArgs(panel)).toEqual(args);
    expect(byTestId(panel, "plan-cwd").textContent).toBe(revivable.workspace);
    expect(m.mock.calls.filter((c) => c.action === "revive")).toHaveLength(0);
  });

  it("explains instead of opening anything when the runtime cannot be revived", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.requestRevive("rt-demo-a");
    const banner = await vi.waitFor(() => byTestId(m!.root, "app-error"));
    expect(banner.textContent).toContain("cannot be revived");
    expect(m.root.querySelector('[data-testid="confirm-revive"]')).toBeNull();
  });
});

describe("revive of a catalog runtime that comes back under a new id", () => {
  it("announces the outcome at the top once the old row is gone", async () => {
    m = await mount(demoSnapshot(NOW));
    const revivable = demoSnapshot(NOW).runtimes.find((r) => r.revive.available && r.origin === "catalog");
    if (!revivable) throw new Error("the demo snapshot needs a revivable catalog runtime");
    click(byTestId(await openRevive(m, revivable.id), "confirm-accept"));
    const notice = await vi.waitFor(() => byTestId(m!.root, "app-notice"));
    expect(notice.textContent).toContain(revivable.name);
    expect(m.root.querySelector(`[data-runtime-id="${revivable.id}"]`)).toBeNull();
  });

  it("announces it when the old row goes only after the revive answered", async () => {
    m = await mount(demoSnapshot(NOW));
    const revivable = demoSnapshot(NOW).runtimes.find((r) => r.revive.available && r.origin === "catalog");
    if (!revivable) throw new Error("the demo snapshot needs a revivable catalog runtime");
    // The catalog entry says running before the watcher has read the new receipt.
    const watcherReads = m.mock.holdEvents();
    const panel = await openRevive(m, revivable.id);
    const snapshots = m.mock.calls.filter((c) => c.action === "snapshot").length;
    click(byTestId(panel, "confirm-accept"));
    await vi.waitFor(() => expect(m!.mock.calls.filter((c) => c.action === "snapshot").length).toBe(snapshots + 1));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(m.root.querySelector(`[data-runtime-id="${revivable.id}"]`)).not.toBeNull();
    expect(shown(m.root, "app-notice")).toBe(false);
    watcherReads();
    const notice = await vi.waitFor(() => byTestId(m!.root, "app-notice"));
    expect(notice.textContent).toContain(revivable.name);
    expect(m.root.querySelector(`[data-runtime-id="${revivable.id}"]`)).toBeNull();
  });
});

// The window shows the backend's snapshots in the order its watcher read them.
describe("a fetch and the event stream", () => {
  it("an answer that an event overtook does not put the window back in the past", async () => {
    m = await mount(demoSnapshot(NOW));
    const attachable = demoSnapshot(NOW).runtimes.find((r) => r.attach.available);
    if (!attachable) throw new Error("the demo snapshot needs an attachable runtime");
    const goes = demoSnapshot(NOW).runtimes.find((r) => r.id !== attachable.id);
    if (!goes) throw new Error("the demo snapshot needs a second runtime");
    const snapshots = () => m!.mock.calls.filter((c) => c.action === "snapshot").length;
    const before = snapshots();
    // A refused attach refreshes the list; its answer is read now and held in transit.
    const inTransit = m.mock.hold("snapshot");
    m.mock.failNext("attach", { code: "refused", message: "It stopped a moment ago." });
    click(byTestId(row(m.root, attachable.id), "action-attach"));
    await vi.waitFor(() => expect(snapshots()).toBe(before + 1));
    // Meanwhile the watcher reads that a runtime went, and its event arrives first.
    m.mock.update((s) => {
      s.runtimes = s.runtimes.filter((r) => r.id !== goes.id);
    });
    expect(m.root.querySelector(`[data-runtime-id="${goes.id}"]`)).toBeNull();
    inTransit.release();
    await vi.waitFor(() => expect(row(m!.root, attachable.id).querySelector('[data-testid="row-error"]')?.textContent).toContain("It stopped a moment ago."));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(m.root.querySelector(`[data-runtime-id="${goes.id}"]`), "the older answer was not shown").toBeNull();
  });
});

// Issue 14: the window branches on the error codes it keeps.
describe("what an error code makes the window do", () => {
  const snapshots = (mock: Mounted["mock"]) => mock.calls.filter((c) => c.action === "snapshot").length;

  it("notFound refreshes the list and says so at the top", async () => {
    m = await mount(demoSnapshot(NOW));
    const rt = demoSnapshot(NOW).runtimes.find((r) => r.attach.available);
    if (!rt) throw new Error("the demo snapshot needs an attachable runtime");
    const before = snapshots(m.mock);
    const gone = "That runtime is gone. The list has been refreshed.";
    m.mock.failNext("attach", { code: "notFound", message: gone });
    click(byTestId(row(m.root, rt.id), "action-attach"));
    await vi.waitFor(() => expect(snapshots(m!.mock)).toBe(before + 1));
    await vi.waitFor(() => expect(shown(m!.root, "app-notice")).toBe(true));
    expect(byTestId(m.root, "app-notice").textContent).toContain(gone);
  });

  it("refused refreshes the list and keeps the message on the row only", async () => {
    m = await mount(demoSnapshot(NOW));
    const rt = demoSnapshot(NOW).runtimes.find((r) => r.attach.available);
    if (!rt) throw new Error("the demo snapshot needs an attachable runtime");
    const before = snapshots(m.mock);
    m.mock.failNext("attach", { code: "refused", message: "It stopped a moment ago." });
    click(byTestId(row(m.root, rt.id), "action-attach"));
    await vi.waitFor(() => expect(snapshots(m!.mock)).toBe(before + 1));
    await vi.waitFor(() => expect(row(m!.root, rt.id).querySelector('[data-testid="row-error"]')?.textContent).toContain("It stopped a moment ago."));
    expect(shown(m.root, "app-notice")).toBe(false);
  });

  it("any other code only shows the message, without refreshing", async () => {
    m = await mount(demoSnapshot(NOW));
    const rt = demoSnapshot(NOW).runtimes.find((r) => r.attach.available);
    if (!rt) throw new Error("the demo snapshot needs an attachable runtime");
    const before = snapshots(m.mock);
    m.mock.failNext("attach", { code: "internal", message: "The keychain is locked." });
    click(byTestId(row(m.root, rt.id), "action-attach"));
    await vi.waitFor(() => expect(row(m!.root, rt.id).querySelector('[data-testid="row-error"]')?.textContent).toContain("The keychain is locked."));
    expect(snapshots(m.mock)).toBe(before);
    expect(shown(m.root, "app-notice")).toBe(false);
  });
});

// Issue 31, item 4: the window keeps the user's place and says things once.
describe("a calm list", () => {
  it("shows only the actions that can apply: what never can is left out, what cannot now is shown with why", async () => {
    const s = demoSnapshot(NOW);
    s.runtimes.push(runtime({ id: "locked", status: "stale", attach: { available: false, reason: "stale", applies: false }, forget: no("x"), revive: no("Its profile is in use by PID 7.") }));
    m = await mount(s);
    const running = row(m.root, "rt-docs");
    expect(visible(byTestId(running, "action-attach"))).toBe(true);
    expect(visible(byTestId(running, "action-revive"))).toBe(false);
    expect(visible(byTestId(running, "action-forget"))).toBe(false);
    const stale = row(m.root, "rt-review");
    expect(visible(byTestId(stale, "action-attach"))).toBe(false);
    expect(visible(byTestId(stale, "action-revive"))).toBe(true);
    expect(visible(byTestId(stale, "action-forget"))).toBe(true);
    // Not now, but could be: shown, disabled, with the reason.
    const revive = byTestId(row(m.root, "locked"), "action-revive");
    expect(visible(revive)).toBe(true);
    expect(revive.getAttribute("aria-disabled")).toBe("true");
    expect(document.getElementById(revive.getAttribute("aria-describedby") ?? "")?.textContent).toBe("Its profile is in use by PID 7.");
    // No disabled button is left on any card for an action that can never apply to it.
    for (const r of m.root.querySelectorAll<HTMLElement>('[data-testid="runtime-row"]')) {
      const id = r.dataset.runtimeId!;
      const view = m.mock.current().runtimes.find((v) => v.id === id)!;
      for (const action of ["attach", "revive", "forget", "dismiss"] as const) {
        expect(visible(byTestId(r, `action-${action}`)), `${id} ${action}`).toBe(view[action].applies);
      }
    }
  });

  it("says watchers other than the tray only, and nothing when there are none", async () => {
    const s = demoSnapshot(NOW);
    s.runtimes = [runtime({ id: "alone", state: agentState("working", { observers: 0 }) }), runtime({ id: "watched", state: agentState("working", { observers: 2 }) })];
    m = await mount(s);
    expect(visible(byTestId(row(m.root, "alone"), "agent-people"))).toBe(false);
    expect(byTestId(row(m.root, "watched"), "agent-people").textContent).toBe("2 watching");
  });

  it("a success message goes by itself after NOTICE_TIMEOUT_MS; an error stays until dismissed", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    m = await mount(demoSnapshot(NOW));
    const r = row(m.root, "rt-review");
    click(byTestId(await openRevive(m, "rt-review"), "confirm-accept"));
    await vi.waitFor(() => expect(shown(r, "row-notice")).toBe(true));
    vi.advanceTimersByTime(NOTICE_TIMEOUT_MS - 1_000);
    expect(shown(r, "row-notice")).toBe(true);
    vi.advanceTimersByTime(1_000);
    expect(shown(r, "row-notice")).toBe(false);

    m.mock.failNext("attach", { code: "internal", message: "The browser did not start." });
    click(byTestId(r, "action-attach"));
    await vi.waitFor(() => expect(shown(r, "row-error")).toBe(true));
    vi.advanceTimersByTime(10 * NOTICE_TIMEOUT_MS);
    expect(shown(r, "row-error")).toBe(true);
  });

  it("the notice at the top goes by itself too", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    m = await mount(demoSnapshot(NOW));
    m.mock.failNext("attach", { code: "notFound", message: "That runtime is gone." });
    click(byTestId(row(m.root, "rt-docs"), "action-attach"));
    await vi.waitFor(() => expect(shown(m!.root, "app-notice")).toBe(true));
    vi.advanceTimersByTime(NOTICE_TIMEOUT_MS);
    expect(shown(m.root, "app-notice")).toBe(false);
  });

  it("an approved card's focus lands on the list heading, also when the agent moves on after the answer", async () => {
    const s = demoSnapshot(NOW);
    const asking = (id: string) => runtime({ id, state: agentState("needs-approval", { title: "Run it?", actions: APPROVAL_ACTIONS.map((a) => ({ ...a })) }) });
    s.runtimes = [asking("one"), asking("two"), asking("three"), asking("four")];
    m = await mount(s);
    const first = row(m.root, "one");
    const approve = first.querySelector<HTMLButtonElement>('[data-action-id="approve"]')!;
    approve.focus();
    const watcherReads = m.mock.holdEvents();
    approve.click();
    await vi.waitFor(() => expect(m!.mock.calls.some((c) => c.action === "act")).toBe(true));
    await new Promise((resolve) => setTimeout(resolve, 0));
    // Answered, not yet read back: the button is still there and keeps focus.
    expect(document.activeElement).toBe(approve);
    watcherReads();
    // The agent moved on: its card sorts after the three still asking, and focus did not follow it.
    const order = [...m.root.querySelectorAll<HTMLElement>('[data-testid="runtime-row"]')].map((r) => r.dataset.runtimeId);
    expect(order).toEqual(["two", "three", "four", "one"]);
    expect(document.activeElement).toBe(m.root.querySelector("#runtimes-title"));
  });
});
