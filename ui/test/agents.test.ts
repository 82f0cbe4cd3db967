// What a runtime's agent is doing, in the window (issue 15): every state's look, title, detail,
// since when and who is on it; the offered actions with progress, confirmation and errors; the
// header's needs-you count; requests from the tray menu; and hostile text rendered as text.
import { afterEach, describe, expect, it, vi } from "vitest";
import { ACT_REQUEST_WAIT_MS } from "../src/app";
import type { AgentState, RuntimeView, Snapshot } from "../src/bindings";
import { AGENT_RULES } from "../src/bindings/agentRules";
import { agentState, APPROVAL_ACTIONS, demoSnapshot, runtime } from "../src/fixtures";
import { byTestId, mount, NOW, row, shown, visible, type Mounted } from "./helpers";

let m: Mounted | undefined;
afterEach(() => {
  m?.app.destroy();
  m = undefined;
  window.history.replaceState(null, "", "/");
});

/** Every state, from the table generated from Rust, so a new state cannot be missed here. */
const STATES = Object.keys(AGENT_RULES) as AgentState[];

/** What the card's one time says in each state (issue 31: one labeled time, not two "since" lines). */
const TIME_LABELS: Record<AgentState, string> = {
  working: "working since 3 min ago",
  "needs-approval": "asked 3 min ago",
  "needs-input": "waiting since 3 min ago",
  idle: "idle since 3 min ago",
  error: "failed 3 min ago",
  "not-answering": "not answering since 3 min ago",
  // No state known: the runtime's own time.
  unknown: "started 1 h ago",
};

const WORDS: Record<AgentState, string | null> = {
  working: "Working",
  "needs-approval": "Needs approval",
  "needs-input": "Needs input",
  idle: "Idle",
  error: "Error",
  "not-answering": "Not answering",
  unknown: null,
};

function only(...runtimes: RuntimeView[]): Snapshot {
  return { ...demoSnapshot(NOW), runtimes, pending: [] };
}

function agentRuntime(value: AgentState): RuntimeView {
  return runtime({
    id: "a",
    name: "agent-a",
    since: new Date(NOW.getTime() - 60 * 60_000).toISOString(),
    state: agentState(value, value === "unknown" ? {} : { title: `Title of ${value}`, detail: "line one\nline two", since: new Date(NOW.getTime() - 3 * 60_000).toISOString() }),
  });
}

function agentButtons(r: HTMLElement): HTMLButtonElement[] {
  return [...r.querySelectorAll<HTMLButtonElement>('[data-testid="agent-action"]')];
}

function button(r: HTMLElement, action: string): HTMLButtonElement {
  const b = r.querySelector<HTMLButtonElement>(`[data-testid="agent-action"][data-action-id="${action}"]`);
  if (!b) throw new Error(`no ${action} button`);
  return b;
}

describe("every agent state", () => {
  it.each(STATES)("%s has its own look: icon and word, not only colour", async (value) => {
    m = await mount(only(agentRuntime(value)));
    const r = row(m.root, "a");
    const chip = byTestId(r, "agent-state");
    const word = WORDS[value];
    if (word === null) {
      // unknown: the runtime is shown as it always was, nothing about an agent.
      expect(visible(chip)).toBe(false);
      expect(visible(byTestId(r, "agent"))).toBe(false);
      expect(r.hasAttribute("data-agent-state")).toBe(false);
      expect(byTestId(r, "runtime-status").textContent).toBe("Running");
      expect(visible(byTestId(r, "runtime-status"))).toBe(true);
      expect(byTestId(r, "card-time").textContent).toBe(TIME_LABELS[value]);
      return;
    }
    // One status word: the agent's state, not "Running" beside it (issue 31).
    expect(visible(byTestId(r, "runtime-status"))).toBe(false);
    expect(visible(chip)).toBe(true);
    expect(chip.textContent).toBe(word);
    expect(chip.className).toContain(`state-${value}`);
    expect(chip.querySelector("svg path")?.getAttribute("d")).toBeTruthy();
    expect(byTestId(r, "agent-title").textContent).toBe(`Title of ${value}`);
    expect(byTestId(r, "agent-detail").textContent).toBe("line one\nline two");
    expect(byTestId(r, "agent-detail").tagName).toBe("PRE");
    // One time on the card, labeled; the runtime's start is in its tooltip.
    expect(r.querySelectorAll("time")).toHaveLength(1);
    expect(byTestId(r, "card-time").textContent).toBe(TIME_LABELS[value]);
    expect(byTestId(r, "card-time").getAttribute("title")).toContain("; started ");
    // The core's rule, not one of the window's own, says whether it needs you.
    expect(r.getAttribute("data-needs-you") === "true").toBe(AGENT_RULES[value].needsYou);
  });

  it("draws a different icon shape for each state that shows one", async () => {
    const shapes = new Set<string>();
    for (const value of STATES.filter((s) => WORDS[s] !== null)) {
      m?.app.destroy();
      m = await mount(only(agentRuntime(value)));
      shapes.add(byTestId(row(m.root, "a"), "agent-state").querySelector("svg path")!.getAttribute("d")!);
    }
    expect(shapes.size).toBe(STATES.filter((s) => WORDS[s] !== null).length);
  });

  it("follows a live change of state in place", async () => {
    m = await mount(only(agentRuntime("working")));
    const r = row(m.root, "a");
    m.mock.update((s) => {
      s.runtimes[0]!.state = agentState("needs-approval", { title: "Run it?", actions: APPROVAL_ACTIONS.map((a) => ({ ...a })) });
    });
    expect(row(m.root, "a")).toBe(r);
    expect(byTestId(r, "agent-state").textContent).toBe("Needs approval");
    expect(agentButtons(r).map((b) => b.textContent)).toEqual(["Approve", "Deny…"]);
    m.mock.update((s) => {
      s.runtimes[0]!.state = agentState("unknown");
    });
    expect(visible(byTestId(r, "agent-state"))).toBe(false);
    expect(agentButtons(r)).toHaveLength(0);
  });
});

