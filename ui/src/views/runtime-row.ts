// One runtime in the list: what it is, its status, what its agent is doing
// (state, title, detail, since when, who drives and watches it) and its
// actions, the agent's offered ones included, with their busy, error and
// confirmation states. The row owns that UI state, keyed by runtime id, so a
// live snapshot patches the row without closing an open confirmation or moving
// focus. Everything the agent says is set as text, never markup.
import type { Backend } from "../backend";
import type { AgentActionView, AgentState, CommandError, PlanEnvVar, RevivePlanView, RuntimeView } from "../bindings";
import { AGENT_RULES } from "../bindings/agentRules";
import { h, icon, setAttr, Slot, setText, show, uid, type KeyedView } from "../dom";
import { agentLabel, cardTime, fullTime, peopleText, relativeTime, shortenPath, statusLabel, statusTone, visible } from "../format";
import { ActionButton, type Variant } from "./action-button";

/** Focus has gone to nowhere (a removed element leaves it on <body>). */
function focusLost(): boolean {
  return document.activeElement === null || document.activeElement === document.body;
}

/** The row actions that talk to the backend. */
export type RuntimeAction = "attach" | "forget" | "revive" | "dismiss" | "act";

/**
 * How long a success message (an action's outcome: "Started review-bot (pid 4242).") stays
 * before it goes by itself. Long enough to read a line (a screen reader announces it at once,
 * it is a live region); short enough that it never describes a state long past (issue 31: a
 * banner still shown ten minutes later). Errors stay until dismissed: they ask for something.
 */
export const NOTICE_TIMEOUT_MS = 10_000;

/** True when an agent action is asked before it runs: the core decides, and carries the question in `confirm`. */
export function asksFirst(action: AgentActionView): boolean {
  return action.confirm !== null;
}

/** What a row needs from the app to run its actions: the backend's, and two of its own. */
export type RuntimeActions = Pick<Backend, "attach" | "forget" | "dismiss" | "revivePlan" | "revive" | "act"> & {
  /**
   * Puts focus on a place that does not move with the list, without scrolling: the button that
   * had it went with the state it belonged to, and the row itself may be re-sorted away (issue 31:
   * focus followed the approved card down the list and the view with it).
   */
  settleFocus(): void;
  /** Current time, injectable for tests. */
  now(): Date;
};

const BUSY_LABELS: Record<RuntimeAction, string> = {
  attach: "Opening…",
  forget: "Forgetting…",
  revive: "Reviving…",
  dismiss: "Dismissing…",
  act: "Sending…",
};

/** The runtime's own actions (the agent's are rendered from its status document). */
type RowAction = Exclude<RuntimeAction, "act">;

/** The row's own buttons, each rendered from the availability of the same name in the view. */
const ROW_ACTIONS: readonly { action: RowAction; label: string; variant: Variant }[] = [
  { action: "attach", label: "Attach", variant: "primary" },
  { action: "revive", label: "Revive", variant: "secondary" },
  { action: "forget", label: "Forget", variant: "secondary" },
  { action: "dismiss", label: "Dismiss", variant: "secondary" },
];

/** The view of one runtime. */
export class RuntimeRow implements KeyedView<RuntimeView> {
  readonly root: HTMLLIElement;
  private rt: RuntimeView;
  private busy: RuntimeAction | null = null;
  /** The agent action in flight, while `busy` is "act". */
  private busyAgentAction: string | null = null;
  private confirming: "revive" | "forget" | "act" | null = null;
  /**
   * The agent action the open "act" confirmation asks about: its label as last offered, and the
   * question and revision of the state it was opened from. Confirming acts on that revision, so
   * a prompt that changes under the open confirmation is refused by the core, never run.
   */
  private confirmingAction: { id: string, label: string, question: string, revision: number } | null = null;
  private error: string | null = null;
  private notice: string | null = null;
  private noticeTimer: number | undefined = undefined;

