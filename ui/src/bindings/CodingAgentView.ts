// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { ActionAvailability } from "./ActionAvailability";
import type { AgentConnection } from "./AgentConnection";

export type CodingAgentView = { 
/**
 * Its name on the command line (`claude-code`), which the window sends back.
 */
agent: string, 
/**
 * Its name for people ("Claude Code").
 */
title: string, 
/**
 * The settings file our hooks go in.
 */
settings: string, 
/**
 * Whether it is connected.
 */
connection: AgentConnection, 
/**
 * The state for people ("connected", "partly connected (missing: Stop)", the problem...).
 */
summary: string, 
/**
 * For an agent that runs only hooks the user trusted in it (Codex): what is still to do
 * there, if anything; `None` when nothing is.
 */
trust: string | null, 
/**
 * Whether Connect applies (it adds what is missing) and why not.
 */
connect: ActionAvailability, 
/**
 * Whether Disconnect applies (it removes what Connect added) and why not.
 */
disconnect: ActionAvailability, };
