// Pure text formatting for the window: relative times, shortened paths and
// the labels of statuses and states. Unknown enum values get a neutral label
// instead of being echoed, so nothing unexpected from the wire is rendered.
import type { AgentState, AgentStateView, ControllerView, PendingState, RuntimeStatus, RuntimeView } from "./bindings";
import { HIDDEN_CONTROLS } from "./bindings/textRules";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * `text` with every character that would act rather than show (controls, line separators,
 * bidirectional overrides: the core's `text::HIDDEN_CONTROLS`) written as a visible `\u{..}`
 * escape, as the CLI prints it: what a confirmation shows is what runs, in the order it runs
 * (a right-to-left override would show `evil.sh` as something else).
 */
export function visible(text: string): string {
  let out = "";
  for (const c of text) {
    const point = c.codePointAt(0) ?? 0;
    const hidden = HIDDEN_CONTROLS.some(([first, last]) => point >= first && point <= last);
    out += hidden ? `\\u{${point.toString(16)}}` : c;
  }
  return out;
}

/** Parses an ISO 8601 timestamp; `null` for missing or unparsable input. */
export function parseTime(iso: string | null): Date | null {
  if (iso === null) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : new Date(t);
}

/**
 * "just now", "5 min ago", "3 h ago", "yesterday", "4 days ago", then a date.
 * A time slightly in the future (clock skew between processes) reads "just now".
 */
export function relativeTime(then: Date, now: Date): string {
  const diff = now.getTime() - then.getTime();
  if (diff < 45 * SECOND) return "just now";
  if (diff < HOUR) {
    const m = Math.max(1, Math.round(diff / MINUTE));
    return m >= 60 ? "1 h ago" : `${m} min ago`;
  }
  if (diff < DAY) {
    const h = Math.round(diff / HOUR);
    return h >= 24 ? "yesterday" : `${h} h ago`;
  }
  const days = Math.floor(diff / DAY);
  if (days === 1) return "yesterday";
  if (days < 7) return `${days} days ago`;
  return `on ${then.toLocaleDateString(undefined, { month: "short", day: "numeric", year: then.getFullYear() === now.getFullYear() ? undefined : "numeric" })}`;
}

/** The full local date and time, for tooltips. */
export function fullTime(then: Date): string {
  return then.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

const HOME_PREFIX = /^(\/home\/[^/]+|\/Users\/[^/]+|[A-Za-z]:\\Users\\[^\\]+)(?=[/\\]|$)/;

/**
 * Shortens a workspace path for a narrow row: the home directory becomes `~`,
 * and a long path keeps its last two segments after an ellipsis.
 */
export function shortenPath(path: string, max = 30): string {
  const home = path.replace(HOME_PREFIX, "~");
  if (home.length <= max) return home;
  const sep = home.includes("\\") && !home.includes("/") ? "\\" : "/";
  const parts = home.split(sep).filter((p) => p !== "");
  const tail = parts.slice(-2).join(sep);
  const short = `…${sep}${tail}`;
  if (short.length <= max) return short;
  const last = parts[parts.length - 1] ?? home;
  return last.length + 2 <= max ? `…${sep}${last}` : `…${last.slice(-(max - 1))}`;
}

const STATUS_LABELS: Record<RuntimeStatus, string> = {
  running: "Running",
  stale: "Stale",
  offline: "Offline",
  manual: "Manual",
  embedded: "Embedded",
  exited: "Exited",
};

/** The badge text of a runtime status. */
export function statusLabel(status: RuntimeStatus): string {
  return Object.hasOwn(STATUS_LABELS, status) ? STATUS_LABELS[status] : "Unknown";
}

/** The CSS modifier of a status badge; unknown statuses look neutral. */
export function statusTone(status: RuntimeStatus): RuntimeStatus | "unknown" {
  return Object.hasOwn(STATUS_LABELS, status) ? status : "unknown";
}

const PENDING_LABELS: Record<PendingState, string> = {
  unsubmitted: "Not sent",
  waiting: "Waiting",
  approving: "Approving",
  approved: "Approved",
  rejected: "Rejected",
  expired: "Expired",
  error: "Failed",
};

/** The badge text of a registration state. */
export function pendingLabel(state: PendingState): string {
  return Object.hasOwn(PENDING_LABELS, state) ? PENDING_LABELS[state] : "Unknown";
}

/** The CSS modifier of a registration badge; unknown states look neutral. */
export function pendingTone(state: PendingState): PendingState | "unknown" {
  return Object.hasOwn(PENDING_LABELS, state) ? state : "unknown";
}

const AGENT_LABELS: Record<AgentState, string | null> = {
  working: "Working",
  "needs-approval": "Needs approval",
  "needs-input": "Needs input",
  idle: "Idle",
  error: "Error",
  "not-answering": "Not answering",
  // The runtime does not serve the status API: it is shown as it always was.
  unknown: null,
};

/** The word of an agent state; `null` for `unknown` (and anything unexpected), which shows nothing. */
export function agentLabel(state: AgentState): string | null {
  return Object.hasOwn(AGENT_LABELS, state) ? AGENT_LABELS[state] : null;
}

const CONTROLLER_KINDS: Record<string, string> = {
  terminal: "a terminal",
  ide: "an IDE",
  browser: "a browser",
};

/** "driven from a terminal (zsh in tmux)"; `null` when nobody drives it or the runtime cannot tell. */
export function controllerText(controller: ControllerView | null): string | null {
  if (controller === null || !Object.hasOwn(CONTROLLER_KINDS, controller.kind)) return null;
  const kind = CONTROLLER_KINDS[controller.kind]!;
  return controller.label ? `driven from ${kind} (${controller.label})` : `driven from ${kind}`;
}

/**
 * Who is on an agent: "driven from a terminal · 2 watching"; empty when the runtime said nothing.
 * `observers` counts clients other than this tray (the core takes the tray's own stream out), so
 * nobody else watching says nothing rather than "0 watching".
 */
export function peopleText(state: AgentStateView): string {
  const parts: string[] = [];
  const driver = controllerText(state.controller);
  if (driver !== null) parts.push(driver);
  if (state.observers !== null && state.observers > 0) parts.push(`${state.observers} watching`);
  return parts.join(" · ");
}

/** What the one time on an agent's card is the time of, by state ("asked 2 min ago"). */
const STATE_TIME_LABELS: Record<Exclude<AgentState, "unknown">, string> = {
  working: "working since",
  "needs-approval": "asked",
  "needs-input": "waiting since",
  idle: "idle since",
  error: "failed",
  "not-answering": "not answering since",
};

/** The one time a runtime's card shows, with what it is the time of. */
export interface CardTime {
  /** "asked", "started", "last seen"... */
  label: string;
  at: Date;
  /** The other time the card knows (when the runtime started), for its tooltip. */
  also: { label: string; at: Date } | null;
}

/**
 * The one labeled time of a runtime's card (issue 31: two unlabeled "since" lines). A running
 * agent whose state is known: when it entered that state. Otherwise the runtime's own time: when
 * it started (a receipt's registration), or when the catalog last heard of it (its heartbeat,
 * start or stop, whichever it recorded last).
 */
export function cardTime(rt: RuntimeView): CardTime | null {
  const own = parseTime(rt.since);
  const ownLabel = rt.origin === "catalog" ? "last seen" : rt.origin === "exited" ? "exited" : "started";
  const state = rt.state;
  const stateAt = state === null ? null : parseTime(state.since);
  if (state !== null && stateAt !== null && Object.hasOwn(STATE_TIME_LABELS, state.value)) {
    const label = STATE_TIME_LABELS[state.value as Exclude<AgentState, "unknown">];
    return { label, at: stateAt, also: own === null ? null : { label: ownLabel, at: own } };
  }
  return own === null ? null : { label: ownLabel, at: own, also: null };
}
