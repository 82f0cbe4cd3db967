// The "Coding agents" section (issue 32 item 1): Connect shows the core's preview and makes
// exactly that change (its digest); a file changed since the preview is shown again, never
// written; a refused file says why.
import { afterEach, describe, expect, it, vi } from "vitest";
import { demoSnapshot } from "../src/fixtures";
import { byTestId, mount, NOW, visible, type Mounted } from "./helpers";

let m: Mounted | undefined;
afterEach(() => {
  m?.app.destroy();
});

function agentRow(root: ParentNode, agent: string): HTMLElement {
  const el = root.querySelector<HTMLElement>(`[data-testid="agent-row"][data-agent="${agent}"]`);
  if (!el) throw new Error(`no agent row for ${agent}`);
  return el;
}

describe("coding agents", () => {
  it("lists Claude Code and Codex with their state, and Connect but no Disconnect when not connected", async () => {
    m = await mount(demoSnapshot(NOW));
    const claude = agentRow(m.root, "claude-code");
    expect(byTestId(claude, "agent-connection").textContent).toBe("Not connected");
    expect(visible(byTestId(claude, "agent-connect"))).toBe(true);
    expect(visible(byTestId(claude, "agent-disconnect"))).toBe(false);
    // The settings file as a workspace is shown: the home directory as `~`, the whole path on hover.
    const codexFile = agentRow(m.root, "codex").querySelector(".row-meta .path");
    expect(codexFile?.textContent).toBe("~/.codex/hooks.json");
    expect(codexFile?.getAttribute("title")).toBe("/home/user/.codex/hooks.json");
  });

  it("Connect shows the preview, file and backup, and confirming sends the preview's digest", async () => {
    m = await mount(demoSnapshot(NOW));
    const claude = agentRow(m.root, "claude-code");
    byTestId(claude, "agent-connect").click();
    const panel = await vi.waitFor(() => {
      const p = byTestId(claude, "confirm-hooks");
      expect(byTestId(p, "hooks-preview").textContent).toContain("supercode-tray-hook claude-code");
      return p;
    });
    expect(byTestId(panel, "hooks-preview").textContent).toContain('Adds to "hooks" in /home/user/.claude/settings.json');
    expect(byTestId(panel, "hooks-backup").textContent).toContain("/home/user/.claude/settings.json.supercode-backup");
    // Nothing is written before the user confirms.
    expect(m.mock.calls.filter((c) => c.action === "hooksChange")).toEqual([]);
    const shownPlan = m.mock.calls.find((c) => c.action === "hooksPlan");
    expect(shownPlan).toMatchObject({ arg: "claude-code", change: "connect" });
    byTestId(panel, "confirm-accept").click();
    await vi.waitFor(() => expect(byTestId(claude, "agent-connection").textContent).toBe("Connected"));
    const made = m.mock.calls.filter((c) => c.action === "hooksChange");
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ arg: "claude-code", change: "connect" });
    expect(made[0]!.planDigest).toMatch(/^[0-9a-f]{8}$/);
    expect(byTestId(claude, "agent-notice").textContent).toContain("Claude Code is connected");
    expect(visible(byTestId(claude, "agent-connect"))).toBe(false);
    expect(visible(byTestId(claude, "agent-disconnect"))).toBe(true);

    // Disconnect previews what it removes, then removes it.
    byTestId(claude, "agent-disconnect").click();
    await vi.waitFor(() => expect(byTestId(claude, "hooks-preview").textContent).toContain('Removes from "hooks"'));
    expect(byTestId(claude, "confirm-accept").textContent).toBe("Disconnect");
    byTestId(claude, "confirm-accept").click();
    await vi.waitFor(() => expect(byTestId(claude, "agent-connection").textContent).toBe("Not connected"));
    expect(m.mock.calls.filter((c) => c.action === "hooksChange").at(-1)).toMatchObject({ change: "disconnect" });
  });

  it("a file changed since the preview is not written: the new preview is shown and asked again", async () => {
    m = await mount(demoSnapshot(NOW));
    const mock = m.mock;
    const claude = agentRow(m.root, "claude-code");
    byTestId(claude, "agent-connect").click();
    await vi.waitFor(() => expect(byTestId(claude, "hooks-preview").textContent).toContain("Adds to"));
    mock.agentFile("claude-code", () => undefined);
    byTestId(claude, "confirm-accept").click();
    await vi.waitFor(() => expect(byTestId(claude, "hooks-plan-status").textContent).toContain("changed since the change was shown"));
    expect(byTestId(claude, "agent-connection").textContent).toBe("Not connected");
    expect(visible(byTestId(claude, "confirm-hooks"))).toBe(true);
    const digests = mock.calls.filter((c) => c.action === "hooksChange").map((c) => c.planDigest);
    byTestId(claude, "confirm-accept").click();
    await vi.waitFor(() => expect(byTestId(claude, "agent-connection").textContent).toBe("Connected"));
    const again = mock.calls.filter((c) => c.action === "hooksChange").map((c) => c.planDigest);
    expect(again).toHaveLength(2);
    expect(again[1]).not.toBe(digests[0]);
  });

  it("a refused settings file says why and offers no change", async () => {
    m = await mount(demoSnapshot(NOW));
    m.mock.agentFile("codex", (f) => {
      f.problem = "it is a symbolic link";
    });
    const root = m.root;
    Object.defineProperty(document, "visibilityState", { value: "visible", configurable: true });
    document.dispatchEvent(new Event("visibilitychange"));
    const codex = agentRow(root, "codex");
    await vi.waitFor(() => expect(byTestId(codex, "agent-connection").textContent).toBe("Problem"));
    expect(byTestId(codex, "agent-summary").textContent).toBe("it is a symbolic link");
    const connect = byTestId(codex, "agent-connect");
    expect(connect.getAttribute("aria-disabled")).toBe("true");
    connect.click();
    expect(m.mock.calls.filter((c) => c.action === "hooksPlan")).toEqual([]);
  });

  it("Codex once installed says to trust the hooks in Codex; Escape closes a confirmation back to its button", async () => {
    m = await mount(demoSnapshot(NOW));
    const codex = agentRow(m.root, "codex");
    const connect = byTestId(codex, "agent-connect");
    connect.click();
    await vi.waitFor(() => expect(byTestId(codex, "hooks-preview").textContent).toContain("supercode-tray-hook codex"));
    codex.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(codex.querySelector('[data-testid="confirm-hooks"]')).toBeNull();
    expect(document.activeElement).toBe(connect);
    connect.click();
    await vi.waitFor(() => expect(byTestId(codex, "hooks-preview").textContent).toContain("supercode-tray-hook codex"));
    byTestId(codex, "confirm-accept").click();
    await vi.waitFor(() => expect(byTestId(codex, "agent-trust").textContent).toContain("Hooks need review"));
    expect(byTestId(codex, "agent-notice").textContent).toContain("Hooks need review");
  });
});