  private readonly nameEl: HTMLHeadingElement;
  private readonly badge: HTMLSpanElement;
  private readonly kindEl: HTMLSpanElement;
  private readonly workspaceSep: HTMLSpanElement;
  private readonly workspaceEl: HTMLSpanElement;
  private readonly profileSep: HTMLSpanElement;
  private readonly profileEl: HTMLSpanElement;
  private readonly reasonEl: HTMLParagraphElement;
  private readonly sinceEl: HTMLTimeElement;
  private readonly attachBtn: ActionButton;
  private readonly reviveBtn: ActionButton;
  private readonly forgetBtn: ActionButton;
  private readonly dismissBtn: ActionButton;
  /** What the agent of an exited runtime last showed, and when it exited. */
  private readonly lastEl: HTMLParagraphElement;
  private readonly confirmRevive: ConfirmPanel;
  private readonly confirmForget: ConfirmPanel;
  /** What forget removes: the receipt, or (a runtime known only from Canon) Canon's record of it. */
  private readonly forgetDetail: HTMLElement;
  private readonly planBox: HTMLDivElement;
  private readonly planStatus: HTMLParagraphElement;
  private readonly reviveProfile: HTMLParagraphElement;
  /** The plan the open revive confirmation shows, once loaded. */
  private plan: RevivePlanView | null = null;
  private planError: string | null = null;
  /** Said above the plan when it was reloaded because the record changed. */
  private planNotice: string | null = null;
  /** Ticked "Allow" boxes, by variable name, for the plan shown. */
  private readonly allowTicked = new Set<string>();
  /** Bumped on every plan request, so a late answer for an older one is dropped. */
  private planRequest = 0;
  private readonly noticeBox: Slot<HTMLDivElement>;
  private readonly noticeText: HTMLSpanElement;
  private readonly noticeDismiss: HTMLButtonElement;
  private readonly errorBox: Slot<HTMLDivElement>;
  private readonly errorText: HTMLSpanElement;
  private readonly errorDismiss: HTMLButtonElement;
  private readonly stateChip: HTMLSpanElement;
  private readonly stateIcon: HTMLSpanElement;
  private readonly stateText: HTMLSpanElement;
  private readonly agentBox: HTMLDivElement;
  private readonly agentTitle: HTMLParagraphElement;
  private readonly agentDetail: HTMLPreElement;
  private readonly agentPeople: HTMLSpanElement;
  private readonly agentActions: HTMLDivElement;
  /** One button per offered agent action, by action id. */
  private readonly agentButtons = new Map<string, ActionButton>();
  private readonly confirmAct: ConfirmPanel;
  private readonly confirmActText: HTMLParagraphElement;

