import { describe, expect, it } from "vitest";
import { cardTime, peopleText, pendingLabel, relativeTime, shortenPath, statusLabel, statusTone, visible } from "../src/format";
import { agentState, runtime } from "../src/fixtures";
import type { RuntimeStatus } from "../src/bindings";

const now = new Date("2026-12-02T12:00:00Z");
const before = (ms: number) => new Date(now.getTime() - ms);

describe("relativeTime", () => {
  it("reads coarse, human units at each boundary", () => {
    expect(relativeTime(before(10_000), now)).toBe("just now");
    expect(relativeTime(before(50_000), now)).toBe("1 min ago");
    expect(relativeTime(before(12 * 60_000), now)).toBe("12 min ago");
    expect(relativeTime(before(59.9 * 60_000), now)).toBe("1 h ago");
    expect(relativeTime(before(3 * 3_600_000), now)).toBe("3 h ago");
    expect(relativeTime(before(26 * 3_600_000), now)).toBe("yesterday");
    expect(relativeTime(before(4 * 86_400_000), now)).toBe("4 days ago");
    expect(relativeTime(before(40 * 86_400_000), now)).toMatch(/^on /);
  });

  it("treats a timestamp slightly in the future (clock skew) as just now", () => {
    expect(relativeTime(new Date(now.getTime() + 5_000), now)).toBe("just now");
  });
});

describe("shortenPath", () => {
  it("replaces the home directory with ~ on Linux, macOS and Windows", () => {
    expect(shortenPath("/home/dev/src/app")).toBe("~/src/app");
    expect(shortenPath("/Users/ana/code")).toBe("~/code");
    expect(shortenPath("C:\\Users\\ana\\code")).toBe("~\\code");
  });

  it("keeps the last two segments of a long path", () => {
    expect(shortenPath("/home/dev/src/clients/acme/services/canon-review")).toBe("…/services/canon-review");
  });

  it("leaves a short path outside home untouched", () => {
    expect(shortenPath("/tmp/scratch")).toBe("/tmp/scratch");
  });

  it("never returns more than the limit, even for one huge segment", () => {
    const out = shortenPath(`/srv/${"x".repeat(80)}`, 30);
    expect(out.length).toBeLessThanOrEqual(30);
    expect(out.startsWith("…")).toBe(true);
  });
});

describe("labels", () => {
  it("labels unknown enum values neutrally instead of echoing them", () => {
    const odd = "toString" as RuntimeStatus;
    expect(statusLabel(odd)).toBe("Unknown");
    expect(statusTone(odd)).toBe("unknown");
    expect(statusLabel("stale")).toBe("Stale");
    expect(pendingLabel("waiting")).toBe("Waiting");
  });
});

// Issue 31: one labeled time per card, and watchers other than the tray.
describe("cardTime", () => {
  const at = (ms: number) => before(ms).toISOString();
  it("is the agent's state time, labeled by state, with the runtime's start beside it", () => {
    const t = cardTime(runtime({ id: "a", since: at(3_600_000), state: agentState("needs-approval", { since: at(120_000) }) }))!;
    expect([t.label, t.at.toISOString(), t.also?.label]).toEqual(["asked", at(120_000), "started"]);
    expect(cardTime(runtime({ id: "a", state: agentState("error", { since: at(1) }) }))?.label).toBe("failed");
  });

  it("is the runtime's own time without a known state: started for a receipt, last seen for a catalog entry", () => {
    expect(cardTime(runtime({ id: "a", since: at(60_000), state: agentState("unknown") }))).toMatchObject({ label: "started", also: null });
    expect(cardTime(runtime({ id: "a", since: at(60_000), status: "offline", origin: "catalog" }))?.label).toBe("last seen");
    expect(cardTime(runtime({ id: "a", since: null }))).toBeNull();
  });
});

describe("peopleText", () => {
  it("says nothing of watchers when nobody but the tray watches (the core counts it out)", () => {
    expect(peopleText(agentState("working", { observers: 0 }))).toBe("");
    expect(peopleText(agentState("working", { observers: 3, controller: { kind: "terminal", label: null } }))).toBe("driven from a terminal · 3 watching");
  });
});

describe("visible", () => {
  it("writes what would act rather than show as the CLI does, and leaves the rest alone", () => {
    expect(visible("plain /usr/bin/canon-agent \u00e9\u4e2d")).toBe("plain /usr/bin/canon-agent \u00e9\u4e2d");
    expect(visible("a\u202eb\u2066c\u200fd")).toBe("a\\u{202e}b\\u{2066}c\\u{200f}d");
    expect(visible("x\u001b[31m\ny\r\u0085\u2028")).toBe("x\\u{1b}[31m\\u{a}y\\u{d}\\u{85}\\u{2028}");
    expect(visible("\u{1f600}")).toBe("\u{1f600}");
  });
});
