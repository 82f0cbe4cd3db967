// Reconstructed from the @canonmsg/core 0.12.0 -> 0.13.0 diff (seed 004). Lines the diff does not
// show (the bodies of loadProfiles' try, isProcessAlive, and the tail of isProfileLocked) are
// filled in with the evident 0.12 code; everything the diff shows is copied verbatim.
/**
 * Shared agent profile management — loading, locking, and resolution.
 * Used by both host.ts and server.ts.
 */
import { readFileSync, renameSync, writeFileSync, unlinkSync, mkdirSync } from 'node:fs';
import { closeSync, openSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { homedir } from 'node:os';
// ── Paths ────────────────────────────────────────────────────────────
export const CANON_DIR = process.env.CANON_HOME
    ? resolve(process.env.CANON_HOME)
    : join(homedir(), '.canon');
export const AGENTS_PATH = join(CANON_DIR, 'agents.json');
export const LOCKS_DIR = join(CANON_DIR, 'locks');
export const PENDING_REGISTRATIONS_PATH = join(CANON_DIR, 'pending-registrations.json');
// ── Profile loading ──────────────────────────────────────────────────
export function loadProfiles() {
    try {
        return JSON.parse(readFileSync(AGENTS_PATH, 'utf-8'));
    }
    catch {
        return {};
    }
}
function writeJsonFile(path, value, mode = 0o600) {
    mkdirSync(CANON_DIR, { recursive: true });
    const tmpPath = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(tmpPath, JSON.stringify(value, null, 2), { mode });
    renameSync(tmpPath, path);
}
export function saveProfiles(profiles) {
    writeJsonFile(AGENTS_PATH, profiles, 0o600);
}
export function upsertAgentProfile(name, profile) {
    const profileName = name.trim();
    if (!profileName)
        throw new Error('Profile name is required');
    const profiles = loadProfiles();
    profiles[profileName] = profile;
    saveProfiles(profiles);
    return profiles;
}
// ── Process locking ──────────────────────────────────────────────────
export function isProcessAlive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    }
    catch {
        return false;
    }
}
export function isProfileLocked(profile) {
    const lockPath = join(LOCKS_DIR, `${profile}.lock`);
    try {
        const lock = parseLock(readFileSync(lockPath, 'utf-8'));
        const pid = lock?.pid;
        if (pid && isProcessAlive(pid))
            return { locked: true, pid };
        // Stale lock — clean it up
        try {
            unlinkSync(lockPath);
        }
        catch { }
    }
    catch {
        // No lock file
    }
    return { locked: false };
}
function parseLock(raw) {
    const trimmed = raw.trim();
    if (!trimmed)
        return null;
    const legacyPid = Number.parseInt(trimmed, 10);
    if (Number.isFinite(legacyPid) && String(legacyPid) === trimmed) {
        return { pid: legacyPid };
    }
    try {
        const data = JSON.parse(trimmed);
        return typeof data.pid === 'number'
            ? { pid: data.pid, token: typeof data.token === 'string' ? data.token : undefined }
            : null;
    }
    catch {
        return null;
    }
}
export function acquireLock(profile) {
    mkdirSync(LOCKS_DIR, { recursive: true });
    const lockPath = join(LOCKS_DIR, `${profile}.lock`);
    const token = randomUUID();
    const payload = JSON.stringify({
        pid: process.pid,
        token,
        acquiredAt: new Date().toISOString(),
    });
    for (let attempt = 0; attempt < 2; attempt += 1) {
        try {
            const fd = openSync(lockPath, 'wx', 0o600);
            try {
                writeFileSync(fd, payload);
            }
            finally {
                closeSync(fd);
            }
            return {
                profile,
                pid: process.pid,
                token,
                release: () => releaseLock(profile, token),
            };
        }
        catch (error) {
            if (error?.code !== 'EEXIST')
                throw error;
            const check = isProfileLocked(profile);
            if (check.locked) {
                throw new Error(`Agent "${profile}" is in use by another session (PID ${check.pid})`);
            }
        }
    }
    throw new Error(`Agent "${profile}" lock could not be acquired`);
}
export function releaseLock(profile, token) {
    const lockPath = join(LOCKS_DIR, `${profile}.lock`);
    if (token) {
        try {
            const lock = parseLock(readFileSync(lockPath, 'utf-8'));
            if (lock?.token && lock.token !== token)
                return;
        }
        catch {
            return;
        }
    }
    try {
        unlinkSync(lockPath);
    }
    catch { }
}
export function loadPendingRegistrations() {
    try {
        return JSON.parse(readFileSync(PENDING_REGISTRATIONS_PATH, 'utf-8'));
    }
    catch {
        return {};
    }
}
export function savePendingRegistrations(pending) {
    writeJsonFile(PENDING_REGISTRATIONS_PATH, pending, 0o600);
}
export function getOrCreatePendingRegistration(profile, clientType) {
    const now = new Date().toISOString();
    const pending = loadPendingRegistrations();
    const existing = pending[profile];
    if (existing) {
        const next = { ...existing, clientType, updatedAt: now };
        pending[profile] = next;
        savePendingRegistrations(pending);
        return next;
    }
    const created = {
        profile,
        clientType,
        localRegistrationId: randomUUID(),
        createdAt: now,
        updatedAt: now,
    };
    pending[profile] = created;
    savePendingRegistrations(pending);
    return created;
}
export function updatePendingRegistration(profile, patch) {
    const pending = loadPendingRegistrations();
    const existing = pending[profile] ?? {
        profile,
        localRegistrationId: randomUUID(),
        createdAt: new Date().toISOString(),
        updatedAt: new Date().toISOString(),
    };
    const next = {
        ...existing,
        ...patch,
        updatedAt: new Date().toISOString(),
    };
    pending[profile] = next;
    savePendingRegistrations(pending);
    return next;
}
export function clearPendingRegistration(profile) {
    const pending = loadPendingRegistrations();
    if (pending[profile]) {
        delete pending[profile];
        savePendingRegistrations(pending);
    }
}
