// One runtime in the list: what it is, its status, and its actions with their
// busy, error and confirmation states. The row owns that UI state, keyed by
// runtime id, so a live snapshot patches the row without closing an open
// confirmation or moving focus.
import type { CommandError, ReviveOutcome, RuntimeView } from "../bindings";
import { h, icon, setAttr, Slot, setText, show, uid, type KeyedView } from "../dom";
import { fullTime, parseTime, relativeTime, shortenPath, statusLabel, statusTone } from "../format";
import { ActionButton } from "./action-button";

/** The row actions that talk to the backend. */
export type RuntimeAction = "attach" | "forget" | "revive";

/** What a row needs from the app to run its actions. */
export interface RuntimeActions {
  attach(id: string): Promise<void>;
  forget(id: string): Promise<void>;
  revive(id: string): Promise<ReviveOutcome>;
  /** Current time, injectable for tests. */
  now(): Date;
}

const BUSY_LABELS: Record<RuntimeAction, string> = {
  attach: "Opening…",
  forget: "Forgetting…",
  revive: "Reviving…",
};

/** The view of one runtime. */
export class RuntimeRow implements KeyedView<RuntimeView> {
  readonly root: HTMLLIElement;
  private rt: RuntimeView;
  private busy: RuntimeAction | null = null;
  private confirming: "revive" | "forget" | null = null;
  private error: string | null = null;
  private notice: string | null = null;

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
  private readonly confirmRevive: ConfirmPanel;
  private readonly confirmForget: ConfirmPanel;
  private readonly argvList: HTMLOListElement;
  private readonly reviveProfile: HTMLParagraphElement;
  private readonly noticeBox: Slot<HTMLDivElement>;
  private readonly noticeText: HTMLSpanElement;
  private readonly noticeDismiss: HTMLButtonElement;
  private readonly errorBox: Slot<HTMLDivElement>;
  private readonly errorText: HTMLSpanElement;
  private readonly errorDismiss: HTMLButtonElement;

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
    this.sinceEl = h("time", { class: "since" });

    this.attachBtn = new ActionButton("action-attach", () => void this.run("attach"));
    this.reviveBtn = new ActionButton("action-revive", () => this.openConfirm("revive"));
    this.forgetBtn = new ActionButton("action-forget", () => this.openConfirm("forget"));

    this.argvList = h("ol", { class: "argv", attrs: { "aria-label": "Launch command, one argument per item" } });
    this.reviveProfile = h("p", { class: "confirm-detail" });
    this.confirmRevive = new ConfirmPanel({
      testId: "confirm-revive",
      confirmLabel: "Revive",
      variant: "primary",
      body: [h("p", { class: "confirm-detail", text: "Supercode Tray will run this command:" }), this.argvList, this.reviveProfile],
      onConfirm: () => {
        this.closeConfirm(false);
        void this.run("revive");
      },
      onCancel: () => this.closeConfirm(true),
    });
    this.confirmForget = new ConfirmPanel({
      testId: "confirm-forget",
      confirmLabel: "Forget",
      variant: "danger",
      body: [
        h("p", {
          class: "confirm-detail",
          text: "This removes only this stale receipt. The workspace, its files and any Canon registration stay as they are.",
        }),
      ],
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
        this.badge,
      ),
      h("p", { class: "row-meta" }, this.kindEl, this.workspaceSep, this.workspaceEl, this.profileSep, this.profileEl),
      this.reasonEl,
      h("div", { class: "row-foot" }, this.sinceEl, h("div", { class: "actions" }, this.attachBtn.root, this.reviveBtn.root, this.forgetBtn.root)),
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
    this.refreshTime(this.actions.now());

    const blockedBy = (a: RuntimeAction) => this.busy !== null && this.busy !== a;
    this.attachBtn.update({
      label: "Attach",
      ariaLabel: `Attach ${name}`,
      available: rt.attach.available,
      reason: rt.attach.reason,
      busy: this.busy === "attach",
      busyLabel: BUSY_LABELS.attach,
      blocked: blockedBy("attach"),
      variant: "primary",
    });
    this.reviveBtn.update({
      label: "Revive",
      ariaLabel: `Revive ${name}`,
      available: rt.revive.available,
      reason: rt.revive.reason,
      busy: this.busy === "revive",
      busyLabel: BUSY_LABELS.revive,
      blocked: blockedBy("revive"),
      variant: "secondary",
    });
    this.forgetBtn.update({
      label: "Forget",
      ariaLabel: `Forget ${name}`,
      available: rt.forget.available,
      reason: rt.forget.reason,
      busy: this.busy === "forget",
      busyLabel: BUSY_LABELS.forget,
      blocked: blockedBy("forget"),
      variant: "secondary",
    });
    setAttr(this.reviveBtn.button, "aria-expanded", this.confirming === "revive" ? "true" : "false");
    setAttr(this.forgetBtn.button, "aria-expanded", this.confirming === "forget" ? "true" : "false");

    // Confirmations stay open across updates; they only reflect what changed.
    const argv = rt.launchCommand ?? [];
    const items = () => argv.length > 0 ? argv.map((arg) => h("li", {}, h("code", { text: arg }))) : [h("li", { class: "argv-missing", text: "No launch command is known for this runtime." })];
    if (this.argvList.dataset.key !== argvKey(argv)) {
      this.argvList.replaceChildren(...items());
      this.argvList.dataset.key = argvKey(argv);
    }
    setText(this.reviveProfile, rt.profile === null ? "No Canon profile." : `Profile: ${rt.profile}`);
    this.confirmRevive.update({
      title: `Revive ${name}?`,
      confirmAria: `Confirm revive ${name}`,
      cancelAria: `Cancel revive ${name}`,
      open: this.confirming === "revive",
      unavailable: rt.revive.available ? null : (rt.revive.reason ?? "Revive is no longer available."),
    });
    this.confirmForget.update({
      title: `Forget ${name}?`,
      confirmAria: `Confirm forget ${name}`,
      cancelAria: `Cancel forget ${name}`,
      open: this.confirming === "forget",
      unavailable: rt.forget.available ? null : (rt.forget.reason ?? "Forget is no longer available."),
    });

    setText(this.noticeText, this.notice ?? "");
    this.noticeBox.set(this.notice !== null);
    setAttr(this.noticeDismiss, "aria-label", `Dismiss message for ${name}`);
    setText(this.errorText, this.error ?? "");
    this.errorBox.set(this.error !== null);
    setAttr(this.errorDismiss, "aria-label", `Dismiss error for ${name}`);
  }

