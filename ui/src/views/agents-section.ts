// The "Coding agents" section: Claude Code and Codex with their state as the core computes it
// (`hooks status`), and Connect / Disconnect. Each change first shows the core's preview (the
// exact entries, the file, the backup) and is made only from that preview: the confirmation
// sends the preview's digest back, and the core refuses (`planChanged`) when the file changed
// since, so the window then shows the new preview and asks again. The window decides nothing:
// whether an action applies, and why not, comes from the core.
import { toCommandError } from "../backend";
import type { CodingAgentView, CommandError, HooksChange, HooksOutcome, HooksPlanView } from "../bindings";
import { h, icon, setAttr, setText, show, Slot, uid } from "../dom";
import { shortenPath } from "../format";
import { ActionButton } from "./action-button";
import { ConfirmPanel } from "./runtime-row";

/** What the section asks of the backend. */
export interface AgentsActions {
  codingAgents(): Promise<CodingAgentView[]>;
  hooksPlan(agent: string, change: HooksChange): Promise<HooksPlanView>;
  hooksChange(agent: string, change: HooksChange, digest: string): Promise<HooksOutcome>;
}

const CONNECTION_LABEL: Record<CodingAgentView["connection"], string> = {
  connected: "Connected",
  partly: "Partly connected",
  notConnected: "Not connected",
  problem: "Problem",
};

/** The section; `load` (re)reads every agent's state. */
export class AgentsSection {
  readonly element: HTMLElement;
  private readonly list: HTMLUListElement;
  private readonly rows = new Map<string, AgentRow>();
  private readonly errorBox: Slot<HTMLParagraphElement>;

  constructor(private readonly actions: AgentsActions) {
    const titleId = "agents-title";
    this.list = h("ul", { class: "rows", attrs: { role: "list" } });
    this.errorBox = new Slot(h("p", { class: "msg msg-error", attrs: { role: "alert", "data-testid": "agents-error" } }));
    this.element = h(
      "section",
      { class: "section", attrs: { "aria-labelledby": titleId, "data-testid": "agents-section" } },
      h("div", { class: "section-head" }, h("h2", { class: "section-title", text: "Coding agents", attrs: { id: titleId, tabindex: "-1" } })),
      h("p", { class: "section-help", text: "Connected agents' sessions show up here as runtimes, through the agent's own hooks." }),
      this.errorBox.anchor,
      this.list,
    );
  }

  /** Reads every agent's state and patches the rows (an open confirmation stays open). */
  async load(): Promise<void> {
    try {
      this.render(await this.actions.codingAgents());
      this.errorBox.set(false);
    } catch (e) {
      setText(this.errorBox.el, `Could not read the coding agents' settings: ${toCommandError(e).message}`);
      this.errorBox.set(true);
    }
  }

  /** Renders `agents` (the core's order). */
  render(agents: readonly CodingAgentView[]): void {
    for (const view of agents) {
      let row = this.rows.get(view.agent);
      if (!row) {
        row = new AgentRow(view, this.actions, () => this.load());
        this.rows.set(view.agent, row);
        this.list.append(row.root);
      } else {
        row.update(view);
      }
    }
  }

  /** Closes an open confirmation (Escape elsewhere in the window); true if one was open. */
  dismissConfirm(): boolean {
    let closed = false;
    for (const row of this.rows.values()) closed = row.dismissConfirm() || closed;
    return closed;
  }
}

/** One agent: its state, Connect, Disconnect, and the preview to confirm. */
class AgentRow {
  readonly root: HTMLLIElement;
  private view: CodingAgentView;
  private readonly status: HTMLSpanElement;
  private readonly summary: HTMLParagraphElement;
  private readonly trust: HTMLParagraphElement;
  private readonly settings: HTMLElement;
  private readonly connectBtn: ActionButton;
  private readonly disconnectBtn: ActionButton;
  private readonly confirm: ConfirmPanel;
  private readonly planNote: HTMLParagraphElement;
  private readonly planPreview: HTMLPreElement;
  private readonly planBackup: HTMLParagraphElement;
  private readonly planWarning: HTMLParagraphElement;
  private readonly notice: Slot<HTMLDivElement>;
  private readonly noticeText: HTMLSpanElement;
  private readonly error: Slot<HTMLDivElement>;
  private readonly errorText: HTMLSpanElement;
  /** Which change is being previewed or made, and its plan once loaded. */
  private asking: HooksChange | null = null;
  private plan: HooksPlanView | null = null;
  private busy: HooksChange | null = null;