describe("who is on an agent", () => {
  it("says who drives it and how many watch", async () => {
    m = await mount(demoSnapshot(NOW));
    expect(byTestId(row(m.root, "rt-demo-a"), "agent-people").textContent).toBe("driven from a terminal (zsh in tmux) · 2 watching");
    expect(byTestId(row(m.root, "rt-triage"), "agent-people").textContent).toBe("driven from an IDE (VS Code) · 1 watching");
    // Nobody driving: only the watchers; not answering: neither is known.
    expect(byTestId(row(m.root, "rt-flaky"), "agent-people").textContent).toBe("1 watching");
    expect(visible(byTestId(row(m.root, "rt-stuck"), "agent-people"))).toBe(false);
  });
});

describe("header", () => {
  it("counts the agents that need you, as the core counted them", async () => {
    m = await mount(demoSnapshot(NOW));
    const summary = m.root.querySelector(".summary")!;
    // Asking, waiting and failed: an agent in error cannot go on without you either (issue 31).
    expect(summary.textContent).toContain("3 need you");
    expect(row(m.root, "rt-flaky").getAttribute("data-needs-you")).toBe("true");
    m.mock.update((s) => {
      s.runtimes.find((r) => r.id === "rt-triage")!.state = agentState("working");
      s.runtimes.find((r) => r.id === "rt-flaky")!.state = agentState("working");
    });
    expect(summary.textContent).toContain("1 needs you");
    expect(row(m.root, "rt-flaky").hasAttribute("data-needs-you")).toBe(false);
    m.mock.update((s) => {
      s.runtimes.find((r) => r.id === "rt-demo-a")!.state = agentState("idle");
    });
    expect(summary.textContent).not.toContain("need");
  });
});

