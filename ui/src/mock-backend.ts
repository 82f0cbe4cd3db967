// An in-memory `Backend` for browser and unit tests. It behaves like the app
// (forget removes the receipt, revive starts the runtime, approve passes through
// "approving") and is scriptable: make the next call of an action fail, or hold
// it until the test releases it, and read back every call made.
import type { Backend } from "./backend";
import type { CommandError, PendingView, ReviveOutcome, RuntimeView, Snapshot } from "./bindings";

/** The backend calls a test can fail, hold or inspect. */
export type MockAction = "snapshot" | "attach" | "forget" | "revive" | "approve" | "reject" | "openLogs";

/** One recorded call: the action and its argument (runtime id or profile), if any. */
export type MockCall = { action: MockAction, arg: string | null };

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
}

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
  private readonly listeners = new Set<(s: Snapshot) => void>();
  private readonly failures = new Map<MockAction, CommandError>();
  private readonly holds = new Map<MockAction, Gate & { wait: Promise<void> }>();
  private readonly latencyMs: number;
  private readonly approvalMs: number;

  constructor(initial: Snapshot, options: MockOptions = {}) {
    this.state = clone(initial);
    this.latencyMs = options.latencyMs ?? 0;
    this.approvalMs = options.approvalMs ?? 0;
  }

  /** The mock's current snapshot (a copy). */
  current(): Snapshot {
    return clone(this.state);
  }

  /** Replaces the snapshot and pushes it to subscribers, like the app's watcher does. */
  setSnapshot(next: Snapshot): void {
    this.state = clone(next);
    this.emit();
  }

  /** Changes the snapshot in place and pushes it to subscribers. */
  update(change: (s: Snapshot) => void): void {
    change(this.state);
    this.emit();
  }

  /** Pushes the current snapshot to subscribers. */
  emit(): void {
    for (const cb of this.listeners) cb(clone(this.state));
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

  private async begin(action: MockAction, arg: string | null = null): Promise<void> {
    this.calls.push({ action, arg });
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

  async snapshot(): Promise<Snapshot> {
    await this.begin("snapshot");
    return clone(this.state);
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

  async revive(id: string): Promise<ReviveOutcome> {
    await this.begin("revive", id);
    const rt = this.runtime(id);
    if (!rt.revive.available) throw { code: "refused", message: rt.revive.reason ?? "Revive is not available." };
    const pid = 40000 + this.calls.length;
    this.update(() => {
      rt.status = "running";
      rt.statusReason = null;
      rt.since = new Date().toISOString();
      rt.pid = pid;
      rt.attach = { available: true, reason: null };
      rt.forget = { available: false, reason: "The runtime is running; only stale receipts can be forgotten." };
      rt.revive = { available: false, reason: "Already running." };
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

  /** What the tray menu's "Revive …" does: ask the window to confirm reviving `id`. */
  requestRevive(id: string): void {
    for (const cb of this.reviveRequests) cb(id);
  }
}

/** Creates a mock backend starting from `initial`. */
export function mockBackend(initial: Snapshot, options: MockOptions = {}): MockBackend {
  return new MockBackend(initial, options);
}
