// One row action (Attach, Revive, Approve, ...). An unavailable action stays
// in the tab order with aria-disabled so keyboard and screen-reader users can
// still reach it and hear why: its reason is a real text element, shown as a
// tooltip on hover and focus and linked with aria-describedby.
import { h, setAttr, setText, show, uid } from "../dom";

/** How a button looks when it can run. */
export type Variant = "primary" | "secondary" | "danger";

/** The state a row asks its button to show. */
export interface ActionState {
  /** Visible text when idle. */
  label: string;
  /** Accessible name, including the runtime or profile it acts on ("Attach demo-a"). */
  ariaLabel: string;
  /** The backend says the action can run. */
  available: boolean;
  /** Why it cannot run, when it cannot. */
  reason: string | null;
  /** This action is in flight. */
  busy: boolean;
  /** Visible text while in flight. */
  busyLabel: string;
  /** Another action of the same row is in flight. */
  blocked: boolean;
  variant: Variant;
}

/** A button with busy and unavailable states. */
export class ActionButton {
  readonly root: HTMLSpanElement;
  readonly button: HTMLButtonElement;
  private readonly label: HTMLSpanElement;
  private readonly spinner: HTMLSpanElement;
  private readonly tip: HTMLSpanElement;
  private readonly tipId = uid("tip");

  constructor(testId: string, onPress: () => void) {
    this.spinner = h("span", { class: "spinner", attrs: { "aria-hidden": "true" } });
    this.label = h("span", { class: "btn-label" });
    this.button = h(
      "button",
      {
        class: "btn",
        attrs: { type: "button", "data-testid": testId },
        on: {
          click: () => {
            if (this.button.getAttribute("aria-disabled") !== "true") onPress();
          },
        },
      },
      this.spinner,
      this.label,
    );
    this.tip = h("span", { class: "tip", attrs: { role: "tooltip", id: this.tipId } });
    this.tip.hidden = true;
    this.root = h("span", { class: "action" }, this.button, this.tip);
  }

  /** Patches the button to show `s`. */
  update(s: ActionState): void {
    const inert = !s.available || s.busy || s.blocked;
    this.button.className = `btn btn-${s.variant}${s.available ? "" : " is-unavailable"}${s.busy ? " is-busy" : ""}`;
    setText(this.label, s.busy ? s.busyLabel : s.label);
    setAttr(this.button, "aria-label", s.ariaLabel);
    setAttr(this.button, "aria-disabled", inert ? "true" : null);
    setAttr(this.button, "aria-busy", s.busy ? "true" : null);
    show(this.spinner, s.busy);
    const reason = !s.available ? (s.reason ?? "Not available right now.") : null;
    setText(this.tip, reason ?? "");
    show(this.tip, reason !== null);
    setAttr(this.button, "aria-describedby", reason !== null ? this.tipId : null);
  }
}