describe("agent actions", () => {
  it("one button per offered action, destructive ones styled apart", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = row(m.root, "rt-demo-a");
    const buttons = agentButtons(r);
    expect(buttons.map((b) => b.getAttribute("data-action-id"))).toEqual(["approve", "deny"]);
    expect(buttons[0]!.className).toContain("btn-primary");
    expect(buttons[1]!.className).toContain("btn-danger");
    expect(buttons.map((b) => b.getAttribute("aria-label"))).toEqual(["Approve demo-a", "Deny demo-a"]);
    expect(agentButtons(row(m.root, "rt-docs"))).toHaveLength(0);
  });

  it("a non-destructive action runs at once with progress, and the agent moves on", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = row(m.root, "rt-demo-a");
    const gate = m.mock.hold("act");
    button(r, "approve").click();
    const approve = button(r, "approve");
    expect(approve.getAttribute("aria-busy")).toBe("true");
    expect(approve.textContent).toBe("Approve…");
    expect(button(r, "deny").getAttribute("aria-disabled")).toBe("true");
    approve.click();
    gate.release();
    await vi.waitFor(() => expect(byTestId(r, "agent-state").textContent).toBe("Working"));
    expect(m.mock.calls.filter((c) => c.action === "act")).toEqual([{ action: "act", arg: "rt-demo-a", agentAction: "approve", revision: 1 }]);
    expect(agentButtons(r)).toHaveLength(0);
    expect(shown(r, "row-error")).toBe(false);
    // The pressed button went with the action, and the row may be re-sorted away: focus lands on
    // the list's heading, which no update moves (issue 31), not on <body> and not after the row.
    expect(document.activeElement).toBe(m.root.querySelector("#runtimes-title"));
  });

  it("a destructive action asks first with the runtime's question, starting on Cancel", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = row(m.root, "rt-demo-a");
    button(r, "deny").click();
    const panel = byTestId(r, "confirm-act");
    expect(byTestId(panel, "confirm-act-text").textContent).toBe("Deny running the test suite?");
    expect(panel.textContent).toContain("Deny on demo-a?");
    expect(document.activeElement).toBe(byTestId(panel, "confirm-cancel"));
    expect(byTestId(panel, "confirm-accept").className).toContain("btn-danger");
    byTestId(panel, "confirm-cancel").click();
    expect(shown(r, "confirm-act")).toBe(false);
    expect(document.activeElement).toBe(button(r, "deny"));
    expect(m.mock.calls.some((c) => c.action === "act")).toBe(false);

    button(r, "deny").click();
    byTestId(byTestId(r, "confirm-act"), "confirm-accept").click();
    await vi.waitFor(() => expect(m!.mock.calls.filter((c) => c.action === "act")).toEqual([{ action: "act", arg: "rt-demo-a", agentAction: "deny", revision: 1 }]));
  });

  it("whether to ask is the core's: its question is asked, and no question means no asking", async () => {
    const question = "\"Abort\" discards the agent's work or refuses what it asked, and cannot be undone. Go ahead?";
    m = await mount(only(runtime({ id: "a", name: "agent-a", state: agentState("error", { actions: [
      { id: "abort", label: "Abort", destructive: true, confirm: question },
      { id: "skip", label: "Skip", destructive: true, confirm: null },
    ] }) })));
    const r = row(m.root, "a");
    button(r, "abort").click();
    expect(byTestId(byTestId(r, "confirm-act"), "confirm-act-text").textContent).toBe(question);
    byTestId(byTestId(r, "confirm-act"), "confirm-cancel").click();
    expect(m.mock.calls.some((c) => c.action === "act")).toBe(false);
    // The core said not to ask (whatever `destructive` says): it runs at once.
    button(r, "skip").click();
    await vi.waitFor(() => expect(m!.mock.calls.filter((c) => c.action === "act")).toEqual([{ action: "act", arg: "a", agentAction: "skip", revision: 1 }]));
  });

  it("issue 29: a confirmation acts on the prompt it showed; a changed prompt is refused and shown", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = row(m.root, "rt-demo-a");
    button(r, "deny").click();
    expect(byTestId(byTestId(r, "confirm-act"), "confirm-act-text").textContent).toBe("Deny running the test suite?");
    // The runtime moves on to another prompt under the open confirmation.
    m.mock.update((s) => {
      const state = s.runtimes.find((rt) => rt.id === "rt-demo-a")!.state!;
      state.title = "Drop the production database?";
      state.actions = [{ id: "deny", label: "Deny", destructive: true, confirm: "Drop the production database?" }];
      state.revision = 2;
    });
    await vi.waitFor(() => expect(byTestId(r, "agent-title").textContent).toBe("Drop the production database?"));
    // The confirmation still says what confirming acts on: the question it was opened with.
    expect(byTestId(byTestId(r, "confirm-act"), "confirm-act-text").textContent).toBe("Deny running the test suite?");
    byTestId(byTestId(r, "confirm-act"), "confirm-accept").click();
    await vi.waitFor(() => expect(shown(r, "row-error")).toBe(true));
    expect(m.mock.calls.filter((c) => c.action === "act")).toEqual([{ action: "act", arg: "rt-demo-a", agentAction: "deny", revision: 1 }]);
    expect(byTestId(r, "row-error").textContent).toContain("look again");
    // The new prompt is what the row offers now, asked with its own question.
    button(r, "deny").click();
    expect(byTestId(byTestId(r, "confirm-act"), "confirm-act-text").textContent).toBe("Drop the production database?");
  });

  it("a non-destructive action with a question asks it too", async () => {
    m = await mount(only(runtime({ id: "a", name: "agent-a", state: agentState("error", { actions: [{ id: "retry", label: "Retry", destructive: false, confirm: "Start the run over?" }] }) })));
    const r = row(m.root, "a");
    button(r, "retry").click();
    const panel = byTestId(r, "confirm-act");
    expect(byTestId(panel, "confirm-act-text").textContent).toBe("Start the run over?");
    expect(byTestId(panel, "confirm-accept").className).toContain("btn-primary");
    expect(m.mock.calls.some((c) => c.action === "act")).toBe(false);
  });

  it("Confirm waits with the reason when the agent stops offering the action while asking", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = row(m.root, "rt-demo-a");
    button(r, "deny").click();
    m.mock.update((s) => {
      s.runtimes[0]!.state = agentState("working", { title: "Approved in the terminal" });
    });
    const panel = byTestId(r, "confirm-act");
    expect(panel.textContent).toContain("Deny is no longer offered");
    expect(byTestId(panel, "confirm-accept").getAttribute("aria-disabled")).toBe("true");
    byTestId(panel, "confirm-accept").click();
    expect(m.mock.calls.some((c) => c.action === "act")).toBe(false);
  });

  it("shows a refusal inline on the row, with the core's message", async () => {
    m = await mount(demoSnapshot(NOW));
    const r = row(m.root, "rt-demo-a");
    m.mock.failNext("act", { code: "refused", message: "demo-a no longer offers Approve: the prompt changed." });
    button(r, "approve").click();
    await vi.waitFor(() => expect(shown(r, "row-error")).toBe(true));
    expect(byTestId(r, "row-error").textContent).toContain("demo-a no longer offers Approve: the prompt changed.");
    expect(button(r, "approve").hasAttribute("aria-busy")).toBe(false);
  });
});