  constructor(rt: RuntimeView, private readonly actions: RuntimeActions) {
    this.rt = rt;
    const nameId = uid("rt-name");
    this.nameEl = h("h3", { class: "row-name", attrs: { id: nameId } });
    this.badge = h("span", { class: "badge", attrs: { "data-testid": "runtime-status" } });
    this.kindEl = h("span", { class: "kind" });
    this.workspaceSep = h("span", { class: "sep", text: "·", attrs: { "aria-hidden": "true" } });
    this.workspaceEl = h("span", { class: "workspace" });
    this.profileSep = h("span", { class: "sep", text: "·", attrs: { "aria-hidden": "true" } });
    this.profileEl = h("span", { class: "profile" });
    this.reasonEl = h("p", { class: "row-reason" });
    this.lastEl = h("p", { class: "row-last", attrs: { "data-testid": "exited-last" } });
    this.sinceEl = h("time", { class: "since", attrs: { "data-testid": "card-time" } });

    this.stateIcon = h("span", { class: "agent-state-icon" });
    this.stateText = h("span", { class: "agent-state-text" });
    this.stateChip = h("span", { class: "agent-state", attrs: { "data-testid": "agent-state" } }, this.stateIcon, this.stateText);
    this.agentTitle = h("p", { class: "agent-title", attrs: { "data-testid": "agent-title" } });
    this.agentDetail = h("pre", { class: "agent-detail", attrs: { "data-testid": "agent-detail" } });
    this.agentPeople = h("span", { class: "agent-people", attrs: { "data-testid": "agent-people" } });
    this.agentActions = h("div", { class: "agent-actions", attrs: { "data-testid": "agent-actions" } });
    this.agentBox = h(
      "div",
      { class: "agent", attrs: { "data-testid": "agent" } },
      this.agentTitle,
      this.agentDetail,
      h("p", { class: "agent-meta" }, this.agentPeople),
      this.agentActions,
    );
    this.confirmActText = h("p", { class: "confirm-detail", attrs: { "data-testid": "confirm-act-text" } });
    this.confirmAct = new ConfirmPanel({
      testId: "confirm-act",
      confirmLabel: "Confirm",
      variant: "danger",
      body: [this.confirmActText],
      onConfirm: () => {
        const asked = this.confirmingAction;
        if (asked === null || this.offered(asked.id) === null) return;
        this.closeConfirm(false);
        void this.runAct(asked.id, asked.revision);
      },
      onCancel: () => this.closeConfirm(true),
    });

    this.attachBtn = new ActionButton("action-attach", () => void this.run("attach"));
    this.reviveBtn = new ActionButton("action-revive", () => this.openConfirm("revive"));
    this.forgetBtn = new ActionButton("action-forget", () => this.openConfirm("forget"));
    // Dismiss only takes the tray's record of a runtime already gone off the list: no confirmation.
    this.dismissBtn = new ActionButton("action-dismiss", () => void this.run("dismiss"));

    this.planStatus = h("p", { class: "plan-status", attrs: { "data-testid": "plan-status", role: "status" } });
    this.planBox = h("div", { class: "plan", attrs: { "data-testid": "revive-plan" } });
    this.reviveProfile = h("p", { class: "confirm-detail" });
    this.confirmRevive = new ConfirmPanel({
      testId: "confirm-revive",
      confirmLabel: "Revive",
      variant: "primary",
      body: [h("p", { class: "confirm-detail", text: "Supercode Tray will run exactly this, and nothing else:" }), this.planStatus, this.planBox, this.reviveProfile],
      onConfirm: () => {
        const plan = this.plan;
        if (plan === null) return;
        const allow = plan.env.filter((v) => v.needsAllow && !v.allowed && this.allowTicked.has(v.name)).map((v) => v.name);
        this.closeConfirm(false);
        void this.run("revive", { digest: plan.digest, allow });
      },
      onCancel: () => this.closeConfirm(true),
    });
    this.forgetDetail = h("p", { class: "confirm-detail" });
    this.confirmForget = new ConfirmPanel({
      testId: "confirm-forget",
      confirmLabel: "Forget",
      variant: "danger",
      body: [this.forgetDetail],
      onConfirm: () => {
        this.closeConfirm(false);
        void this.run("forget");
      },
      onCancel: () => this.closeConfirm(true),
    });

    this.noticeText = h("span", { class: "msg-text" });
    this.noticeDismiss = h("button", { class: "icon-btn", attrs: { type: "button" }, on: { click: () => this.dismissNotice() } }, icon("close"));
    this.noticeBox = new Slot(h("div", { class: "msg msg-info", attrs: { role: "status", "data-testid": "row-notice" } }, this.noticeText, this.noticeDismiss));

    this.errorText = h("span", { class: "msg-text" });
    this.errorDismiss = h("button", { class: "icon-btn", attrs: { type: "button" }, on: { click: () => this.dismissError() } }, icon("close"));
    this.errorBox = new Slot(h("div", { class: "msg msg-error", attrs: { role: "alert", "data-testid": "row-error" } }, icon("warning", "icon msg-icon"), this.errorText, this.errorDismiss));

    this.root = h(
      "li",
      {
        class: "row runtime-row",
        attrs: { "data-testid": "runtime-row", "aria-labelledby": nameId },
        on: { keydown: (e) => this.onKeydown(e) },
      },
      h(
        "div",
        { class: "row-head" },
        h("span", { class: "dot", attrs: { "aria-hidden": "true" } }),
        this.nameEl,
        this.stateChip,
        this.badge,
      ),
      h("p", { class: "row-meta" }, this.kindEl, this.workspaceSep, this.workspaceEl, this.profileSep, this.profileEl),
      this.reasonEl,
      this.lastEl,
      this.agentBox,
      h("div", { class: "row-foot" }, this.sinceEl, h("div", { class: "actions" }, this.attachBtn.root, this.reviveBtn.root, this.forgetBtn.root, this.dismissBtn.root)),
      this.confirmAct.slot.anchor,
      this.confirmRevive.slot.anchor,
      this.confirmForget.slot.anchor,
      this.noticeBox.anchor,
      this.errorBox.anchor,
    );
    this.update(rt);
  }

  /** The runtime id this row shows. */
  get id(): string {
    return this.rt.id;
  }

