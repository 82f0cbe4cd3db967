// Snapshots the mock backend starts from: a realistic mix for demos and
// screenshots, and the edge cases (first run, plaintext file store). Paths and
// names are made up; nothing here is or resembles a secret.
import type { AgentActionView, AgentState, AgentStateView, PendingView, RuntimeView, Snapshot, SnapshotCounts } from "./bindings";
import { AGENT_RULES } from "./bindings/agentRules";
import { PENDING_RULES } from "./bindings/pendingRules";

/** The scenarios `?mock=<name>` can pick. */
export type Scenario = "demo" | "empty" | "file-store";

const MINUTE = 60_000;

function ago(now: Date, ms: number): string {
  return new Date(now.getTime() - ms).toISOString();
}

/** An action that can run (the core's `ActionAvailability::yes`). */
export const yes = { available: true, reason: null, applies: true };
/** One that cannot run now, shown disabled with its reason (`ActionAvailability::no`). */
export const no = (reason: string) => ({ available: false, reason, applies: true });
/** One that can never apply to the runtime as it is (`ActionAvailability::never`): not shown. */
export const never = (reason: string) => ({ available: false, reason, applies: false });

/** A registration request, with what the core decides for its state (generated from Rust). */
export function pending(p: Omit<PendingView, "approve" | "dismiss" | "over">): PendingView {
  return { ...p, ...PENDING_RULES[p.state] };
}

/**
 * Brings a made-up snapshot in line with what the core would send: each registration's
 * availabilities follow its state (`PENDING_RULES`), the runtimes are in the core's order, and
 * the counts follow the lists, as `SnapshotCounts::of` counts them.
 */
export function settle(s: Snapshot): Snapshot {
  for (const p of s.pending) Object.assign(p, PENDING_RULES[p.state]);
  // The core's order (`agents::order`): running first, those that need you first among them, by
  // the generated urgency; a stable sort, so ties keep their order.
  const rank = (r: RuntimeView): [number, number] => [r.status === "running" ? 0 : 1, r.state === null ? 255 : AGENT_RULES[r.state.value].urgency];
  s.runtimes.sort((a, b) => {
    const [x, y] = [rank(a), rank(b)];
    return x[0] - y[0] || x[1] - y[1];
  });
  const counts: SnapshotCounts = {
    running: s.runtimes.filter((r) => r.status === "running").length,
    stale: s.runtimes.filter((r) => r.status === "stale").length,
    exited: s.runtimes.filter((r) => r.status === "exited").length,
    awaitingApproval: s.pending.filter((p) => !p.over).length,
    needsYou: s.runtimes.filter((r) => r.state !== null && AGENT_RULES[r.state.value].needsYou).length,
  };
  s.counts = counts;
  return s;
}

/** The actions an agent blocked on an approval offers, as the demo runtime's `approval` scenario does. */
export const APPROVAL_ACTIONS: AgentActionView[] = [
  { id: "approve", label: "Approve", destructive: false, confirm: null },
  { id: "deny", label: "Deny", destructive: true, confirm: "Deny running the test suite?" },
];

/**
 * An agent state as the core sends it: `unknown` carries nothing, `not-answering` no controller,
 * observers or revision; the others a title, a since, a controller, observers and the revision of
 * their document unless overridden.
 */
export function agentState(value: AgentState, over: Partial<AgentStateView> = {}): AgentStateView {
  if (value === "unknown") return { value, title: null, detail: null, since: null, actions: [], controller: null, observers: null, revision: null, ...over };
  const answering = value !== "not-answering";
  return {
    value,
    title: value === "not-answering" ? "The runtime does not answer" : `Agent is ${value}`,
    detail: null,
    since: null,
    actions: [],
    controller: answering ? { kind: "none", label: null } : null,
    observers: answering ? 0 : null,
    revision: answering ? 1 : null,
    ...over,
  };
}

/** A runtime with sensible defaults; override what a test cares about. */
export function runtime(over: Partial<RuntimeView> & { id: string }): RuntimeView {
  return {
    endpoint: null,
    runtimeId: over.id,
    catalogId: null,
    source: null,
    name: over.id,
    kind: "claude-code",
    workspace: null,
    workspaceRoots: [],
    profile: null,
    agentName: null,
    status: "running",
    statusReason: null,
    since: null,
    pid: null,
    attach: yes,
    forget: never("The runtime is running; only stale receipts can be forgotten."),
    revive: never("Already running."),
    dismiss: never("Only a runtime that has exited can be dismissed."),
    launchCommand: null,
    origin: "receipt",
    catalogStatus: null,
    reviveCapability: null,
    state: null,
    exited: null,
    ...over,
  };
}

