// One Canon registration request. Approval can take minutes (someone approves
// it in Canon), so the Approve button stays busy with a plain-words status
// until the backend answers; finished requests can only be dismissed. What can be
// done in each state comes with the view (`approve`, `dismiss`, `over`): the core
// decides it, this only renders it.
import type { CommandError, PendingView } from "../bindings";
import { h, icon, setAttr, Slot, setText, show, uid, type KeyedView } from "../dom";
import { fullTime, parseTime, pendingLabel, pendingTone, relativeTime } from "../format";
import { ActionButton } from "./action-button";

/** What a pending row needs from the app. */
export interface PendingActions {
  approve(profile: string): Promise<PendingView>;
  reject(profile: string): Promise<void>;
  now(): Date;
}

/** The Approve button's text and the start of its accessible name, by state. */
function approveLabels(state: PendingView["state"]): [string, string] {
  switch (state) {
    case "error":
      return ["Retry approval", "Retry approval of"];
    case "expired":
      return ["Resume approval", "Resume approval of"];
    default:
      return ["Approve", "Approve"];
  }
}

/** Shown on the Approve button while approval is in flight. */
export const WAITING_FOR_CANON = "Waiting for approval in Canon…";

/** The view of one registration request. */
export class PendingRow implements KeyedView<PendingView> {
  readonly root: HTMLLIElement;
  private p: PendingView;
  private busy: "approve" | "reject" | null = null;
  private error: string | null = null;
  private readonly nameEl: HTMLHeadingElement;
  private readonly badge: HTMLSpanElement;
  private readonly clientEl: HTMLSpanElement;
  private readonly clientSep: HTMLSpanElement;
  private readonly requestedEl: HTMLTimeElement;
  private readonly messageEl: HTMLParagraphElement;
  private readonly approveBtn: ActionButton;
  private readonly rejectBtn: ActionButton;
  private readonly errorBox: Slot<HTMLDivElement>;
  private readonly errorText: HTMLSpanElement;
  private readonly errorDismiss: HTMLButtonElement;

  constructor(p: PendingView, private readonly actions: PendingActions) {
    this.p = p;
    const nameId = uid("pending-name");
    this.nameEl = h("h3", { class: "row-name", attrs: { id: nameId } });
    this.badge = h("span", { class: "badge" });
    this.clientEl = h("span", { class: "kind" });
    this.clientSep = h("span", { class: "sep", text: "·", attrs: { "aria-hidden": "true" } });
    this.requestedEl = h("time", { class: "requested" });
    this.messageEl = h("p", { class: "row-reason" });
    this.approveBtn = new ActionButton("action-approve", () => void this.run("approve"));
    this.rejectBtn = new ActionButton("action-reject", () => void this.run("reject"));
    this.errorText = h("span", { class: "msg-text" });
    this.errorDismiss = h(
      "button",
      {
        class: "icon-btn",
        attrs: { type: "button" },
        on: {
          click: () => {
            this.error = null;
            this.update(this.p);
            this.rejectBtn.button.focus();
          },
        },
      },
      icon("close"),
    );
    this.errorBox = new Slot(h("div", { class: "msg msg-error", attrs: { role: "alert", "data-testid": "row-error" } }, icon("warning", "icon msg-icon"), this.errorText, this.errorDismiss));
    this.root = h(
      "li",
      { class: "row pending-row", attrs: { "data-testid": "pending-row", "aria-labelledby": nameId } },
      h("div", { class: "row-head" }, h("span", { class: "dot", attrs: { "aria-hidden": "true" } }), this.nameEl, this.badge),
      h("p", { class: "row-meta" }, this.clientEl, this.clientSep, this.requestedEl),
      this.messageEl,
      h("div", { class: "row-foot row-foot-end" }, h("div", { class: "actions" }, this.approveBtn.root, this.rejectBtn.root)),
      this.errorBox.anchor,
    );
    this.update(p);
  }

  /** Patches the row to show `p`, keeping its busy and error state. */
  update(p: PendingView): void {
    this.p = p;
    const profile = p.profile;
    setAttr(this.root, "data-profile", profile);
    setAttr(this.root, "data-state", pendingTone(p.state));
    setText(this.nameEl, profile);
    this.badge.className = `badge tone-${pendingTone(p.state)}`;
    setText(this.badge, pendingLabel(p.state));
    setText(this.clientEl, p.clientType ?? "unknown client");
    this.refreshTime(this.actions.now());
    setText(this.messageEl, p.message ?? "");
    show(this.messageEl, p.message !== null && p.message !== "");

    const final = p.over;
    // The backend may already be approving (the window was reopened mid-approval).
    const approving = this.busy === "approve" || p.state === "approving";
    show(this.approveBtn.root, !final);
    const [approveLabel, approveAria] = approveLabels(p.state);
    this.approveBtn.update({
      label: approveLabel,
      ariaLabel: `${approveAria} ${profile}`,
      available: approving || p.approve.available,
      reason: approving ? null : p.approve.reason,
      busy: approving,
      busyLabel: WAITING_FOR_CANON,
      blocked: this.busy === "reject",
      variant: "primary",
    });
    const verb = final ? "Dismiss" : "Reject";
    this.rejectBtn.update({
      label: verb,
      ariaLabel: `${verb} ${profile}`,
      available: p.dismiss.available,
      reason: p.dismiss.reason,
      busy: this.busy === "reject",
      busyLabel: final ? "Dismissing…" : "Rejecting…",
      // Rejecting while approval is in flight cancels the request, so it stays usable.
      blocked: false,
      variant: "secondary",
    });
    setText(this.errorText, this.error ?? "");
    this.errorBox.set(this.error !== null);
    setAttr(this.errorDismiss, "aria-label", `Dismiss error for ${profile}`);
  }

  /** Re-renders "requested <relative time>". */
  refreshTime(now: Date): void {
    const created = parseTime(this.p.createdAt);
    show(this.clientSep, created !== null);
    show(this.requestedEl, created !== null);
    if (created === null) return;
    setAttr(this.requestedEl, "datetime", created.toISOString());
    setAttr(this.requestedEl, "title", fullTime(created));
    setText(this.requestedEl, `requested ${relativeTime(created, now)}`);
  }

  private async run(action: "approve" | "reject"): Promise<void> {
    if (this.busy === action) return;
    this.busy = action;
    this.error = null;
    this.update(this.p);
    try {
      if (action === "approve") {
        const next = await this.actions.approve(this.p.profile);
        if (next.profile === this.p.profile) this.p = next;
      } else {
        await this.actions.reject(this.p.profile);
      }
    } catch (err) {
      this.error = (err as CommandError).message;
    } finally {
      if (this.busy === action) this.busy = null;
      this.update(this.p);
    }
  }
}