  /** Patches the row to show `rt`, keeping its UI state. */
  update(rt: RuntimeView): void {
    this.rt = rt;
    const name = rt.name;
    setAttr(this.root, "data-runtime-id", rt.id);
    setAttr(this.root, "data-status", statusTone(rt.status));
    setAttr(this.root, "data-origin", rt.origin);
    setText(this.nameEl, name);
    setAttr(this.nameEl, "title", name);
    this.badge.className = `badge tone-${statusTone(rt.status)}`;
    setText(this.badge, statusLabel(rt.status));

    setText(this.kindEl, rt.kind);
    const ws = rt.workspace;
    show(this.workspaceSep, ws !== null);
    show(this.workspaceEl, ws !== null);
    setText(this.workspaceEl, ws === null ? "" : shortenPath(ws));
    setAttr(this.workspaceEl, "title", ws);
    show(this.profileSep, rt.profile !== null);
    show(this.profileEl, rt.profile !== null);
    setText(this.profileEl, rt.profile === null ? "" : `profile ${rt.profile}`);

    setText(this.reasonEl, rt.statusReason ?? "");
    show(this.reasonEl, rt.statusReason !== null && rt.statusReason !== "");
    const last = lastStateText(rt);
    setText(this.lastEl, last ?? "");
    show(this.lastEl, last !== null);
    this.renderAgent(rt);
    // One status word: an agent's state, when known, says more than "Running" and never
    // contradicts it ("Error" beside "Running", issue 31); the dot still says it runs.
    show(this.badge, this.stateChip.hidden);
    this.refreshTime(this.actions.now());

    const blockedBy = (a: RuntimeAction) => this.busy !== null && this.busy !== a;
    for (const { action, label, variant } of ROW_ACTIONS) {
      const availability = rt[action];
      // What can never apply to this runtime as it is (the core says so) is left out, not disabled.
      show(this.actionButton(action).root, availability.applies);
      this.actionButton(action).update({
        label,
        ariaLabel: `${label} ${name}`,
        available: availability.available,
        reason: availability.reason,
        busy: this.busy === action,
        busyLabel: BUSY_LABELS[action],
        blocked: blockedBy(action),
        variant,
      });
    }
    setAttr(this.reviveBtn.button, "aria-expanded", this.confirming === "revive" ? "true" : "false");
    setAttr(this.forgetBtn.button, "aria-expanded", this.confirming === "forget" ? "true" : "false");

    // Confirmations stay open across updates; they only reflect what changed.
    this.renderPlan();
    setText(this.reviveProfile, rt.profile === null ? "No Canon profile." : `Profile: ${visible(rt.profile)}`);
    this.confirmRevive.update({
      title: `Revive ${name}?`,
      confirmAria: `Confirm revive ${name}`,
      cancelAria: `Cancel revive ${name}`,
      open: this.confirming === "revive",
      unavailable: rt.revive.available ? (this.planError ?? this.refusedReason()) : (rt.revive.reason ?? "Revive is no longer available."),
      waiting: this.plan === null,
    });
    setText(this.forgetDetail, forgetDetail(rt));
    this.confirmForget.update({
      title: `Forget ${name}?`,
      confirmAria: `Confirm forget ${name}`,
      cancelAria: `Cancel forget ${name}`,
      open: this.confirming === "forget",
      unavailable: rt.forget.available ? null : (rt.forget.reason ?? "Forget is no longer available."),
      waiting: false,
    });

    const asked = this.confirmingAction;
    const askedNow = asked === null ? null : this.offered(asked.id);
    if (asked !== null && askedNow !== null) asked.label = askedNow.label;
    // The question of the state the confirmation was opened from: what confirming acts on.
    setText(this.confirmActText, askedNow === null || asked === null ? "" : asked.question);
    this.confirmAct.update({
      title: asked === null ? "" : `${asked.label} on ${name}?`,
      confirmAria: asked === null ? "" : `Confirm ${asked.label} on ${name}`,
      cancelAria: asked === null ? "" : `Cancel ${asked.label} on ${name}`,
      open: this.confirming === "act",
      unavailable: asked !== null && askedNow === null ? `${asked.label} is no longer offered: the agent has moved on.` : null,
      waiting: false,
      confirmLabel: asked?.label ?? "Confirm",
      variant: askedNow !== null && !askedNow.destructive ? "primary" : "danger",
    });

    setText(this.noticeText, this.notice ?? "");
    this.noticeBox.set(this.notice !== null);
    setAttr(this.noticeDismiss, "aria-label", `Dismiss message for ${name}`);
    setText(this.errorText, this.error ?? "");
    this.errorBox.set(this.error !== null);
    setAttr(this.errorDismiss, "aria-label", `Dismiss error for ${name}`);
  }

  /** The agent action `id` its latest state offers, or `null`. */
  private offered(id: string): AgentActionView | null {
    return this.rt.state?.actions.find((a) => a.id === id) ?? null;
  }