  /** Re-renders the relative "since" time. */
  refreshTime(now: Date): void {
    const since = parseTime(this.rt.since);
    show(this.sinceEl, since !== null);
    if (since === null) return;
    setAttr(this.sinceEl, "datetime", since.toISOString());
    setAttr(this.sinceEl, "title", fullTime(since));
    setText(this.sinceEl, `since ${relativeTime(since, now)}`);
  }

  private buttonFor(action: RuntimeAction): HTMLButtonElement {
    return { attach: this.attachBtn, revive: this.reviveBtn, forget: this.forgetBtn }[action].button;
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

  private openConfirm(which: "revive" | "forget"): void {
    if (this.busy !== null) return;
    this.confirming = which;
    this.update(this.rt);
    (which === "revive" ? this.confirmRevive : this.confirmForget).focusDefault();
  }

  private closeConfirm(restoreFocus: boolean): void {
    const which = this.confirming;
    if (which === null) return;
    this.confirming = null;
    this.update(this.rt);
    if (restoreFocus) this.buttonFor(which).focus();
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

  private focusAfterMessage(): void {
    const target = [this.attachBtn, this.reviveBtn, this.forgetBtn].find((b) => b.button.getAttribute("aria-disabled") !== "true");
    (target ?? this.attachBtn).button.focus();
  }

  private async run(action: RuntimeAction): Promise<void> {
    if (this.busy !== null) return;
    this.busy = action;
    this.error = null;
    this.notice = null;
    this.update(this.rt);
    // Revive and forget start from a confirmation that just closed: keep focus
    // on the (now busy) button that opened it rather than losing it to <body>.
    if (action !== "attach") this.buttonFor(action).focus();
    try {
      if (action === "revive") {
        const outcome = await this.actions.revive(this.rt.id);
        this.notice = outcome.message;
      } else {
        await this.actions[action](this.rt.id);
      }
    } catch (err) {
      this.error = (err as CommandError).message;
    } finally {
      this.busy = null;
      this.update(this.rt);
    }
  }
}

function argvKey(argv: readonly string[]): string {
  return argv.join("\u0000");
}

interface ConfirmOptions {
  testId: string;
  confirmLabel: string;
  variant: "primary" | "danger";
  body: Node[];
  onConfirm(): void;
  onCancel(): void;
}

interface ConfirmState {
  title: string;
  confirmAria: string;
  cancelAria: string;
  open: boolean;
  /** Set when the action stopped being available while the panel was open. */
  unavailable: string | null;
}

/** An inline confirmation under a row: title, details, Cancel and Confirm. */
class ConfirmPanel {
  readonly slot: Slot<HTMLDivElement>;
  private readonly title: HTMLHeadingElement;
  private readonly confirm: HTMLButtonElement;
  private readonly cancel: HTMLButtonElement;
  private readonly unavailable: HTMLParagraphElement;
  private readonly defaultFocus: "confirm" | "cancel";

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
    // A destructive confirmation starts on Cancel, a constructive one on its action.
    this.defaultFocus = opts.variant === "danger" ? "cancel" : "confirm";
    const root = h(
      "div",
      { class: `confirm confirm-${opts.variant}`, attrs: { role: "group", "aria-labelledby": titleId, "data-testid": opts.testId } },
      this.title,
      ...opts.body,
      this.unavailable,
      h("div", { class: "confirm-actions" }, this.cancel, this.confirm),
    );
    this.slot = new Slot(root);
  }

  update(s: ConfirmState): void {
    this.slot.set(s.open);
    setText(this.title, s.title);
    setAttr(this.confirm, "aria-label", s.confirmAria);
    setAttr(this.cancel, "aria-label", s.cancelAria);
    setText(this.unavailable, s.unavailable ?? "");
    show(this.unavailable, s.unavailable !== null);
    setAttr(this.confirm, "aria-disabled", s.unavailable !== null ? "true" : null);
  }

  focusDefault(): void {
    (this.defaultFocus === "cancel" ? this.cancel : this.confirm).focus();
  }
}
