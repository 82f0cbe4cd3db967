// Test driver: runs one call of the reference implementation against $CANON_HOME.
// Request on the first stdin line: {"cmd": "...", "args": [...]}; answer on stdout as one JSON
// line: {"ok": <result>} or {"error": "<message>"}. Secrets travel on stdin/stdout only.
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';

const rl = createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const first = await lines.next();
const { cmd, args = [] } = JSON.parse(first.value);
const profiles = await import('./agent-profiles.js');
const catalog = await import('./local-runtime-catalog.js');

function reply(value) {
  process.stdout.write(JSON.stringify(value) + '\n');
}

try {
  switch (cmd) {
    case 'stringifyFile': {
      // What JSON.stringify(JSON.parse(file), null, 2) gives: our writes must equal it byte for byte.
      const text = readFileSync(args[0], 'utf-8');
      reply({ ok: JSON.stringify(JSON.parse(text), null, 2) });
      break;
    }
    case 'stringifyCompactFile': {
      const text = readFileSync(args[0], 'utf-8');
      reply({ ok: JSON.stringify(JSON.parse(text)) });
      break;
    }
    case 'buildLocalRuntimeIds':
      // Many ids in one process (spawning Node per id is slow).
      reply({ ok: args[0].map((input) => catalog.buildLocalRuntimeId(input)) });
      break;
    case 'paths':
      reply({ ok: { CANON_DIR: profiles.CANON_DIR, RUNTIMES_DIR: catalog.RUNTIMES_DIR } });
      break;
    case 'holdLock': {
      // Acquire, report, hold until stdin closes, then release through the handle.
      const handle = profiles.acquireLock(args[0]);
      reply({ ok: { pid: handle.pid, token: handle.token } });
      for await (const _ of lines) { /* wait for EOF */ }
      handle.release();
      break;
    }
    case 'acquireLock': {
      const handle = profiles.acquireLock(args[0]);
      reply({ ok: { pid: handle.pid, token: handle.token } });
      break;
    }
    default: {
      const fn = profiles[cmd] ?? catalog[cmd];
      if (typeof fn !== 'function') throw new Error(`unknown command ${cmd}`);
      const result = fn(...args);
      reply({ ok: result === undefined ? null : result });
    }
  }
} catch (error) {
  reply({ error: String(error?.message ?? error) });
}
rl.close();