  /** What the agent is doing: its state (icon and word), title, detail, who is on it, and its actions. */
  private renderAgent(rt: RuntimeView): void {
    const state = rt.state;
    const label = state === null ? null : agentLabel(state.value);
    // `unknown` (or no state at all) shows the runtime as it always was: nothing extra.
    const known = state !== null && label !== null;
    show(this.stateChip, known);
    show(this.agentBox, known);
    setAttr(this.root, "data-agent-state", known ? state.value : null);
    setAttr(this.root, "data-needs-you", known && AGENT_RULES[state.value].needsYou ? "true" : null);
    const value: AgentState | "" = known ? state.value : "";
    if (this.stateChip.dataset.state !== value) {
      this.stateChip.dataset.state = value;
      this.stateChip.className = `agent-state state-${value || "none"}`;
      this.stateIcon.replaceChildren(...(known ? [icon(state.value as Exclude<AgentState, "unknown">, "icon agent-icon")] : []));
    }
    setText(this.stateText, label ?? "");
    const title = known ? (state.title ?? "") : "";
    setText(this.agentTitle, title);
    show(this.agentTitle, title !== "");
    const detail = known ? (state.detail ?? "") : "";
    setText(this.agentDetail, detail);
    show(this.agentDetail, detail !== "");
    const people = known ? peopleText(state) : "";
    setText(this.agentPeople, people);
    show(this.agentPeople, people !== "");
    this.renderAgentActions(known ? state.actions : []);
  }

  /** One button per offered action, in the agent's order; a button is kept while its action is offered. */
  private renderAgentActions(offered: readonly AgentActionView[]): void {
    const name = this.rt.name;
    const seen = new Set<string>();
    const order: HTMLElement[] = [];
    offered.forEach((action, index) => {
      if (seen.has(action.id)) return;
      seen.add(action.id);
      let button = this.agentButtons.get(action.id);
      if (!button) {
        const id = action.id;
        button = new ActionButton("agent-action", () => this.pressAgentAction(id));
        setAttr(button.button, "data-action-id", id);
        this.agentButtons.set(id, button);
      }
      const busy = this.busy === "act" && this.busyAgentAction === action.id;
      button.update({
        label: asksFirst(action) ? `${action.label}…` : action.label,
        ariaLabel: `${action.label} ${name}`,
        available: true,
        reason: null,
        busy,
        busyLabel: `${action.label}…`,
        blocked: this.busy !== null && !busy,
        variant: action.destructive ? "danger" : index === 0 ? "primary" : "secondary",
      });
      setAttr(button.button, "aria-expanded", asksFirst(action) ? (this.confirming === "act" && this.confirmingAction?.id === action.id ? "true" : "false") : null);
      order.push(button.root);
    });
    let lostFocus = false;
    for (const [id, button] of this.agentButtons) {
      if (!seen.has(id)) {
        if (button.root.contains(document.activeElement)) lostFocus = true;
        button.root.remove();
        this.agentButtons.delete(id);
      }
    }
    const current = Array.from(this.agentActions.children);
    if (current.length !== order.length || current.some((el, i) => el !== order[i])) this.agentActions.replaceChildren(...order);
    show(this.agentActions, order.length > 0);
    // The agent moved on while its button had focus (a snapshot after an accepted action).
    if (lostFocus && focusLost()) this.actions.settleFocus();
  }

  private pressAgentAction(id: string): void {
    const action = this.offered(id);
    const revision = this.rt.state?.revision ?? null;
    if (action === null || revision === null || this.busy !== null) return;
    if (asksFirst(action)) this.openActConfirm(action);
    else void this.runAct(id, revision);
  }

  /**
   * Shows the confirmation of agent action `id` (asked for by the tray menu). False when the
   * agent does not offer it now; the row then stays as it is.
   */
  requestAct(id: string): boolean {
    const action = this.offered(id);
    if (action === null) return false;
    this.openActConfirm(action);
    return true;
  }

  private openActConfirm(action: AgentActionView): void {
    const revision = this.rt.state?.revision ?? null;
    if (this.busy !== null || revision === null) return;
    const question = action.confirm ?? `${this.rt.name} will run "${action.label}".`;
    this.confirmingAction = { id: action.id, label: action.label, question, revision };
    this.confirming = "act";
    this.update(this.rt);
    this.confirmAct.focusDefault();
  }

  private async runAct(id: string, revision: number): Promise<void> {
    if (this.busy !== null) return;
    this.busy = "act";
    this.busyAgentAction = id;
    this.error = null;
    this.notice = null;
    this.update(this.rt);
    this.agentButtons.get(id)?.button.focus();
    try {
      await this.actions.act(this.rt.id, id, revision);
    } catch (err) {
      this.error = (err as CommandError).message;
    } finally {
      this.busy = null;
      this.busyAgentAction = null;
      this.update(this.rt);
    }
    // An accepted action is usually no longer offered: its button went with it. Focus then goes
    // where the list cannot move it, never after this row (which the new state may re-sort).
    // Focus the user put elsewhere meanwhile (another row's Approve) stays where it is.
    if (focusLost()) {
      if (this.error !== null) this.errorDismiss.focus({ preventScroll: true });
      else this.actions.settleFocus();
    }
  }

