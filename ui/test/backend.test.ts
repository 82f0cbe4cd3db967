// The Tauri backend: command names, argument shapes, the event name, and how
// rejections become CommandErrors. The Tauri API is replaced by spies.
import { beforeEach, describe, expect, it, vi } from "vitest";

const invoke = vi.fn();
const listen = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...a: unknown[]) => invoke(...a) }));
vi.mock("@tauri-apps/api/event", () => ({ listen: (...a: unknown[]) => listen(...a) }));

const { tauriBackend, toCommandError, isCommandError, wantsMock, SNAPSHOT_EVENT, CONFIRM_ACT_EVENT } = await import("../src/backend");

beforeEach(() => {
  invoke.mockReset();
  listen.mockReset();
});

describe("tauriBackend", () => {
  it("calls each command by its IPC name with the documented arguments", async () => {
    invoke.mockResolvedValue(undefined);
    await tauriBackend.snapshot();
    await tauriBackend.attach("rt-1");
    await tauriBackend.forget("rt-2");
    await tauriBackend.revivePlan("rt-3");
    await tauriBackend.revive("rt-3", "d1g35t", ["LD_PRELOAD"]);
    await tauriBackend.act("rt-4", "approve", 7);
    await tauriBackend.approve("dev");
    await tauriBackend.reject("ci");
    await tauriBackend.openLogs();
    expect(invoke.mock.calls).toEqual([
      ["snapshot", undefined],
      ["attach", { id: "rt-1" }],
      ["forget", { id: "rt-2" }],
      ["revive_plan", { id: "rt-3" }],
      ["revive", { id: "rt-3", planDigest: "d1g35t", allowEnv: ["LD_PRELOAD"] }],
      ["act", { id: "rt-4", action: "approve", revision: 7 }],
      ["approve", { profile: "dev" }],
      ["reject", { profile: "ci" }],
      ["open_logs", undefined],
    ]);
  });

  it("rejects with the backend's CommandError, keeping only code and message", async () => {
    invoke.mockRejectedValue({ code: "refused", message: "Only stale receipts can be forgotten.", extra: "dropped" });
    await expect(tauriBackend.forget("x")).rejects.toEqual({ code: "refused", message: "Only stale receipts can be forgotten." });
  });

  it("wraps a plain IPC failure as an internal CommandError", async () => {
    invoke.mockRejectedValue("command attach not found");
    await expect(tauriBackend.attach("x")).rejects.toEqual({ code: "internal", message: "command attach not found" });
  });

  it("subscribes to supercode://snapshot and hands over the payload", async () => {
    const stop = vi.fn();
    listen.mockResolvedValue(stop);
    const seen: unknown[] = [];
    const unlisten = await tauriBackend.onSnapshot((s) => seen.push(s));
    expect(listen.mock.calls[0]?.[0]).toBe("supercode://snapshot");
    expect(SNAPSHOT_EVENT).toBe("supercode://snapshot");
    const handler = listen.mock.calls[0]?.[1] as (e: { payload: unknown }) => void;
    handler({ payload: { runtimes: [] } });
    expect(seen).toEqual([{ runtimes: [] }]);
    unlisten();
    expect(stop).toHaveBeenCalledOnce();
  });
});

describe("tauriBackend agent actions", () => {
  it("a refused act rejects with the core's CommandError", async () => {
    invoke.mockRejectedValue({ code: "refused", message: "demo-a does not offer \"approve\" now" });
    await expect(tauriBackend.act("rt-1", "approve", 3)).rejects.toEqual({ code: "refused", message: 'demo-a does not offer "approve" now' });
  });

  it("hands over only well-formed confirm-act requests from supercode://confirm-act", async () => {
    listen.mockResolvedValue(vi.fn());
    const seen: unknown[] = [];
    await tauriBackend.onConfirmAct((r) => seen.push(r));
    expect(listen.mock.calls[0]?.[0]).toBe("supercode://confirm-act");
    expect(CONFIRM_ACT_EVENT).toBe("supercode://confirm-act");
    const handler = listen.mock.calls[0]?.[1] as (e: { payload: unknown }) => void;
    handler({ payload: { id: "rt-1", action: "deny", extra: "<b>dropped</b>" } });
    handler({ payload: "rt-1" });
    handler({ payload: { id: "rt-1", action: 7 } });
    expect(seen).toEqual([{ id: "rt-1", action: "deny" }]);
  });
});

describe("toCommandError", () => {
  it("accepts only known codes as CommandErrors", () => {
    expect(isCommandError({ code: "refused", message: "m" })).toBe(true);
    // Codes nothing branched on were dropped (issue 14): the backend no longer sends them.
    expect(isCommandError({ code: "network", message: "m" })).toBe(false);
    expect(isCommandError({ code: "teapot", message: "m" })).toBe(false);
    expect(toCommandError({ code: "teapot", message: "m" }).code).toBe("internal");
  });

  it("gives a readable message for anything else", () => {
    expect(toCommandError(new Error("boom"))).toEqual({ code: "internal", message: "boom" });
    expect(toCommandError(undefined).message).toMatch(/Open the logs folder/);
  });
});

describe("wantsMock", () => {
  const win = (search: string, tauri: boolean) => ({ location: { search }, ...(tauri ? { __TAURI_INTERNALS__: {} } : {}) }) as unknown as Window;
  it("uses Tauri inside the app and the mock in a browser or with ?mock", () => {
    expect(wantsMock(win("", true))).toBe(false);
    expect(wantsMock(win("", false))).toBe(true);
    expect(wantsMock(win("?mock", true))).toBe(true);
    expect(wantsMock(win("?mock=empty", true))).toBe(true);
  });
});