describe("agent actions asked for by the tray menu", () => {
  it("open that runtime's confirmation without running anything", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.requestAct("rt-demo-a", "deny");
    const panel = await vi.waitFor(() => byTestId(row(m!.root, "rt-demo-a"), "confirm-act"));
    expect(visible(panel)).toBe(true);
    expect(byTestId(panel, "confirm-act-text").textContent).toBe("Deny running the test suite?");
    expect(m.mock.calls.some((c) => c.action === "act")).toBe(false);
  });

  it("explain instead of opening anything when the action is no longer offered", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.requestAct("rt-docs", "deny");
    const banner = await vi.waitFor(() => byTestId(m!.root, "app-error"), { timeout: ACT_REQUEST_WAIT_MS + 2_000 });
    expect(banner.textContent).toContain("no longer offered");
    expect(m.root.querySelector('[data-testid="confirm-act"]')).toBeNull();
  });

  // A notification goes out as the core sees the state; the window's list follows with the next
  // snapshot. Its Deny… asked for before that snapshot opens the confirmation once it comes.
  it("open the confirmation asked for before the list shows the request, once it does", async () => {
    m = await mount(demoSnapshot(NOW));
    const release = m.mock.holdEvents();
    m.mock.update((s) => {
      const docs = s.runtimes.find((r) => r.id === "rt-docs")!;
      docs.state = agentState("needs-approval", { title: "Run the test suite?", actions: [...APPROVAL_ACTIONS] });
    });
    m.mock.requestAct("rt-docs", "deny");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(m.root.querySelector('[data-testid="confirm-act"]:not([hidden])')).toBeNull();
    release();
    const panel = await vi.waitFor(() => byTestId(row(m!.root, "rt-docs"), "confirm-act"));
    expect(visible(panel)).toBe(true);
    expect(m.root.querySelector('[data-testid="app-error"]:not([hidden])')).toBeNull();
    expect(m.mock.calls.some((c) => c.action === "act")).toBe(false);
  });

  it("open the confirmation when the tray menu creates the window with it in the query", async () => {
    window.history.replaceState(null, "", "/?confirmAct=rt-demo-a&action=deny");
    m = await mount(demoSnapshot(NOW));
    expect(visible(byTestId(row(m.root, "rt-demo-a"), "confirm-act"))).toBe(true);
  });
});

describe("hostile agent text", () => {
  it("renders HTML and control characters in the title, detail and labels as text", async () => {
    const html = '<img src=x onerror="window.__pwned=1"><b>bold</b><script>window.__pwned=2</script>';
    m = await mount(
      only(
        runtime({
          id: "evil",
          name: "evil",
          state: agentState("needs-approval", {
            title: `${html}\u0007\u001b[31m`,
            detail: `${html}\nrm -rf ~`,
            controller: { kind: "terminal", label: "<i>tty</i>" },
            actions: [{ id: "approve", label: "<u>Approve</u>", destructive: true, confirm: "<a href='https://evil.example'>sure?</a>" }],
          }),
        }),
      ),
    );
    const r = row(m.root, "evil");
    expect(r.querySelector("img, b, script, i, u, a")).toBeNull();
    expect(byTestId(r, "agent-title").textContent).toBe(`${html}\u0007\u001b[31m`);
    expect(byTestId(r, "agent-detail").textContent).toBe(`${html}\nrm -rf ~`);
    expect(byTestId(r, "agent-people").textContent).toContain("<i>tty</i>");
    button(r, "approve").click();
    expect(byTestId(r, "confirm-act").textContent).toContain("<a href='https://evil.example'>sure?</a>");
    expect(r.querySelector("img, b, script, i, u, a")).toBeNull();
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });
});