  constructor(view: CodingAgentView, private readonly actions: AgentsActions, private readonly reload: () => Promise<void>) {
    this.view = view;
    const nameId = uid("agent-name");
    this.status = h("span", { class: "state-chip", attrs: { "data-testid": "agent-connection" } });
    this.summary = h("p", { class: "row-reason", attrs: { "data-testid": "agent-summary" } });
    this.trust = h("p", { class: "row-reason", attrs: { "data-testid": "agent-trust" } });
    this.settings = h("code", { class: "path" });
    this.connectBtn = new ActionButton("agent-connect", () => void this.ask("connect"));
    this.disconnectBtn = new ActionButton("agent-disconnect", () => void this.ask("disconnect"));
    this.planNote = h("p", { class: "plan-status", attrs: { role: "status", "data-testid": "hooks-plan-status" } });
    this.planPreview = h("pre", { class: "hooks-preview", attrs: { "data-testid": "hooks-preview" } });
    this.planBackup = h("p", { class: "confirm-detail", attrs: { "data-testid": "hooks-backup" } });
    this.planWarning = h("p", { class: "confirm-detail" });
    this.confirm = new ConfirmPanel({
      testId: "confirm-hooks",
      confirmLabel: "Connect",
      variant: "primary",
      body: [this.planNote, this.planPreview, this.planBackup, this.planWarning],
      onConfirm: () => void this.make(),
      onCancel: () => this.close(true),
    });
    this.noticeText = h("span", { class: "msg-text" });
    this.notice = new Slot(h("div", { class: "msg msg-info", attrs: { role: "status", "data-testid": "agent-notice" } }, this.noticeText));
    this.errorText = h("span", { class: "msg-text" });
    this.error = new Slot(h("div", { class: "msg msg-error", attrs: { role: "alert", "data-testid": "agent-error" } }, icon("warning", "icon msg-icon"), this.errorText));
    this.root = h(
      "li",
      {
        class: "row agent-row",
        attrs: { "data-testid": "agent-row", "aria-labelledby": nameId, "data-agent": view.agent },
        on: { keydown: (e) => this.onKeydown(e) },
      },
      h("div", { class: "row-head" }, h("span", { class: "dot", attrs: { "aria-hidden": "true" } }), h("h3", { class: "row-name", text: view.title, attrs: { id: nameId } }), this.status),
      this.summary,
      this.trust,
      h("p", { class: "row-meta" }, "Settings: ", this.settings),
      this.notice.anchor,
      this.error.anchor,
      this.confirm.slot.anchor,
      h("div", { class: "row-foot" }, h("div", { class: "row-foot-end" }, this.disconnectBtn.root, this.connectBtn.root)),
    );
    this.update(view);
  }

  update(view: CodingAgentView): void {
    this.view = view;
    setAttr(this.root, "data-connection", view.connection);
    setText(this.status, CONNECTION_LABEL[view.connection]);
    setText(this.summary, view.summary);
    setText(this.trust, view.trust ?? "");
    show(this.trust, view.trust !== null);
    // Shortened like a runtime's workspace (the home directory as `~`), the whole path on hover;
    // the preview names the file in full before anything is written.
    setText(this.settings, shortenPath(view.settings));
    setAttr(this.settings, "title", view.settings);
    const title = view.title;
    this.connectBtn.update({
      label: "Connect",
      ariaLabel: `Connect ${title}`,
      available: view.connect.available,
      reason: view.connect.reason,
      busy: this.busy === "connect",
      busyLabel: "Connecting…",
      blocked: this.busy !== null,
      variant: "primary",
    });
    show(this.connectBtn.root, view.connect.applies);
    this.disconnectBtn.update({
      label: "Disconnect",
      ariaLabel: `Disconnect ${title}`,
      available: view.disconnect.available,
      reason: view.disconnect.reason,
      busy: this.busy === "disconnect",
      busyLabel: "Disconnecting…",
      blocked: this.busy !== null,
      variant: "secondary",
    });
    show(this.disconnectBtn.root, view.disconnect.applies);
    setAttr(this.connectBtn.button, "aria-expanded", this.asking === "connect" ? "true" : "false");
    setAttr(this.disconnectBtn.button, "aria-expanded", this.asking === "disconnect" ? "true" : "false");
    this.renderConfirm();
  }

