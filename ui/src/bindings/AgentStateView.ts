// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { AgentActionView } from "./AgentActionView";
import type { AgentState } from "./AgentState";
import type { ControllerView } from "./ControllerView";

export type AgentStateView = { 
/**
 * The state.
 */
value: AgentState, 
/**
 * What it is doing or asking, for people; `None` while `unknown`.
 */
title: string | null, 
/**
 * More about it (e.g. the command it wants to run); may contain line breaks.
 */
detail: string | null, 
/**
 * When it entered this state (RFC 3339), as the runtime said or the tray saw.
 */
since: string | null, 
/**
 * The actions it offers now, in order; empty unless the runtime answers.
 */
actions: Array<AgentActionView>, 
/**
 * Which client drives it; `None` while `unknown` or `not-answering`.
 */
controller: ControllerView | null, 
/**
 * How many clients other than this tray watch it; `None` while `unknown` or
 * `not-answering`. The runtime counts every open status stream, the tray's own included
 * (`docs/runtime-api.md`); a document read over that stream is counted without it, so no
 * shell shows "1 watching" for the tray itself (issue 31).
 */
observers: number | null, 
/**
 * The `revision` of the status document this view shows; `None` without one. A shell that
 * invokes one of `actions` sends it back, and the core refuses the action
 * ([`Refusal::PromptChanged`](crate::Refusal::PromptChanged)) once the runtime's prompt
 * changed after it: what the user acts on is what they were shown.
 */
revision: number | null, };