  /** Re-renders the card's one labeled time ("asked 2 min ago", "started 3 h ago"). */
  refreshTime(now: Date): void {
    const time = cardTime(this.rt);
    show(this.sinceEl, time !== null);
    if (time === null) return;
    setAttr(this.sinceEl, "datetime", time.at.toISOString());
    const also = time.also === null ? "" : `; ${time.also.label} ${fullTime(time.also.at)}`;
    setAttr(this.sinceEl, "title", `${time.label} ${fullTime(time.at)}${also}`);
    setText(this.sinceEl, `${time.label} ${relativeTime(time.at, now)}`);
  }

  private actionButton(action: RowAction): ActionButton {
    return { attach: this.attachBtn, revive: this.reviveBtn, forget: this.forgetBtn, dismiss: this.dismissBtn }[action];
  }

  private buttonFor(action: RowAction): HTMLButtonElement {
    return this.actionButton(action).button;
  }

  /**
   * Shows this runtime's revive confirmation (asked for by the tray menu). False when revive
   * does not apply to it now; the row then stays as it is.
   */
  requestRevive(): boolean {
    if (!this.rt.revive.available) return false;
    this.openConfirm("revive");
    return true;
  }

  private openConfirm(which: "revive" | "forget", notice: string | null = null): void {
    if (this.busy !== null) return;
    this.confirming = which;
    if (which === "revive") this.loadPlan(notice);
    this.update(this.rt);
    (which === "revive" ? this.confirmRevive : this.confirmForget).focusDefault();
  }

  private closeConfirm(restoreFocus: boolean): void {
    const which = this.confirming;
    if (which === null) return;
    const asked = this.confirmingAction;
    this.confirming = null;
    this.confirmingAction = null;
    this.planRequest++;
    this.update(this.rt);
    if (!restoreFocus) return;
    if (which !== "act") {
      // Its button is gone when the action stopped applying meanwhile (revived elsewhere).
      if (this.actionButton(which).root.hidden) this.focusAfterMessage();
      else this.buttonFor(which).focus();
      return;
    }
    const button = asked === null ? undefined : this.agentButtons.get(asked.id);
    if (button) button.button.focus();
    else this.focusAfterMessage();
  }

  /** Asks the backend what a revive would run; the confirmation shows it once it answers. */
  private loadPlan(notice: string | null): void {
    const request = ++this.planRequest;
    this.plan = null;
    this.planError = null;
    this.planNotice = notice;
    this.allowTicked.clear();
    this.actions.revivePlan(this.rt.id).then(
      (plan) => {
        if (request !== this.planRequest) return;
        this.plan = plan;
        this.update(this.rt);
      },
      (err: unknown) => {
        if (request !== this.planRequest) return;
        this.planError = (err as CommandError).message ?? "Could not read what revive would run.";
        this.update(this.rt);
      },
    );
  }

  /** Why Confirm waits: a variable that needs allowing and is not ticked yet. */
  private refusedReason(): string | null {
    const plan = this.plan;
    if (plan === null) return null;
    const missing = plan.env.filter((v) => v.needsAllow && !v.allowed && !this.allowTicked.has(v.name));
    if (missing.length === 0) return null;
    return `Allow ${missing.map((v) => v.name).join(", ")} above to revive with ${missing.length === 1 ? "it" : "them"}, or cancel.`;
  }

  private renderPlan(): void {
    const plan = this.plan;
    const status = this.planError !== null ? null : plan === null ? "Reading what it will run…" : this.planNotice;
    setText(this.planStatus, status ?? "");
    show(this.planStatus, status !== null);
    this.planStatus.classList.toggle("is-notice", plan !== null && this.planNotice !== null);
    const key = plan === null ? "" : plan.digest + "\u0000" + plan.env.map((v) => `${v.name}:${v.allowed}`).join(",");
    if (this.planBox.dataset.key === key) return;
    this.planBox.dataset.key = key;
    show(this.planBox, plan !== null);
    if (plan === null) {
      this.planBox.replaceChildren();
      return;
    }
    const program = h("dd", {}, h("code", { text: visible(plan.program), attrs: { "data-testid": "plan-program" } }));
    if (plan.recordedProgram !== plan.program) program.append(h("span", { class: "plan-note", text: ` recorded as ${visible(plan.recordedProgram)}, found on PATH` }));
    const args =
      plan.args.length > 0
        ? h("ol", { class: "argv", attrs: { "data-testid": "plan-args", "aria-label": "Arguments, one per item" } }, ...plan.args.map((arg) => h("li", {}, h("code", { text: visible(arg) }))))
        : h("p", { class: "argv-missing", attrs: { "data-testid": "plan-args" }, text: "None." });
    const env =
      plan.env.length > 0
        ? h("ul", { class: "plan-env", attrs: { "data-testid": "plan-env" } }, ...plan.env.map((v) => this.envItem(v)))
        : h("p", { class: "argv-missing", attrs: { "data-testid": "plan-env" }, text: "Nothing added." });
    this.planBox.replaceChildren(
      h(
        "dl",
        { class: "plan-list" },
        h("dt", { text: "Program" }),
        program,
        h("dt", { text: "Arguments" }),
        h("dd", {}, args),
        h("dt", { text: "Working directory" }),
        h("dd", {}, h("code", { text: visible(plan.cwd), attrs: { "data-testid": "plan-cwd" } })),
        h("dt", { text: "Environment" }),
        h("dd", {}, h("p", { class: "plan-note", text: "Supercode Tray's own, plus:" }), env),
      ),
    );
  }