  private renderConfirm(): void {
    const plan = this.plan;
    const change = this.asking;
    const verb = change === "disconnect" ? "Disconnect" : "Connect";
    this.confirm.update({
      title: `${verb} ${this.view.title}?`,
      confirmAria: `Confirm ${verb.toLowerCase()} ${this.view.title}`,
      cancelAria: `Cancel ${verb.toLowerCase()} ${this.view.title}`,
      open: change !== null,
      unavailable: plan?.nothingToDo ? "Nothing to change." : null,
      waiting: plan === null || this.busy !== null,
      confirmLabel: verb,
      variant: change === "disconnect" ? "danger" : "primary",
    });
    setText(this.planPreview, plan?.preview ?? "");
    show(this.planPreview, plan !== null);
    setText(this.planBackup, plan?.backup ? `The file as it is now is kept as ${plan.backup}.` : "");
    show(this.planBackup, !!plan?.backup);
    setText(this.planWarning, plan?.warning ?? "");
    show(this.planWarning, !!plan?.warning);
  }

  private setNote(text: string | null): void {
    setText(this.planNote, text ?? "");
    show(this.planNote, text !== null);
  }

  private setError(error: CommandError | null): void {
    setText(this.errorText, error?.message ?? "");
    this.error.set(error !== null);
  }

  /** Opens the confirmation of `change` with the core's preview. */
  private async ask(change: HooksChange): Promise<void> {
    if (this.busy !== null) return;
    this.asking = change;
    this.plan = null;
    this.notice.set(false);
    this.setError(null);
    this.setNote("Reading the settings file…");
    this.update(this.view);
    try {
      const plan = await this.actions.hooksPlan(this.view.agent, change);
      if (this.asking !== change) return;
      this.plan = plan;
      this.setNote(null);
      this.update(this.view);
      this.confirm.focusDefault();
    } catch (e) {
      this.close(false);
      this.setError(toCommandError(e));
      await this.reload();
      this.focusAction(change);
    }
  }

  /** Makes the change shown (its digest); a file changed since gets the new preview. */
  private async make(): Promise<void> {
    const plan = this.plan;
    const change = this.asking;
    if (plan === null || change === null || this.busy !== null) return;
    this.busy = change;
    this.update(this.view);
    try {
      const outcome = await this.actions.hooksChange(plan.agent, change, plan.digest);
      this.busy = null;
      this.close(false);
      setText(this.noticeText, outcome.message);
      this.notice.set(true);
      await this.reload();
      this.focusAction(change);
    } catch (e) {
      this.busy = null;
      const error = toCommandError(e);
      if (error.code === "planChanged") {
        // Show what the file makes now and ask again; nothing was written.
        this.plan = null;
        this.update(this.view);
        try {
          this.plan = await this.actions.hooksPlan(this.view.agent, change);
          this.setNote(`${error.message} This is the change now:`);
          this.update(this.view);
          return;
        } catch (again) {
          this.close(false);
          this.setError(toCommandError(again));
        }
      } else {
        this.close(false);
        this.setError(error);
      }
      await this.reload();
      this.focusAction(change);
    }
  }

  /** Focus on the button of `change`, or on the other one when that one went (Connect once connected). */
  private focusAction(change: HooksChange): void {
    const [mine, other] = change === "connect" ? [this.connectBtn, this.disconnectBtn] : [this.disconnectBtn, this.connectBtn];
    (mine.root.hidden && !other.root.hidden ? other : mine).button.focus();
  }

  private close(returnFocus: boolean): void {
    const was = this.asking;
    this.asking = null;
    this.plan = null;
    this.setNote(null);
    this.update(this.view);
    if (returnFocus && was !== null) this.focusAction(was);
  }

  dismissConfirm(): boolean {
    if (this.asking === null || this.busy !== null) return false;
    this.close(true);
    return true;
  }

  private onKeydown(e: KeyboardEvent): void {
    if (e.key === "Escape" && this.dismissConfirm()) {
      e.preventDefault();
    }
  }
}
