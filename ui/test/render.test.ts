// Rendering from snapshots: what the window shows for each kind of state.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PendingState, RuntimeStatus, Snapshot } from "../src/bindings";
import { PENDING_RULES } from "../src/bindings/pendingRules";
import { demoSnapshot, emptySnapshot, fileStoreSnapshot, pending, runtime } from "../src/fixtures";
import { mockBackend, NO_TRAY_HOST_NOTICE } from "../src/mock-backend";
import { byTestId, mount, mountOver, NOW, pendingRow, row, shown, visible, type Mounted } from "./helpers";

let current: Mounted | undefined;
async function show(s: Snapshot): Promise<HTMLElement> {
  current = await mount(s);
  return current.root;
}
afterEach(() => current?.app.destroy());

describe("first run and empty state", () => {
  it("explains what a runtime is and how to try one when nothing is registered", async () => {
    const root = await show(emptySnapshot());
    const empty = byTestId(root, "empty-state");
    expect(visible(empty)).toBe(true);
    expect(empty.textContent).toContain("local AI coding-agent process");
    expect(empty.textContent).toContain("@canonmsg/core");
    expect(empty.textContent).toContain("supercode-tray demo-runtime --name demo");
    expect(empty.textContent).toContain("/home/dev/.local/share/supercode/receipts");
    expect(root.querySelectorAll('[data-testid="runtime-row"]')).toHaveLength(0);
  });

  it("shows the welcome above the list on first run even when runtimes exist", async () => {
    const root = await show({ ...demoSnapshot(NOW), firstRun: true });
    expect(shown(root, "empty-state")).toBe(true);
    expect(byTestId(root, "empty-state").textContent).toContain("Welcome");
    expect(root.querySelectorAll('[data-testid="runtime-row"]')).toHaveLength(demoSnapshot(NOW).runtimes.length);
  });

  it("hides the explanation once runtimes exist and it is not the first run", async () => {
    const root = await show(demoSnapshot(NOW));
    expect(shown(root, "empty-state")).toBe(false);
  });
});

describe("secret store line", () => {
  it("names the keychain without a warning", async () => {
    const root = await show(demoSnapshot(NOW));
    const store = byTestId(root, "secret-store");
    expect(store.textContent).toContain("OS keychain (Secret Service)");
    expect(store.classList.contains("is-file")).toBe(false);
    expect(visible(store.querySelector<HTMLElement>(".store-tag")!)).toBe(false);
  });

  it("flags the file store as plaintext and opt-in", async () => {
    const root = await show(fileStoreSnapshot(NOW));
    const store = byTestId(root, "secret-store");
    expect(store.classList.contains("is-file")).toBe(true);
    expect(store.textContent).toContain("Plaintext · opt-in");
    expect(visible(store.querySelector<HTMLElement>(".store-tag")!)).toBe(true);
  });
});

