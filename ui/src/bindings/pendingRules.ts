// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { PendingState } from "./PendingState";
import type { PendingView } from "./PendingView";

/** What the core decides for a registration in each state (`PendingView::new`). */
export const PENDING_RULES: Record<PendingState, Pick<PendingView, "approve" | "dismiss" | "over">> = {
  "unsubmitted": {"approve":{"available":true,"reason":null,"applies":true},"dismiss":{"available":true,"reason":null,"applies":true},"over":false},
  "waiting": {"approve":{"available":true,"reason":null,"applies":true},"dismiss":{"available":true,"reason":null,"applies":true},"over":false},
  "approving": {"approve":{"available":false,"reason":"Canon is finishing the approval.","applies":true},"dismiss":{"available":true,"reason":null,"applies":true},"over":false},
  "approved": {"approve":{"available":false,"reason":"It is already approved; the profile was saved.","applies":true},"dismiss":{"available":true,"reason":null,"applies":true},"over":true},
  "rejected": {"approve":{"available":false,"reason":"It was rejected in Canon; dismiss it, and register the agent again if you still want it.","applies":true},"dismiss":{"available":true,"reason":null,"applies":true},"over":true},
  "expired": {"approve":{"available":true,"reason":null,"applies":true},"dismiss":{"available":true,"reason":null,"applies":true},"over":false},
  "error": {"approve":{"available":true,"reason":null,"applies":true},"dismiss":{"available":true,"reason":null,"applies":true},"over":false},
};
