// The tray in a real panel (issue 15): xfce4-panel (panel.mjs) instead of the stand-in tray
// host, with a demo runtime asking for approval: the icon in the panel, its pixels changing
// with the runtime's state, its menu and the runtime's submenu opened and clicked with real X
// input.

import { join } from 'node:path';

import { listed, waitForAgentRow, waitForListed } from './agents.mjs';
import { assert, test } from './harness.mjs';
import {
  ICON_SHOWN_TIMEOUT_MS,
  captureScreen,
  clickEntry,
  cropToMenus,
  distinctColours,
  itemOf,
  menuLayoutText,
  moveAppWindowAside,
  openRuntimeSubmenu,
  regionPixels,
  startPanel,
  trayIcon,
  waitFor,
} from './panel.mjs';
import { canary, writePrivateFile } from './support.mjs';

/** How long the runtime works before it asks (`--phase-delay-ms`): time to see its live icon. */
const WORKING_PHASE_MS = 8_000;

const TOKEN = canary('token');
let tokenFile;

/** The panel runs before the app; the token file is written once. */
export async function env(ctx) {
  tokenFile = join(ctx.stateDir, 'secrets', 'token');
  await writePrivateFile(tokenFile, `${TOKEN}\n`);
  await startPanel(ctx);
  return {};
}

// Proves: the app's StatusNotifierItem is registered with xfce4-panel's own watcher and shown as
// an icon in its status tray; the icon's pixels change when the agent starts needing you; a
// right click with real X input maps the panel's menu of it, hovering the runtime's entry maps
// its submenu with the agent's actions (screenshot kept); and clicking Approve in that submenu
// reaches the runtime.
test('xfce4-panel shows the tray icon and its menu with the agent actions', async (t) => {
  const name = 'panel-agent';
  const app = await t.openApp();
  const pid = await t.appPid();
  await moveAppWindowAside(pid);
  const item = await itemOf(pid);
  assert.match(item.service, /^:\d+\.\d+/, 'the item registered under its bus connection');
  const { plugin, icon } = await trayIcon();

  // Idle (no runtime), then live (a runtime working), then needs-you (it asks for approval):
  // the icon's pixels change at each step.
  const drawn = async (label) => regionPixels(await captureScreen(join(t.artifactsDir, `${t.fileSlug}--${label}.png`)), icon);
  const idle = await drawn('idle');
  assert.ok(distinctColours(idle) > 1, 'the icon region is not blank');
  await t.startDemoRuntime(name, { args: ['--token-file', tokenFile, '--scenario', 'approval', '--phase-delay-ms', String(WORKING_PHASE_MS)] });
  await waitForAgentRow(app, `${name} to be working`, name, (r) => r.state === 'working');
  const live = await waitFor('the live icon to be drawn', async () => {
    const now = await drawn('live');
    return now.equals(idle) ? undefined : now;
  }, ICON_SHOWN_TIMEOUT_MS);
  await waitForAgentRow(app, `${name} to ask for approval`, name, (r) => r.state === 'needs-approval', WORKING_PHASE_MS + ICON_SHOWN_TIMEOUT_MS);
  await waitFor('the needs-you icon to be drawn', async () => {
    const now = await drawn('needs-you');
    return !now.equals(live) && !now.equals(idle);
  }, ICON_SHOWN_TIMEOUT_MS);
  const layout = await menuLayoutText(item);
  for (const label of ['cargo test --workspace', 'Approve', 'Deny\u2026', `${name} \u2014 Needs approval: Run the test suite?`]) {
    assert.ok(layout.includes(label), `the menu the panel reads holds "${label}"`);
  }

  // Right click on the icon: the panel shows the item's menu; the runtime that needs you is its
  // first entry, and hovering it opens its submenu.
  const { menu, submenu } = await openRuntimeSubmenu(icon);
  const shot = await captureScreen(join(t.artifactsDir, `${t.fileSlug}--menu.png`));
  for (const [what, region] of [['menu', menu], ['submenu', submenu]]) {
    assert.ok(distinctColours(await regionPixels(shot, region)) > 2, `the ${what} is drawn (not blank)`);
  }
  await cropToMenus(shot, { plugin, menu, submenu }, join(t.artifactsDir, `${t.fileSlug}--menu-cropped.png`));

  // The submenu holds the command (greyed out), Approve, Deny…, Attach: Approve is the second
  // of four (issue 31).
  await clickEntry(submenu, 1, 4);
  const entry = await waitForListed(t, `${name} to move on after Approve`, name, (e) => e.state?.value === 'working' || e.state?.value === 'needs-input');
  assert.ok(['working', 'needs-input'].includes(entry.state.value), 'Approve clicked in the panel reached the runtime');
  const done = await waitForAgentRow(app, `${name} to reach needs-input`, name, (r) => r.state === 'needs-input');
  assert.equal(done.title, 'Tests pass. Anything else?', 'it was approved, not denied');
  assert.equal((await listed(t, name)).state.value, 'needs-input');
});