describe("runtime rows", () => {
  it.each<[RuntimeStatus, string]>([
    ["running", "Running"],
    ["stale", "Stale"],
    ["offline", "Offline"],
    ["manual", "Manual"],
    ["embedded", "Embedded"],
  ])("shows a %s runtime with its badge and reason", async (status, label) => {
    const root = await show({ ...demoSnapshot(NOW), runtimes: [runtime({ id: "x", name: "demo-x", status, statusReason: `reason for ${status}` })] });
    const r = row(root, "x");
    expect(byTestId(r, "runtime-status").textContent).toBe(label);
    expect(byTestId(r, "runtime-status").className).toContain(`tone-${status}`);
    expect(r.textContent).toContain(`reason for ${status}`);
  });

  it("shows name, kind, shortened workspace with the full path as title, and since as relative time", async () => {
    const root = await show(demoSnapshot(NOW));
    const r = row(root, "rt-review");
    expect(r.querySelector(".row-name")?.textContent).toBe("review-bot");
    expect(r.querySelector(".kind")?.textContent).toBe("codex");
    const ws = r.querySelector<HTMLElement>(".workspace");
    expect(ws?.textContent).toBe("…/canon-review-service");
    expect(ws?.title).toBe("/home/dev/src/clients/acme/services/canon-review-service");
    const since = r.querySelector("time.since");
    expect(since?.textContent).toBe("started 3 h ago");
    expect(since?.getAttribute("datetime")).toBe(new Date(NOW.getTime() - 3 * 3_600_000).toISOString());
  });

  it("keeps rows in the backend's order and keys them by id", async () => {
    const root = await show(demoSnapshot(NOW));
    const ids = [...root.querySelectorAll('[data-testid="runtime-row"]')].map((r) => r.getAttribute("data-runtime-id"));
    // The core sorts (agents that need you first); the window keeps its order exactly.
    expect(ids).toEqual(["rt-demo-a", "rt-triage", "rt-flaky", "rt-stuck", "rt-docs", "rt-fresh", "rt-legacy", "rt-review", "rt-nightly", "rt-ops", "rt-ide", "rt-manual"]);
  });

  it("shows available actions as enabled buttons named after the runtime", async () => {
    const root = await show(demoSnapshot(NOW));
    const r = row(root, "rt-review");
    const revive = byTestId<HTMLButtonElement>(r, "action-revive");
    expect(revive.getAttribute("aria-label")).toBe("Revive review-bot");
    expect(revive.hasAttribute("aria-disabled")).toBe(false);
    expect(revive.hasAttribute("aria-describedby")).toBe(false);
    expect(byTestId(r, "action-forget").getAttribute("aria-label")).toBe("Forget review-bot");
  });

  it("marks unavailable actions disabled, still focusable, and describes them with the reason as visible text", async () => {
    const root = await show(demoSnapshot(NOW));
    const attach = byTestId<HTMLButtonElement>(row(root, "rt-review"), "action-attach");
    expect(attach.getAttribute("aria-disabled")).toBe("true");
    expect(attach.disabled).toBe(false); // stays in the tab order so keyboard users reach the reason
    const tip = document.getElementById(attach.getAttribute("aria-describedby") ?? "");
    expect(tip?.textContent).toBe("Not running: the process has exited.");
    expect(tip?.getAttribute("role")).toBe("tooltip");
    expect(tip?.hidden).toBe(false);
  });

  it("falls back to a generic reason when the backend gives none", async () => {
    const root = await show({ ...demoSnapshot(NOW), runtimes: [runtime({ id: "x", attach: { available: false, reason: null, applies: true } })] });
    const attach = byTestId(row(root, "x"), "action-attach");
    expect(document.getElementById(attach.getAttribute("aria-describedby") ?? "")?.textContent).toBe("Not available right now.");
  });

  it("never renders fields the view types do not define", async () => {
    const s = demoSnapshot(NOW);
    const leaky = { ...s.runtimes[0], endpoint: "127.0.0.1:49152", token: "sk-live-abcdef", bearer: "Bearer xyz" };
    const root = await show({ ...s, runtimes: [leaky as unknown as (typeof s.runtimes)[number]] });
    const text = root.textContent ?? "";
    const attrs = [...root.querySelectorAll("*")].flatMap((el) => [...el.attributes].map((a) => a.value)).join(" ");
    for (const secret of ["127.0.0.1:49152", "sk-live-abcdef", "Bearer xyz"]) {
      expect(text).not.toContain(secret);
      expect(attrs).not.toContain(secret);
    }
  });
});

describe("pending registrations", () => {
  it.each<[PendingState, string, string | null, string]>([
    ["unsubmitted", "Not sent", "Approve", "Reject"],
    ["waiting", "Waiting", "Approve", "Reject"],
    ["approving", "Approving", "Waiting for approval in Canon…", "Reject"],
    ["error", "Failed", "Retry approval", "Reject"],
    ["approved", "Approved", null, "Dismiss"],
    ["rejected", "Rejected", null, "Dismiss"],
    // Polling stopped at its deadline: approving again resumes it (issue 14).
    ["expired", "Expired", "Resume approval", "Reject"],
  ])("shows a %s request with the right badge and actions", async (state, badge, approve, reject) => {
    const root = await show({
      ...demoSnapshot(NOW),
      pending: [pending({ profile: "p1", clientType: "codex", state, createdAt: new Date(NOW.getTime() - 5 * 60_000).toISOString(), updatedAt: NOW.toISOString(), message: `message for ${state}` })],
    });
    const r = pendingRow(root, "p1");
    expect(r.querySelector(".badge")?.textContent).toBe(badge);
    expect(r.textContent).toContain("codex");
    expect(r.textContent).toContain("requested 5 min ago");
    expect(r.textContent).toContain(`message for ${state}`);
    const approveBtn = byTestId(r, "action-approve");
    expect(visible(approveBtn)).toBe(approve !== null);
    if (approve !== null) expect(approveBtn.textContent).toBe(approve);
    expect(byTestId(r, "action-reject").textContent).toBe(reject);
    expect(byTestId(r, "action-reject").getAttribute("aria-label")).toBe(`${reject} p1`);
  });

  // The same walk the tray menu's test does (src-tauri/app/tray.rs), over the table generated
  // from the core: the window offers Approve exactly where the core allows it.
  it.each(Object.keys(PENDING_RULES) as PendingState[])("renders what the core decides for a %s request", async (state) => {
    const rules = PENDING_RULES[state];
    const root = await show({
      ...demoSnapshot(NOW),
      pending: [pending({ profile: "p1", clientType: null, state, createdAt: NOW.toISOString(), updatedAt: NOW.toISOString(), message: null })],
    });
    const r = pendingRow(root, "p1");
    const approveBtn = byTestId(r, "action-approve");
    expect(visible(approveBtn)).toBe(!rules.over);
    if (state === "approving") {
      // In flight: the busy button, not a reason.
      expect(approveBtn.getAttribute("aria-busy")).toBe("true");
    } else if (!rules.over) {
      expect(approveBtn.getAttribute("aria-disabled") === "true").toBe(!rules.approve.available);
    }
    expect(byTestId(r, "action-reject").textContent).toBe(rules.over ? "Dismiss" : "Reject");
    expect(byTestId(r, "action-reject").getAttribute("aria-disabled")).toBe(rules.dismiss.available ? null : "true");
    const summary = root.querySelector(".summary")?.textContent ?? "";
    if (rules.over) expect(summary).not.toContain("awaiting approval");
    else expect(summary).toContain("1 awaiting approval");
  });

  it("hides the section when there are no requests", async () => {
    const root = await show({ ...demoSnapshot(NOW), pending: [] });
    expect(root.querySelector('[data-testid="pending-row"]')).toBeNull();
    const heading = [...root.querySelectorAll("h2")].find((h) => h.textContent === "Registration requests");
    expect(heading && visible(heading)).toBe(false);
  });
});

