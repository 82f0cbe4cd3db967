// An in-memory `Backend` for browser and unit tests. It behaves like the app
// (forget removes the receipt, revive starts the runtime, approve passes through
// "approving") and is scriptable: make the next call of an action fail, or hold
// it until the test releases it, and read back every call made.
import type { ActRequest, Backend } from "./backend";
import type { ActOutcome, CodingAgentView, CommandError, DesktopNotice, HooksChange, HooksOutcome, HooksPlanView, PendingView, PlanEnvVar, ReviveOutcome, RevivePlanView, RuntimeView, Snapshot } from "./bindings";
import { settle } from "./fixtures";

/** The backend calls a test can fail, hold or inspect. */
export type MockAction = "snapshot" | "attach" | "forget" | "dismiss" | "revivePlan" | "revive" | "act" | "approve" | "reject" | "openLogs" | "codingAgents" | "hooksPlan" | "hooksChange";

/** One recorded call: the action and its argument (runtime id or profile), if any. */
export type MockCall = { action: MockAction, arg: string | null, change?: HooksChange, planDigest?: string, allowEnv?: string[], agentAction?: string, revision?: number };

/** Like the app's rule (`revive::allowed_env`): every variable needs an allow but these, with plain values. */
const HARMLESS = new Set(["LANG", "LANGUAGE", "LC_ALL", "LC_ADDRESS", "LC_COLLATE", "LC_CTYPE", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_MESSAGES", "LC_MONETARY", "LC_NAME", "LC_NUMERIC", "LC_PAPER", "LC_TELEPHONE", "LC_TIME", "TZ", "TERM", "COLORTERM", "NO_COLOR", "CANON_AGENT"]);

function allowReason(name: string, value: string): string | null {
  if (!HARMLESS.has(name)) return `${name} is not one of the few harmless variables revive sets without asking`;
  const plain = name === "TZ"
    ? /^[A-Za-z0-9_.@:+\-\/,<>]{0,64}$/.test(value) && !value.startsWith("/") && !value.startsWith(":/") && !value.includes("..")
    : /^[A-Za-z0-9_.@:+\-]{0,64}$/.test(value);
  if (plain) return null;
  return name === "TZ"
    ? `${name} is set without asking only to a time zone name (no leading /, no ..), and this value is not one`
    : `${name} is set without asking only to a plain name (letters, digits, _ . @ : + -; no /), and this value is not one`;
}

/** A stable stand-in for the app's plan digest (any change to the plan changes it). */
function digestOf(parts: unknown): string {
  const text = JSON.stringify(parts);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/** A held call, released by the test. */
export interface Gate {
  /** Lets the call go on and do its normal work. */
  release(): void;
  /** Makes the call fail with `error`. */
  fail(error: CommandError): void;
}

/** Knobs for how the mock feels; zero for tests, a little latency for demos. */
export interface MockOptions {
  /** Delay before each action completes, so busy states are visible in a demo. */
  latencyMs?: number;
  /** How long an approval stays in "approving" before it is approved. */
  approvalMs?: number;
  /** What `desktopNotice` answers: the core's words when no tray host runs; none by default. */
  desktopNotice?: DesktopNotice | null;
}

/** The core's notice when the desktop has no tray host (`doctor::tray_host_notice`), for demos and tests. */
export const NO_TRAY_HOST_NOTICE: DesktopNotice = {
  title: "The tray icon cannot show on this desktop",
  detail:
    "No tray host is running, so Supercode Tray has no icon in the panel. To get it, on GNOME install and enable the AppIndicator extension (gnome-shell-extension-appindicator). Meanwhile, run supercode-tray again to bring this window back.",
};

/** One agent's settings file as the mock keeps it. */
export interface MockAgentFile {
  agent: string;
  title: string;
  settings: string;
  /** Our entries are in it. */
  connected: boolean;
  /** The file is refused for this reason (a link, not JSON...). */
  problem: string | null;
  /** Bumped by every write, ours or another program's: it is part of the plan's digest. */
  version: number;
  /** Codex only: whether the user trusted the entries in Codex. */
  trusted: boolean | null;
}

const AGENT_EVENTS: Record<string, string[]> = {
  "claude-code": ["PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "SessionEnd"],
  codex: ["SessionStart", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop"],
};

type Pending = { resolve: () => void, reject: (e: CommandError) => void };

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function delay(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/** A scriptable in-memory backend. */
export class MockBackend implements Backend {
  /** Every call, in order. */
  readonly calls: MockCall[] = [];
  private state: Snapshot;
  /** The state last pushed to subscribers: what `snapshot()` answers, as the app's watcher's last read is. */
  private published: Snapshot;
  /** While set, pushes wait (the watcher has not read the change yet); see `holdEvents`. */
  private eventsHeld = false;
  private readonly listeners = new Set<(s: Snapshot) => void>();
  private readonly failures = new Map<MockAction, CommandError>();
  private readonly holds = new Map<MockAction, Gate & { wait: Promise<void> }>();
  private readonly latencyMs: number;
  private readonly approvalMs: number;
  /** Extra variables each runtime's launch command sets, by runtime id (see `setLaunchEnv`). */
  private readonly launchEnv = new Map<string, Record<string, string>>();
  /** Variables the user allowed, by runtime id: name → value. */
  private readonly allowed = new Map<string, Map<string, string>>();

  /** The coding agents' settings files (see `agentFile`). */
  private readonly agentFiles: MockAgentFile[] = [
    { agent: "claude-code", title: "Claude Code", settings: "/home/user/.claude/settings.json", connected: false, problem: null, version: 1, trusted: null },
    { agent: "codex", title: "Codex", settings: "/home/user/.codex/hooks.json", connected: false, problem: null, version: 1, trusted: false },
  ];

  constructor(initial: Snapshot, options: MockOptions = {}) {
    this.state = settle(clone(initial));
    this.published = clone(this.state);
    this.latencyMs = options.latencyMs ?? 0;
    this.approvalMs = options.approvalMs ?? 0;
    this.notice = options.desktopNotice ?? null;
  }

  private readonly notice: DesktopNotice | null;

  async desktopNotice(): Promise<DesktopNotice | null> {
    return this.notice === null ? null : clone(this.notice);
  }

  /** The mock's current snapshot (a copy). */
  current(): Snapshot {
    return clone(this.state);
  }

  /** Replaces the snapshot and pushes it to subscribers, like the app's watcher does. */
  setSnapshot(next: Snapshot): void {
    this.state = settle(clone(next));
    this.emit();
  }

  /** Changes the snapshot in place and pushes it to subscribers. */
  update(change: (s: Snapshot) => void): void {
    change(this.state);
    settle(this.state);
    this.emit();
  }

  /** Pushes the current snapshot to subscribers (later, while events are held). */
  emit(): void {
    if (this.eventsHeld) return;
    this.published = clone(this.state);
    for (const cb of this.listeners) cb(clone(this.state));
  }

  /**
   * Holds back every push, as a watcher that has not read a change yet would, until the returned
   * function is called, which pushes the state then.
   */
  holdEvents(): () => void {
    this.eventsHeld = true;
    return () => {
      this.eventsHeld = false;
      this.emit();
    };
  }

  /** Makes the next call of `action` reject with `error`. */
  failNext(action: MockAction, error: CommandError): void {
    this.failures.set(action, error);
  }

  /** Makes the next call of `action` wait until the returned gate is released or failed. */
  hold(action: MockAction): Gate {
    let pending: Pending | undefined;
    const wait = new Promise<void>((resolve, reject) => {
      pending = { resolve, reject };
    });
    // A held call that the test fails must not also surface as an unhandled rejection here.
    wait.catch(() => undefined);
    const gate = {
      wait,
      release: () => pending?.resolve(),
      fail: (e: CommandError) => pending?.reject(e),
    };
    this.holds.set(action, gate);
    return gate;
  }

  /** Number of live `onSnapshot` subscriptions. */
  subscriberCount(): number {
    return this.listeners.size;
  }

  private async begin(action: MockAction, arg: string | null = null, record = true): Promise<void> {
    if (record) this.calls.push({ action, arg });
    const gate = this.holds.get(action);
    if (gate) {
      this.holds.delete(action);
      await gate.wait;
    } else {
      await delay(this.latencyMs);
    }
    const failure = this.failures.get(action);
    if (failure) {
      this.failures.delete(action);
      throw clone(failure);
    }
  }

  private runtime(id: string): RuntimeView {
    const found = this.state.runtimes.find((r) => r.id === id);
    if (!found) throw { code: "notFound", message: "That runtime is gone. The list has been refreshed." };
    return found;
  }

  /** What was last pushed, as of the call (the answer travels while later events may not). */
  async snapshot(): Promise<Snapshot> {
    const answer = clone(this.published);
    await this.begin("snapshot");
    return answer;
  }

  async attach(id: string): Promise<void> {
    await this.begin("attach", id);
    const rt = this.runtime(id);
    if (!rt.attach.available) throw { code: "refused", message: rt.attach.reason ?? "Attach is not available." };
  }

  async forget(id: string): Promise<void> {
    await this.begin("forget", id);
    const rt = this.runtime(id);
    if (!rt.forget.available) throw { code: "refused", message: rt.forget.reason ?? "Forget is not available." };
    this.update((s) => {
      s.runtimes = s.runtimes.filter((r) => r.id !== id);
    });
  }

  async dismiss(id: string): Promise<void> {
    await this.begin("dismiss", id);
    const rt = this.runtime(id);
    if (!rt.dismiss.available) throw { code: "refused", message: rt.dismiss.reason ?? "Dismiss is not available." };
    this.update((s) => {
      s.runtimes = s.runtimes.filter((r) => r.id !== id);
    });
  }

  /** Makes runtime `id`'s launch command set `env` (on top of `CANON_AGENT`), as a receipt can. */
  setLaunchEnv(id: string, env: Record<string, string>): void {
    this.launchEnv.set(id, { ...env });
  }

  /** The plan the app would make for `rt` now. */
  private planOf(rt: RuntimeView): RevivePlanView {
    const argv = rt.launchCommand ?? [];
    const recorded = argv[0] ?? "";
    const program = recorded.startsWith("/") ? recorded : `/usr/bin/${recorded}`;
    const vars: Record<string, string> = { ...(this.launchEnv.get(rt.id) ?? {}) };
    if (rt.profile !== null) vars.CANON_AGENT = rt.profile;
    const allowed = this.allowed.get(rt.id) ?? new Map<string, string>();
    const env: PlanEnvVar[] = Object.keys(vars)
      .sort()
      .map((name) => {
        const value = vars[name]!;
        const reason = allowReason(name, value);
        return { name, value, needsAllow: reason !== null, allowed: reason !== null && allowed.get(name) === value, reason };
      });
    const refused = env.filter((v) => v.needsAllow && !v.allowed);
    const cwd = rt.workspace ?? "/";
    return {
      id: rt.id,
      name: rt.name,
      program,
      recordedProgram: recorded,
      args: argv.slice(1),
      cwd,
      env,
      profile: rt.profile,
      digest: digestOf([rt.id, program, argv.slice(1), cwd, env.map((v) => [v.name, v.value])]),
      run:
        refused.length === 0
          ? { available: true, reason: null, applies: true }
          : { available: false, applies: true, reason: `Not reviving ${rt.name}: its launch command sets ${refused.map((v) => v.name).join(", ")}. ${refused.map((v) => v.reason).join("; ")}.` },
    };
  }

  async revivePlan(id: string): Promise<RevivePlanView> {
    await this.begin("revivePlan", id);
    const rt = this.runtime(id);
    if (!rt.revive.available) throw { code: "refused", message: rt.revive.reason ?? "Revive is not available." };
    return this.planOf(rt);
  }

  async revive(id: string, planDigest: string, allowEnv: string[]): Promise<ReviveOutcome> {
    this.calls.push({ action: "revive", arg: id, planDigest, allowEnv: [...allowEnv] });
    await this.begin("revive", id, false);
    const rt = this.runtime(id);
    if (!rt.revive.available) throw { code: "refused", message: rt.revive.reason ?? "Revive is not available." };
    const plan = this.planOf(rt);
    if (plan.digest !== planDigest) throw { code: "planChanged", message: `The launch command of ${rt.name} changed since it was shown; review it again.` };
    const allowed = this.allowed.get(id) ?? new Map<string, string>();
    for (const name of allowEnv) {
      const v = plan.env.find((e) => e.name === name);
      if (v) allowed.set(name, v.value);
    }
    this.allowed.set(id, allowed);
    const after = this.planOf(rt);
    if (!after.run.available) throw { code: "refused", message: after.run.reason ?? "Some variables are refused." };
    const pid = 40000 + this.calls.length;
    this.update(() => {
      rt.status = "running";
      rt.statusReason = null;
      rt.since = new Date().toISOString();
      rt.pid = pid;
      rt.attach = { available: true, reason: null, applies: true };
      rt.forget = { available: false, reason: "The runtime is running; only stale receipts can be forgotten.", applies: false };
      rt.revive = { available: false, reason: "Already running.", applies: false };
      // Like the real app: a runtime revived from the catalog registers a new receipt, so it
      // comes back under its new endpoint.
      if (rt.origin === "catalog") {
        rt.id = `lre_revived_${pid}`;
        rt.endpoint = rt.id;
        rt.origin = "both";
      }
    });
    return { id, message: `Started ${rt.name} (pid ${pid}).` };
  }

  /**
   * Like the core: refused when the agent's state changed since `revision` (the mock's states
   * change whole, so any other revision), or unless it offers `action` now. An accepted action
   * moves the agent on the way the demo runtime does: to `working`, with nothing offered.
   */
  async act(id: string, action: string, revision: number): Promise<ActOutcome> {
    this.calls.push({ action: "act", arg: id, agentAction: action, revision });
    await this.begin("act", id, false);
    const rt = this.runtime(id);
    if (rt.state && rt.state.revision !== revision) {
      throw { code: "refused", message: `The prompt of ${rt.name} changed since it was shown, so "${action}" did not run; look again.` };
    }
    const offered = rt.state?.actions.find((a) => a.id === action);
    if (!rt.state || !offered) throw { code: "refused", message: `${rt.name} does not offer "${action}" now.` };
    const state = rt.state;
    this.update(() => {
      state.value = "working";
      state.title = `${offered.label}: on it`;
      state.detail = null;
      state.since = new Date().toISOString();
      state.actions = [];
      state.revision = (state.revision ?? 0) + 1;
    });
    return { id, action, message: `${rt.name} accepted ${offered.label}` };
  }

  async approve(profile: string): Promise<PendingView> {
    await this.begin("approve", profile);
    const entry = this.state.pending.find((p) => p.profile === profile);
    if (!entry) throw { code: "notFound", message: "That registration request is gone." };
    this.update(() => {
      entry.state = "approving";
      entry.updatedAt = new Date().toISOString();
    });
    await delay(this.approvalMs);
    this.update(() => {
      entry.state = "approved";
      entry.message = "Approved in Canon. The runtime can now register.";
      entry.updatedAt = new Date().toISOString();
    });
    return clone(entry);
  }

  async reject(profile: string): Promise<void> {
    await this.begin("reject", profile);
    this.update((s) => {
      s.pending = s.pending.filter((p) => p.profile !== profile);
    });
  }

  async openLogs(): Promise<void> {
    await this.begin("openLogs");
  }

  /** Changes `agent`'s settings file as another program would (which changes its plan's digest). */
  agentFile(agent: string, change: (file: MockAgentFile) => void): void {
    const file = this.agentFiles.find((f) => f.agent === agent);
    if (!file) throw new Error(`no mock agent ${agent}`);
    change(file);
    file.version += 1;
  }

  private viewOf(f: MockAgentFile): CodingAgentView {
    const yes = { available: true, reason: null, applies: true };
    if (f.problem !== null) {
      const no = { available: false, reason: `${f.problem}; fix the file first`, applies: true };
      return { agent: f.agent, title: f.title, settings: f.settings, connection: "problem", summary: f.problem, trust: null, connect: no, disconnect: no };
    }
    const trust = f.connected && f.trusted === false
      ? `not trusted in ${f.title} yet (${(AGENT_EVENTS[f.agent] ?? []).join(", ")}), so ${f.title} does not run them: start ${f.title} and trust them when it says "Hooks need review"`
      : null;
    return f.connected
      ? { agent: f.agent, title: f.title, settings: f.settings, connection: "connected", summary: "connected", trust, connect: { available: false, reason: "already connected", applies: false }, disconnect: yes }
      : { agent: f.agent, title: f.title, settings: f.settings, connection: "notConnected", summary: "not connected", trust, connect: yes, disconnect: { available: false, reason: "not connected", applies: false } };
  }

  private hooksPlanOf(agent: string, change: HooksChange): HooksPlanView {
    const f = this.agentFiles.find((a) => a.agent === agent);
    if (!f) throw { code: "internal", message: `no coding agent is named "${agent}"` };
    if (f.problem !== null) throw { code: "refused", message: `refusing ${f.settings}: ${f.problem}; it was not changed` };
    const nothingToDo = change === "connect" ? f.connected : !f.connected;
    const entries = Object.fromEntries((AGENT_EVENTS[agent] ?? []).map((event) => [event, [{ hooks: [{ type: "command", command: `/usr/bin/supercode-tray-hook ${agent}`, timeout: 600 }] }]]));
    const preview = nothingToDo
      ? change === "connect" ? `${f.title} is already connected: ${f.settings} has every hook entry.` : `${f.title} is not connected: ${f.settings} has no hook entry of ours.`
      : `${change === "connect" ? "Adds to" : "Removes from"} "hooks" in ${f.settings}, per event:\n${JSON.stringify(entries, null, 2)}`;
    return {
      agent, title: f.title, change, settings: f.settings, preview,
      backup: nothingToDo ? null : `${f.settings}.supercode-backup`,
      nothingToDo, warning: null,
      digest: digestOf([agent, change, f.version, f.connected]),
    };
  }

  async codingAgents(): Promise<CodingAgentView[]> {
    await this.begin("codingAgents");
    return this.agentFiles.map((f) => this.viewOf(f));
  }

  async hooksPlan(agent: string, change: HooksChange): Promise<HooksPlanView> {
    this.calls.push({ action: "hooksPlan", arg: agent, change });
    await this.begin("hooksPlan", agent, false);
    return this.hooksPlanOf(agent, change);
  }

  /** Like the core: plans again and refuses (`planChanged`) when that is not the plan shown. */
  async hooksChange(agent: string, change: HooksChange, digest: string): Promise<HooksOutcome> {
    this.calls.push({ action: "hooksChange", arg: agent, change, planDigest: digest });
    await this.begin("hooksChange", agent, false);
    const plan = this.hooksPlanOf(agent, change);
    if (plan.digest !== digest) throw { code: "planChanged", message: `${plan.settings} changed since the change was shown, so nothing was written; review it again.` };
    const f = this.agentFiles.find((a) => a.agent === agent)!;
    if (!plan.nothingToDo) {
      f.connected = change === "connect";
      f.version += 1;
    }
    const kept = plan.backup ? ` The previous file is kept as ${plan.backup}.` : "";
    const message = change === "disconnect"
      ? `${f.title} is disconnected.${kept}`
      : f.trusted === false
        ? `${f.title}'s hooks are installed. ${f.title} runs them only once you trust them: start ${f.title}, choose to review the hooks when it says "Hooks need review", and trust the Supercode Tray entries.${kept}`
        : `${f.title} is connected: its sessions appear in the tray from their next hook event.${kept}`;
    return { agent, message };
  }

  async onSnapshot(cb: (s: Snapshot) => void): Promise<() => void> {
    this.listeners.add(cb);
    return () => {
      this.listeners.delete(cb);
    };
  }

  private readonly reviveRequests = new Set<(id: string) => void>();

  async onConfirmRevive(cb: (id: string) => void): Promise<() => void> {
    this.reviveRequests.add(cb);
    return () => {
      this.reviveRequests.delete(cb);
    };
  }

  private readonly actRequests = new Set<(request: ActRequest) => void>();

  async onConfirmAct(cb: (request: ActRequest) => void): Promise<() => void> {
    this.actRequests.add(cb);
    return () => {
      this.actRequests.delete(cb);
    };
  }

  /** What the tray menu's destructive agent actions do: ask the window to confirm `action` of `id`. */
  requestAct(id: string, action: string): void {
    for (const cb of this.actRequests) cb({ id, action });
  }

  /** What the tray menu's "Revive …" does: ask the window to confirm reviving `id`. */
  requestRevive(id: string): void {
    for (const cb of this.reviveRequests) cb(id);
  }
}

/** Creates a mock backend starting from `initial`. */
export function mockBackend(initial: Snapshot, options: MockOptions = {}): MockBackend {
  return new MockBackend(initial, options);
}
