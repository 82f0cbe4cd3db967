// Copied verbatim from the @canonmsg/core 0.13.0 diff (seed 004): a new file, every line shown.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync, } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { CANON_DIR, isProcessAlive, isProfileLocked, loadProfiles } from './agent-profiles.js';
export const RUNTIMES_DIR = join(CANON_DIR, 'runtimes');
const LEGACY_CODEX_SESSIONS_PATH = join(CANON_DIR, 'codex-sessions.json');
function shortHash(value) {
    return createHash('sha256').update(value).digest('hex').slice(0, 16);
}
function safeRuntimeFileName(id) {
    return `${shortHash(id)}.json`;
}
function runtimePath(id) {
    return join(RUNTIMES_DIR, safeRuntimeFileName(id));
}
function writeJsonAtomic(path, value) {
    mkdirSync(RUNTIMES_DIR, { recursive: true });
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(tmp, JSON.stringify(value, null, 2), { mode: 0o600 });
    renameSync(tmp, path);
}
export function buildLocalRuntimeId(input) {
    const profile = input.profile ?? 'manual';
    return `${input.runtime}:${profile}:${shortHash(`${resolve(input.cwd)}:${(input.launchCommand ?? []).join('\0')}`)}`;
}
export function readLocalRuntimeEntry(id) {
    try {
        const parsed = JSON.parse(readFileSync(runtimePath(id), 'utf-8'));
        return parsed.id === id ? parsed : null;
    }
    catch {
        return null;
    }
}
export function upsertLocalRuntimeEntry(entry) {
    const existing = readLocalRuntimeEntry(entry.id);
    const next = {
        ...existing,
        ...entry,
        sessions: {
            ...(existing?.sessions ?? {}),
            ...(entry.sessions ?? {}),
        },
    };
    writeJsonAtomic(runtimePath(entry.id), next);
    return next;
}
export function heartbeatLocalRuntimeEntry(id, patch = {}) {
    const existing = readLocalRuntimeEntry(id);
    if (!existing)
        return null;
    return upsertLocalRuntimeEntry({
        ...existing,
        ...patch,
        id,
        status: 'running',
        pid: patch.pid ?? process.pid,
        lastHeartbeatAt: new Date().toISOString(),
    });
}
export function markLocalRuntimeStopped(id, patch = {}) {
    const existing = readLocalRuntimeEntry(id);
    if (!existing)
        return null;
    return upsertLocalRuntimeEntry({
        ...existing,
        ...patch,
        id,
        status: existing.reviveCapability === 'embedded' ? 'embedded' : 'offline',
        pid: undefined,
        lastStoppedAt: new Date().toISOString(),
    });
}
export function removeLocalRuntimeEntry(id) {
    try {
        unlinkSync(runtimePath(id));
    }
    catch { }
}
function deriveRuntimeState(entry) {
    let status = entry.status;
    if (status === 'running' && entry.pid && !isProcessAlive(entry.pid)) {
        status = 'stale';
    }
    const profiles = loadProfiles();
    let reviveCapability = entry.reviveCapability;
    if (entry.profile && !profiles[entry.profile]) {
        reviveCapability = 'missing-profile';
    }
    return { ...entry, status, reviveCapability };
}
export function listLocalRuntimeEntries(options = {}) {
    if (!existsSync(RUNTIMES_DIR))
        return [];
    const entries = [];
    for (const name of readdirSync(RUNTIMES_DIR)) {
        if (!name.endsWith('.json'))
            continue;
        try {
            const entry = JSON.parse(readFileSync(join(RUNTIMES_DIR, name), 'utf-8'));
            if (options.runtime && entry.runtime !== options.runtime)
                continue;
            entries.push(deriveRuntimeState(entry));
        }
        catch {
            // Ignore corrupt breadcrumbs; they should not block the manager.
        }
    }
    return entries.sort((a, b) => {
        const at = a.lastHeartbeatAt ?? a.lastStartedAt ?? a.lastStoppedAt ?? '';
        const bt = b.lastHeartbeatAt ?? b.lastStartedAt ?? b.lastStoppedAt ?? '';
        return bt.localeCompare(at);
    });
}
function sessionKey(input) {
    return shortHash([
        input.conversationId,
        resolve(input.baseCwd),
        input.executionMode ?? 'unknown',
        input.workspaceId ?? '',
    ].join('\0'));
}
export function loadRuntimeSessionState(runtimeId, input) {
    migrateLegacyCodexSessions(runtimeId);
    const entry = readLocalRuntimeEntry(runtimeId);
    return entry?.sessions?.[sessionKey(input)] ?? null;
}
export function saveRuntimeSessionState(runtimeId, input) {
    const entry = readLocalRuntimeEntry(runtimeId);
    if (!entry) {
        throw new Error(`Runtime catalog entry not found: ${runtimeId}`);
    }
    const key = sessionKey(input);
    const existingState = entry.sessions?.[key];
    const nextState = {
        ...existingState,
        ...input,
        updatedAt: new Date().toISOString(),
    };
    upsertLocalRuntimeEntry({
        ...entry,
        sessions: {
            ...(entry.sessions ?? {}),
            [key]: nextState,
        },
    });
    return nextState;
}
export function clearRuntimeSessionState(runtimeId, input) {
    const entry = readLocalRuntimeEntry(runtimeId);
    if (!entry?.sessions)
        return;
    const sessions = { ...entry.sessions };
    if (input.baseCwd) {
        delete sessions[sessionKey({
            conversationId: input.conversationId,
            baseCwd: input.baseCwd,
            executionMode: input.executionMode,
            workspaceId: input.workspaceId,
        })];
    }
    else {
        for (const [key, state] of Object.entries(sessions)) {
            if (state.conversationId === input.conversationId)
                delete sessions[key];
        }
    }
    upsertLocalRuntimeEntry({ ...entry, sessions });
}
function migrateLegacyCodexSessions(runtimeId) {
    if (!existsSync(LEGACY_CODEX_SESSIONS_PATH))
        return;
    const entry = readLocalRuntimeEntry(runtimeId);
    if (!entry || entry.runtime !== 'codex')
        return;
    try {
        const legacy = JSON.parse(readFileSync(LEGACY_CODEX_SESSIONS_PATH, 'utf-8'));
        const agentSessions = entry.agentId ? legacy.agents?.[entry.agentId] : null;
        if (!agentSessions)
            return;
        const sessions = { ...(entry.sessions ?? {}) };
        for (const [conversationId, state] of Object.entries(agentSessions)) {
            const baseCwd = state.cwd;
            sessions[sessionKey({ conversationId, baseCwd })] = {
                conversationId,
                baseCwd,
                threadId: state.threadId,
                updatedAt: state.updatedAt,
            };
        }
        upsertLocalRuntimeEntry({ ...entry, sessions });
    }
    catch {
        return;
    }
}
export function describeProfileLock(profile) {
    const lock = isProfileLocked(profile);
    return lock.locked ? `locked by PID ${lock.pid}` : 'available';
}