describe("ignored files", () => {
  it("lists each file and its reason inside a collapsed <details>", async () => {
    const root = await show(demoSnapshot(NOW));
    const details = root.querySelector("details");
    expect(details).not.toBeNull();
    expect(details?.open).toBe(false);
    expect(details?.querySelector("summary")?.textContent).toContain("Ignored files2");
    const rows = [...root.querySelectorAll('[data-testid="ignored-row"]')];
    expect(rows).toHaveLength(2);
    expect(rows[0]?.textContent).toContain("broken-1733150000.json");
    expect(rows[0]?.textContent).toContain("Not valid JSON (line 1, column 17).");
    expect(rows[1]?.textContent).toContain("canon");
  });

  it("is hidden when nothing was ignored", async () => {
    const root = await show({ ...demoSnapshot(NOW), ignored: [] });
    expect(root.querySelector<HTMLElement>("details")?.hidden).toBe(true);
  });
});

describe("files used with a warning (issue 13)", () => {
  it("lists each file and its reason apart from the ignored ones, as text", async () => {
    const reason = "its permissions (644) let other users read it; <b>chmod 600</b> it";
    const root = await show({ ...demoSnapshot(NOW), warnings: [{ location: "canon", file: "agents.json", reason }] });
    const details = root.querySelector<HTMLElement>('[data-testid="warning-rows"]');
    expect(details?.hidden).toBe(false);
    expect(details?.querySelector("summary")?.textContent).toContain("Files to check1");
    const rows = [...root.querySelectorAll('[data-testid="warning-row"]')];
    expect(rows).toHaveLength(1);
    expect(rows[0]?.querySelector(".ignored-reason")?.textContent).toBe(reason);
    expect(rows[0]?.querySelector("b")).toBeNull();
    expect(root.querySelectorAll('[data-testid="ignored-row"]')).toHaveLength(2);
  });

  it("is hidden when there is nothing to check", async () => {
    const root = await show(demoSnapshot(NOW));
    expect(root.querySelector<HTMLElement>('[data-testid="warning-rows"]')?.hidden).toBe(true);
  });
});

describe("a desktop without a tray host", () => {
  it("shows the core's notice, as worded, at the top and keeps it", async () => {
    const mock = mockBackend(demoSnapshot(NOW), { desktopNotice: NO_TRAY_HOST_NOTICE });
    const { root, app } = mountOver(mock);
    await app.ready;
    await vi.waitFor(() => expect(visible(byTestId(root, "desktop-notice"))).toBe(true));
    const text = byTestId(root, "desktop-notice").textContent ?? "";
    expect(text).toContain("The tray icon cannot show on this desktop.");
    expect(text).toContain("AppIndicator");
    expect(text).toContain("run supercode-tray again to bring this window back");
    app.destroy();
  });

  it("shows no notice when the core gives none", async () => {
    const mock = mockBackend(demoSnapshot(NOW));
    const { root, app } = mountOver(mock);
    await app.ready;
    await Promise.resolve();
    expect(root.querySelector('[data-testid="desktop-notice"]')).toBeNull();
    app.destroy();
  });
});
