// Shared set-up for the jsdom tests: a fixed clock, a mounted window over a
// mock backend, and small queries by data-testid.
import { mountApp, type MountedApp } from "../src/app";
import type { Snapshot } from "../src/bindings";
import { mockBackend, type MockBackend } from "../src/mock-backend";

/** The instant every test runs at. */
export const NOW = new Date("2026-12-02T12:00:00Z");

export interface Mounted {
  root: HTMLElement;
  mock: MockBackend;
  app: MountedApp;
}

/** Mounts the window over a mock backend starting at `snapshot`, after its first render. */
export async function mount(snapshot: Snapshot): Promise<Mounted> {
  const mock = mockBackend(snapshot);
  const { root, app } = mountOver(mock);
  await app.ready;
  return { root, mock, app };
}

/**
 * Mounts the window over `mock` in an emptied document, without waiting for its first load:
 * for tests that script that load (hold it, fail it) or the clock (`now`).
 */
export function mountOver(mock: MockBackend, now: () => Date = () => NOW): Omit<Mounted, "mock"> {
  document.body.replaceChildren();
  const root = document.createElement("div");
  document.body.append(root);
  return { root, app: mountApp(root, mock, { now }) };
}

/** The row of runtime `id`; fails the test when it is missing. */
export function row(root: ParentNode, id: string): HTMLElement {
  const el = root.querySelector<HTMLElement>(`[data-testid="runtime-row"][data-runtime-id="${id}"]`);
  if (!el) throw new Error(`no row for ${id}`);
  return el;
}

/** The pending row of `profile`; fails the test when it is missing. */
export function pendingRow(root: ParentNode, profile: string): HTMLElement {
  const el = root.querySelector<HTMLElement>(`[data-testid="pending-row"][data-profile="${profile}"]`);
  if (!el) throw new Error(`no pending row for ${profile}`);
  return el;
}

/** The single element with `testId` inside `scope`; fails when missing. */
export function byTestId<T extends HTMLElement = HTMLElement>(scope: ParentNode, testId: string): T {
  const el = scope.querySelector<T>(`[data-testid="${testId}"]`);
  if (!el) throw new Error(`no [data-testid="${testId}"]`);
  return el;
}

/** True when `el` is in the document and neither it nor an ancestor is hidden. */
export function visible(el: HTMLElement): boolean {
  if (!el.isConnected) return false;
  for (let e: HTMLElement | null = el; e; e = e.parentElement) if (e.hidden) return false;
  return true;
}

/** Presses a key on the focused element. */
export function press(key: string): void {
  const target = document.activeElement ?? document.body;
  target.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true }));
}

/** True when an element with `testId` is present in `scope` and visible. */
export function shown(scope: ParentNode, testId: string): boolean {
  const el = scope.querySelector<HTMLElement>(`[data-testid="${testId}"]`);
  return el !== null && visible(el);
}