  private envItem(v: PlanEnvVar): HTMLLIElement {
    const item = h("li", { class: `plan-env-var${v.needsAllow && !v.allowed ? " is-refused" : ""}`, attrs: { "data-env-name": v.name } }, h("code", { class: "env-pair", text: `${visible(v.name)}=${visible(v.value)}` }));
    if (!v.needsAllow) return item;
    if (v.allowed) {
      item.append(h("span", { class: "env-tag", text: "allowed for this runtime" }));
      return item;
    }
    const box = h("input", { attrs: { type: "checkbox", "data-testid": "allow-env", "data-env-name": v.name } });
    box.checked = this.allowTicked.has(v.name);
    box.addEventListener("change", () => {
      if (box.checked) this.allowTicked.add(v.name);
      else this.allowTicked.delete(v.name);
      this.update(this.rt);
    });
    item.append(
      h("p", { class: "env-reason", text: v.reason ?? "" }),
      h("label", { class: "env-allow" }, box, ` Allow ${visible(v.name)} with this value for this runtime`),
    );
    return item;
  }

  /** Closes an open confirmation (Escape pressed outside the row); true when one was open. */
  dismissConfirm(): boolean {
    if (this.confirming === null) return false;
    this.closeConfirm(false);
    return true;
  }

  private onKeydown(e: KeyboardEvent): void {
    if (e.key === "Escape" && this.confirming !== null) {
      e.preventDefault();
      e.stopPropagation();
      this.closeConfirm(true);
    }
  }

  private dismissError(): void {
    this.error = null;
    this.update(this.rt);
    this.focusAfterMessage();
  }

  private dismissNotice(): void {
    this.notice = null;
    this.update(this.rt);
    this.focusAfterMessage();
  }

  /** Shows a success message that goes by itself after `NOTICE_TIMEOUT_MS`. */
  private setNotice(message: string): void {
    this.notice = message;
    window.clearTimeout(this.noticeTimer);
    this.noticeTimer = window.setTimeout(() => {
      if (this.notice !== message) return;
      const hadFocus = this.noticeBox.el.contains(document.activeElement);
      this.notice = null;
      this.update(this.rt);
      if (hadFocus) this.focusAfterMessage();
    }, NOTICE_TIMEOUT_MS);
  }

  private focusAfterMessage(): void {
    const shownButtons = [this.attachBtn, this.reviveBtn, this.forgetBtn, this.dismissBtn].filter((b) => !b.root.hidden);
    const target = shownButtons.find((b) => b.button.getAttribute("aria-disabled") !== "true") ?? shownButtons[0];
    if (target) target.button.focus({ preventScroll: true });
    else this.actions.settleFocus();
  }

  private async run(action: RowAction, confirmed?: { digest: string, allow: string[] }): Promise<void> {
    if (this.busy !== null) return;
    this.busy = action;
    this.error = null;
    this.notice = null;
    this.update(this.rt);
    // Revive and forget start from a confirmation that just closed: keep focus
    // on the (now busy) button that opened it rather than losing it to <body>.
    if (action === "revive" || action === "forget") this.buttonFor(action).focus();
    let reviewAgain: string | null = null;
    try {
      if (action === "revive") {
        const outcome = await this.actions.revive(this.rt.id, confirmed?.digest ?? "", confirmed?.allow ?? []);
        this.setNotice(outcome.message);
      } else if (action === "attach") {
        await this.actions.attach(this.rt.id);
      } else if (action === "dismiss") {
        await this.actions.dismiss(this.rt.id);
      } else {
        await this.actions.forget(this.rt.id);
      }
    } catch (err) {
      const error = err as CommandError;
      // The record changed after the plan was shown: show the new plan and ask again.
      if (action === "revive" && error.code === "planChanged") reviewAgain = error.message;
      else this.error = error.message;
    } finally {
      this.busy = null;
      this.update(this.rt);
    }
    // A revive that ran leaves no Revive on the (now running) card: keep focus in the row.
    const pressed = this.actionButton(action).root;
    if (pressed.hidden && (focusLost() || pressed.contains(document.activeElement))) this.focusAfterMessage();
    if (reviewAgain !== null) this.openConfirm("revive", reviewAgain);
  }
}