/**
 * The snapshot of a machine with a few runtimes in every interesting state: live agents in each
 * agent state, in the order the core sorts them (needs you first), then the other statuses.
 */
export function demoSnapshot(now: Date = new Date()): Snapshot {
  return settle({
    runtimes: [
      runtime({
        id: "rt-demo-a",
        name: "demo-a",
        kind: "claude-code",
        workspace: "/home/dev/src/supercode-tray",
        profile: "dev",
        status: "running",
        since: ago(now, 12 * MINUTE),
        pid: 4242,
        origin: "both",
        state: agentState("needs-approval", {
          title: "Run the test suite?",
          detail: "cargo test --workspace",
          since: ago(now, 2 * MINUTE),
          actions: APPROVAL_ACTIONS.map((a) => ({ ...a })),
          controller: { kind: "terminal", label: "zsh in tmux" },
          observers: 2,
        }),
      }),
      runtime({
        id: "rt-triage",
        name: "issue-triage",
        kind: "codex",
        workspace: "/home/dev/src/website",
        since: ago(now, 40 * MINUTE),
        pid: 4310,
        state: agentState("needs-input", {
          title: "Tests pass. Anything else?",
          since: ago(now, 5 * MINUTE),
          controller: { kind: "ide", label: "VS Code" },
          observers: 1,
        }),
      }),
      runtime({
        id: "rt-flaky",
        name: "flaky-ci",
        kind: "sdk",
        workspace: "/home/dev/src/monorepo",
        since: ago(now, 90 * MINUTE),
        pid: 4377,
        state: agentState("error", {
          title: "The test runner crashed",
          detail: "thread 'main' panicked at src/runner.rs:42:9\nexit status: 101",
          since: ago(now, 9 * MINUTE),
          actions: [{ id: "retry", label: "Retry", destructive: false, confirm: null }],
          controller: { kind: "none", label: null },
          observers: 1,
        }),
      }),
      runtime({
        id: "rt-stuck",
        name: "stuck-agent",
        kind: "claude-code",
        workspace: "/home/dev/src/infra",
        since: ago(now, 3 * 60 * MINUTE),
        pid: 4402,
        state: agentState("not-answering", { since: ago(now, 14 * MINUTE) }),
      }),
      runtime({
        id: "rt-docs",
        name: "docs-writer",
        kind: "claude-code",
        workspace: "/home/dev/src/supercode-tray/docs",
        since: ago(now, 20 * MINUTE),
        pid: 4455,
        state: agentState("working", {
          title: "Writing docs/cli.md",
          since: ago(now, 1 * MINUTE),
          controller: { kind: "browser", label: null },
          observers: 1,
        }),
      }),
      runtime({
        id: "rt-fresh",
        name: "fresh-session",
        kind: "demo",
        since: ago(now, 3 * MINUTE),
        pid: 4500,
        state: agentState("idle", { title: "Waiting for work", since: ago(now, 3 * MINUTE), observers: 1 }),
      }),
      runtime({
        id: "rt-legacy",
        name: "legacy-agent",
        kind: "claude-code",
        workspace: "/home/dev/src/old-app",
        since: ago(now, 6 * 60 * MINUTE),
        pid: 3999,
        state: agentState("unknown"),
      }),
      runtime({
        id: "rt-review",
        name: "review-bot",
        kind: "codex",
        workspace: "/home/dev/src/clients/acme/services/canon-review-service",
        profile: "review",
        status: "stale",
        statusReason: "Process 3117 exited; its receipt was left behind.",
        since: ago(now, 3 * 60 * MINUTE),
        pid: 3117,
        attach: never("Not running: the process has exited."),
        forget: yes,
        revive: yes,
        launchCommand: ["canon-agent", "serve", "--profile", "review", "--workspace", "/home/dev/src/clients/acme/services/canon-review-service"],
        origin: "both",
      }),
      runtime({
        id: "rt-nightly",
        name: "nightly-refactor",
        kind: "opencode",
        workspace: "/home/dev/src/monorepo",
        profile: "nightly",
        status: "offline",
        statusReason: "Not started since the last reboot.",
        since: ago(now, 26 * 60 * MINUTE),
        attach: never("Not running."),
        forget: never("It stopped normally and can be started again; only a runtime whose process has gone without stopping can be forgotten."),
        revive: yes,
        launchCommand: ["opencode", "serve", "--profile", "nightly"],
        origin: "catalog",
        catalogStatus: "offline",
        reviveCapability: "revivable",
      }),
      runtime({
        id: "rt-ops",
        name: "ops-agent",
        kind: "opencode",
        workspace: "/home/dev/src/infra",
        profile: "ops",
        status: "offline",
        statusReason: null,
        since: ago(now, 5 * 60 * MINUTE),
        attach: never("Not running."),
        forget: never("It stopped normally and can be started again; only a runtime whose process has gone without stopping can be forgotten."),
        // Not now, but once that process ends: shown, disabled, with the reason.
        revive: no("Its profile ops is in use by PID 7311; stop that process, then revive."),
        launchCommand: ["opencode", "serve", "--profile", "ops"],
        origin: "catalog",
        catalogStatus: "offline",
        reviveCapability: "revivable",
      }),
      runtime({
        id: "rt-ide",
        name: "vscode-agent",
        kind: "vscode",
        workspace: "/home/dev/src/website",
        status: "embedded",
        statusReason: "Runs inside VS Code.",
        since: ago(now, 47 * MINUTE),
        pid: 5120,
        forget: never("Managed by VS Code."),
        revive: never("Managed by VS Code."),
      }),
      runtime({
        id: "rt-manual",
        name: "scratch",
        kind: "live-runtime",
        workspace: "/tmp/scratch",
        status: "manual",
        statusReason: "Started by hand; Supercode cannot relaunch it.",
        since: ago(now, 2 * MINUTE),
        pid: 6001,
        revive: never("Started by hand: no launch command is known."),
      }),
    ],
    ignored: [
      { location: "receipts", file: "broken-1733150000.json", reason: "Not valid JSON (line 1, column 17)." },
      { location: "canon", file: "runtimes/legacy.json", reason: "Unknown receipt version 9; update Supercode Tray." },
    ],
    warnings: [],
    pending: [
      pending({
        profile: "ci-runner",
        clientType: "claude-code",
        state: "waiting",
        createdAt: ago(now, 4 * MINUTE),
        updatedAt: ago(now, 4 * MINUTE),
        message: null,
      }),
      pending({
        profile: "old-laptop",
        clientType: "codex",
        state: "expired",
        createdAt: ago(now, 2 * 24 * 60 * MINUTE),
        updatedAt: ago(now, 2 * 24 * 60 * MINUTE - 10 * MINUTE),
        message: "The request expired after 10 minutes. Start the runtime again to request a new one.",
      }),
    ],
    secretStore: { kind: "keychain", description: "OS keychain (Secret Service)" },
    firstRun: false,
    receiptDir: "/home/dev/.local/share/supercode/receipts",
    canonHome: "/home/dev/.canon",
    counts: { running: 0, stale: 0, exited: 0, awaitingApproval: 0, needsYou: 0 },
  });
}

/** The first launch: nothing registered yet. */
export function emptySnapshot(): Snapshot {
  return settle({
    runtimes: [],
    ignored: [],
    warnings: [],
    pending: [],
    secretStore: { kind: "keychain", description: "OS keychain (Secret Service)" },
    firstRun: true,
    receiptDir: "/home/dev/.local/share/supercode/receipts",
    canonHome: "/home/dev/.canon",
    counts: { running: 0, stale: 0, exited: 0, awaitingApproval: 0, needsYou: 0 },
  });
}

/** The demo machine, but with secrets in the opt-in plaintext file store. */
export function fileStoreSnapshot(now: Date = new Date()): Snapshot {
  return {
    ...demoSnapshot(now),
    secretStore: { kind: "file", description: "Plaintext file ~/.config/supercode/secrets.json" },
  };
}

/** The snapshot for a `?mock=<name>` scenario; unknown names get the demo. */
export function scenario(name: string | null, now: Date = new Date()): Snapshot {
  switch (name) {
    case "empty":
      return emptySnapshot();
    case "file-store":
      return fileStoreSnapshot(now);
    default:
      return demoSnapshot(now);
  }
}
