// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { PendingState } from "./PendingState";
import type { PendingView } from "./PendingView";

/** What the core decides for a registration in each state (`PendingView::new`). */
export const PENDING_RULES: Record<PendingState, Pick<PendingView, "approve" | "dismiss" | "over">> = {
  "unsubmitted": {"approve":{"available":true,"reason":null},"dismiss":{"available":true,"reason":null},"over":false},
  "waiting": {"approve":{"available":true,"reason":null},"dismiss":{"available":true,"reason":null},"over":false},
  "approving": {"approve":{"available":false,"reason":"Canon is finishing the approval."},"dismiss":{"available":true,"reason":null},"over":false},
  "approved": {"approve":{"available":false,"reason":"It is already approved; the profile was saved."},"dismiss":{"available":true,"reason":null},"over":true},
  "rejected": {"approve":{"available":false,"reason":"It was rejected in Canon; dismiss it, and register the agent again if you still want it."},"dismiss":{"available":true,"reason":null},"over":true},
  "expired": {"approve":{"available":true,"reason":null},"dismiss":{"available":true,"reason":null},"over":false},
  "error": {"approve":{"available":true,"reason":null},"dismiss":{"available":true,"reason":null},"over":false},
};
