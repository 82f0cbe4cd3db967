// Issue 32 item 1: the window's "Connect Claude Code" through the real app, on a real settings
// file: the preview names the file, the entries and the backup; confirming writes exactly that,
// with the installed supercode-tray-hook beside the app as the hook's program, and keeps the user's
// own hook and keys; Disconnect takes out exactly what Connect added.

import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

import { assert, test } from './harness.mjs';
import { waitForText } from './support.mjs';

const USERS_OWN = {
  model: 'opus',
  hooks: { Stop: [{ hooks: [{ type: 'command', command: 'my-notifier' }] }] },
};

export async function env({ stateDir }) {
  const claude = `${stateDir}/claude`;
  await mkdir(claude, { recursive: true, mode: 0o700 });
  const settings = `${claude}/settings.json`;
  await writeFile(settings, JSON.stringify(USERS_OWN, null, 2));
  await chmod(settings, 0o600);
  return { CLAUDE_CONFIG_DIR: claude, CODEX_HOME: `${stateDir}/codex` };
}

const ROW = '[data-testid="agent-row"][data-agent="claude-code"]';

// Proves the window's Connect and Disconnect write exactly what their preview showed.
test('Connect Claude Code in the window shows the preview, then writes exactly it', async (t) => {
  const settings = `${t.env.CLAUDE_CONFIG_DIR}/settings.json`;
  const program = `${dirname(t.appExecutable)}/supercode-tray-hook`;
  const app = await t.openApp();
  await waitForText(app, `${ROW} [data-testid="agent-connection"]`, /^Not connected$/);
  await (await app.waitForElement(`${ROW} [data-testid="agent-connect"]`)).click();
  const preview = await waitForText(app, `${ROW} [data-testid="hooks-preview"]`, /supercode-tray-hook claude-code/);
  assert.ok(preview.includes(`Adds to "hooks" in ${settings}`), preview);
  assert.ok(preview.includes(`${program} claude-code`), `the hook runs the installed hook program: ${preview}`);
  const backup = await waitForText(app, `${ROW} [data-testid="hooks-backup"]`, /supercode-backup/);
  assert.ok(backup.includes(`${settings}.supercode-backup`), backup);
  assert.deepEqual(JSON.parse(await readFile(settings, 'utf8')), USERS_OWN, 'nothing is written before the confirmation');
  await t.screenshot(app, 'connect-preview');

  await (await app.find(`${ROW} [data-testid="confirm-accept"]`)).click();
  await waitForText(app, `${ROW} [data-testid="agent-connection"]`, /^Connected$/);
  await waitForText(app, `${ROW} [data-testid="agent-notice"]`, /Claude Code is connected/);
  const written = JSON.parse(await readFile(settings, 'utf8'));
  assert.equal(written.model, 'opus');
  assert.equal(written.hooks.Stop[0].hooks[0].command, 'my-notifier', "the user's own hook stays first");
  const ours = Object.values(written.hooks).flat().flatMap((g) => g.hooks).filter((h) => h.command !== 'my-notifier');
  assert.ok(ours.length > 0 && ours.every((h) => h.command === `${program} claude-code`), JSON.stringify(ours));
  assert.deepEqual(JSON.parse(await readFile(`${settings}.supercode-backup`, 'utf8')), USERS_OWN, 'the backup is the file as it was');
  assert.equal((await stat(settings)).mode & 0o777, 0o600);

  await (await app.waitForElement(`${ROW} [data-testid="agent-disconnect"]`)).click();
  await waitForText(app, `${ROW} [data-testid="hooks-preview"]`, /Removes from "hooks"/);
  await (await app.find(`${ROW} [data-testid="confirm-accept"]`)).click();
  await waitForText(app, `${ROW} [data-testid="agent-connection"]`, /^Not connected$/);
  assert.deepEqual(JSON.parse(await readFile(settings, 'utf8')), USERS_OWN, 'Disconnect takes out exactly what Connect added');
});