export interface ConfirmOptions {
  testId: string;
  confirmLabel: string;
  variant: "primary" | "danger";
  body: Node[];
  onConfirm(): void;
  onCancel(): void;
}

export interface ConfirmState {
  title: string;
  confirmAria: string;
  cancelAria: string;
  open: boolean;
  /** Set when the action stopped being available while the panel was open. */
  unavailable: string | null;
  /** Confirm waits for something to load (no message). */
  waiting: boolean;
  /** The Confirm button's text and look, when they follow what is asked. */
  confirmLabel?: string;
  variant?: "primary" | "danger";
}

/** An inline confirmation under a row: title, details, Cancel and Confirm. */
export class ConfirmPanel {
  readonly slot: Slot<HTMLDivElement>;
  private readonly title: HTMLHeadingElement;
  private readonly confirm: HTMLButtonElement;
  private readonly cancel: HTMLButtonElement;
  private readonly unavailable: HTMLParagraphElement;
  private readonly root: HTMLDivElement;
  private variant: "primary" | "danger";

  constructor(opts: ConfirmOptions) {
    const titleId = uid("confirm-title");
    this.title = h("h4", { class: "confirm-title", attrs: { id: titleId } });
    this.unavailable = h("p", { class: "confirm-unavailable" });
    this.cancel = h("button", { class: "btn btn-secondary", text: "Cancel", attrs: { type: "button", "data-testid": "confirm-cancel" }, on: { click: () => opts.onCancel() } });
    this.confirm = h("button", {
      class: `btn btn-${opts.variant}`,
      text: opts.confirmLabel,
      attrs: { type: "button", "data-testid": "confirm-accept" },
      on: {
        click: () => {
          if (this.confirm.getAttribute("aria-disabled") !== "true") opts.onConfirm();
        },
      },
    });
    this.variant = opts.variant;
    const root = h(
      "div",
      { class: `confirm confirm-${opts.variant}`, attrs: { role: "group", "aria-labelledby": titleId, "data-testid": opts.testId } },
      this.title,
      ...opts.body,
      this.unavailable,
      h("div", { class: "confirm-actions" }, this.cancel, this.confirm),
    );
    this.root = root;
    this.slot = new Slot(root);
  }

  update(s: ConfirmState): void {
    this.slot.set(s.open);
    if (s.variant !== undefined && s.variant !== this.variant) {
      this.variant = s.variant;
      this.root.className = `confirm confirm-${s.variant}`;
      this.confirm.className = `btn btn-${s.variant}`;
    }
    if (s.confirmLabel !== undefined) setText(this.confirm, s.confirmLabel);
    setText(this.title, s.title);
    setAttr(this.confirm, "aria-label", s.confirmAria);
    setAttr(this.cancel, "aria-label", s.cancelAria);
    setText(this.unavailable, s.unavailable ?? "");
    show(this.unavailable, s.unavailable !== null);
    setAttr(this.confirm, "aria-disabled", s.unavailable !== null || s.waiting ? "true" : null);
  }

  focusDefault(): void {
    // A destructive confirmation starts on Cancel, a constructive one on its action.
    (this.variant === "danger" ? this.cancel : this.confirm).focus();
  }
}

/** What the agent of an exited runtime last showed ("Last seen: Needs approval: Run the tests?"), or `null`. */
export function lastStateText(rt: RuntimeView): string | null {
  const last = rt.exited?.lastState ?? null;
  if (last === null) return rt.exited === null ? null : "Its agent's last state was not seen.";
  const label = agentLabel(last.value);
  if (label === null) return "Its agent's last state was not seen.";
  return last.title === null ? `Last seen: ${label}` : `Last seen: ${label}: ${last.title}`;
}

/** The forget confirmation's words for what goes and what stays, by where the runtime is known from. */
export function forgetDetail(rt: RuntimeView): string {
  return rt.origin === "catalog"
    ? "This removes only the record Canon keeps of this runtime (its file in the Canon runtimes folder), as Canon itself does. Its Canon profile, its lock, other runtimes, the workspace and its files stay as they are."
    : "This removes only this stale receipt. The workspace, its files and any Canon registration stay as they are.";
}
