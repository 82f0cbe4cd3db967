// The one interface between the window and the app. Everything the UI knows
// about runtimes, registrations and the secret store comes through `Backend`;
// `tauriBackend` speaks Tauri IPC, the mock in `mock-backend.ts` runs the
// same UI in a plain browser for tests.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type { ActOutcome, CodingAgentView, CommandError, DesktopNotice, ErrorCode, HooksChange, HooksOutcome, HooksPlanView, PendingView, ReviveOutcome, RevivePlanView, Snapshot } from "./bindings";
import { CONFIRM_ACT_EVENT, CONFIRM_REVIVE_EVENT, ERROR_CODES, SNAPSHOT_EVENT } from "./bindings/wire";

/** One action of one runtime's agent, as the tray menu asks the window to confirm it. */
export interface ActRequest {
  /** The runtime's inventory id. */
  id: string;
  /** The action id its agent offers. */
  action: string;
}

/** What the window can ask of the app. Every method rejects with a `CommandError`. */
export interface Backend {
  snapshot(): Promise<Snapshot>;
  attach(id: string): Promise<void>;
  forget(id: string): Promise<void>;
  /** Takes the exited runtime `id` off the list; refused for one that has not exited. */
  dismiss(id: string): Promise<void>;
  /** What a revive of `id` would run: program, arguments, working directory, environment. */
  revivePlan(id: string): Promise<RevivePlanView>;
  /**
   * Revives `id` from the plan the user was shown (its `digest`), allowing the listed variables
   * that change how programs load for this runtime. Rejects with `planChanged` when the record
   * no longer makes that plan.
   */
  revive(id: string, planDigest: string, allowEnv: string[]): Promise<ReviveOutcome>;
  /**
   * Invokes `action` of runtime `id`'s agent ("approve"). The core refuses (`refused`) unless the
   * runtime's latest status document offers it; its effect arrives as the next snapshots.
   */
  act(id: string, action: string, revision: number): Promise<ActOutcome>;
  approve(profile: string): Promise<PendingView>;
  reject(profile: string): Promise<void>;
  openLogs(): Promise<void>;
  /** What the core says about this desktop (no tray host: the icon cannot show), or `null`. */
  desktopNotice(): Promise<DesktopNotice | null>;
  /** Claude Code and Codex, each with its state as `hooks status` computes it and the actions that apply. */
  codingAgents(): Promise<CodingAgentView[]>;
  /** What Connect or Disconnect of `agent` would change in its settings file, shown before it is made. */
  hooksPlan(agent: string, change: HooksChange): Promise<HooksPlanView>;
  /**
   * Makes the change whose preview (its `digest`) the user confirmed. Rejects with `planChanged`
   * when the settings file changed since (nothing is written), `refused` when the file is refused.
   */
  hooksChange(agent: string, change: HooksChange, digest: string): Promise<HooksOutcome>;
  /** Calls `cb` with every fresh snapshot; resolves to a function that stops the subscription. */
  onSnapshot(cb: (s: Snapshot) => void): Promise<() => void>;
  /**
   * Calls `cb` with a runtime id when the tray menu's "Revive …" asks the window to show that
   * runtime's revive confirmation (revive always shows its command before it runs).
   */
  onConfirmRevive(cb: (id: string) => void): Promise<() => void>;
  /**
   * Calls `cb` when the tray menu asks the window to confirm one action of a runtime's agent
   * (a destructive one, or one with a question: a menu cannot ask).
   */
  onConfirmAct(cb: (request: ActRequest) => void): Promise<() => void>;
}

export { CONFIRM_ACT_EVENT, CONFIRM_REVIVE_EVENT, SNAPSHOT_EVENT } from "./bindings/wire";

/** The query parameter that does the same when the tray menu opens a new window. */
export const CONFIRM_REVIVE_PARAM = "confirmRevive";

/** The query parameters that ask a new window to confirm an agent action (the tray menu opens one): the runtime id and the action id. */
export const CONFIRM_ACT_PARAM = "confirmAct";
export const CONFIRM_ACT_ACTION_PARAM = "action";

/** True when `value` is an `{ id, action }` pair of strings (the event payload is checked, not trusted). */
export function isActRequest(value: unknown): value is ActRequest {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.id === "string" && typeof v.action === "string";
}

const ERROR_CODES_SET: ReadonlySet<string> = new Set<ErrorCode>(ERROR_CODES);

/** True when `value` has the `{ code, message }` wire shape of a backend error. */
export function isCommandError(value: unknown): value is CommandError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === "string" && ERROR_CODES_SET.has(v.code) && typeof v.message === "string";
}

/**
 * Turns whatever a failed call rejected with into a `CommandError`.
 *
 * The backend sends `{ code, message }`; anything else (an IPC failure string,
 * a thrown `Error`) becomes `internal`. Only `code` and `message` are kept so
 * no unexpected field can ever be rendered.
 */
export function toCommandError(value: unknown): CommandError {
  if (isCommandError(value)) return { code: value.code, message: value.message };
  if (typeof value === "string" && value.trim() !== "") return { code: "internal", message: value };
  if (value instanceof Error && value.message !== "") return { code: "internal", message: value.message };
  return { code: "internal", message: "Something went wrong. Open the logs folder for details." };
}

async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (err) {
    throw toCommandError(err);
  }
}

/** The backend of the real app: Tauri commands and the snapshot event. */
export const tauriBackend: Backend = {
  snapshot: () => call<Snapshot>("snapshot"),
  attach: (id) => call<void>("attach", { id }),
  forget: (id) => call<void>("forget", { id }),
  dismiss: (id) => call<void>("dismiss", { id }),
  revivePlan: (id) => call<RevivePlanView>("revive_plan", { id }),
  revive: (id, planDigest, allowEnv) => call<ReviveOutcome>("revive", { id, planDigest, allowEnv }),
  act: (id, action, revision) => call<ActOutcome>("act", { id, action, revision }),
  approve: (profile) => call<PendingView>("approve", { profile }),
  reject: (profile) => call<void>("reject", { profile }),
  openLogs: () => call<void>("open_logs"),
  desktopNotice: () => call<DesktopNotice | null>("desktop_notice"),
  codingAgents: () => call<CodingAgentView[]>("coding_agents"),
  hooksPlan: (agent, change) => call<HooksPlanView>("hooks_plan", { agent, change }),
  hooksChange: (agent, change, digest) => call<HooksOutcome>("hooks_change", { agent, change, digest }),
  onSnapshot: (cb) => listen<Snapshot>(SNAPSHOT_EVENT, (event) => cb(event.payload)),
  onConfirmRevive: (cb) => listen<string>(CONFIRM_REVIVE_EVENT, (event) => cb(event.payload)),
  onConfirmAct: (cb) =>
    listen<unknown>(CONFIRM_ACT_EVENT, (event) => {
      if (isActRequest(event.payload)) cb({ id: event.payload.id, action: event.payload.action });
    }),
};

/** True when the page runs inside the Tauri webview (its IPC bridge is injected before any script). */
export function insideTauri(win: Window = window): boolean {
  return "__TAURI_INTERNALS__" in win;
}

/** The mock backend is used outside Tauri, or when `?mock` is in the URL (browser tests). */
export function wantsMock(win: Window = window): boolean {
  return !insideTauri(win) || new URLSearchParams(win.location.search).has("mock");
}
