// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { AgentState } from "./AgentState";

/** What the core decides for an agent in each state (`AgentState::needs_you`, `is_trouble`, `urgency`: lower sorts first). */
export const AGENT_RULES: Record<AgentState, { needsYou: boolean, trouble: boolean, urgency: number }> = {
  "working": {"needsYou":false,"trouble":false,"urgency":4},
  "needs-approval": {"needsYou":true,"trouble":false,"urgency":0},
  "needs-input": {"needsYou":true,"trouble":false,"urgency":1},
  "idle": {"needsYou":false,"trouble":false,"urgency":5},
  "error": {"needsYou":true,"trouble":true,"urgency":2},
  "unknown": {"needsYou":false,"trouble":false,"urgency":6},
  "not-answering": {"needsYou":false,"trouble":true,"urgency":3},
};
