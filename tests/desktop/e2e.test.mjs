// End-to-end tests of the desktop app in a real WebKitGTK window: Xvfb + WebKitWebDriver,
// driven through tauri-driver, against a real callsign-server on 127.0.0.1.
// Run by scripts/test-desktop.sh (which builds everything and starts Xvfb).
//
// One story, as a new user meets the app: a fresh data dir with no server; captures saved at
// once in the local inbox; a server set up in Settings and the inbox sent to its project; a task
// the server refuses, fixed from the app; an outage and the keys arriving when the server is
// back; then the keyboard (complete and Ctrl+Z), the filter syntax and the jump box; due dates
// and priorities; subtasks and the Next view; a numbered task moved to another project, its new
// key arriving in place and its old key still opening it; last, a second device (the app on a
// fresh data dir) joining the team from Settings with an owner's invite code, and what it
// captures for itself with `@bob`: the badge, who created it, the Assigned to me view; a task
// the owner adds with the CLI reaching the open app on its own (the held change request), and
// the Standup view with both members' lines. Before that, a Jira export imported from Settings
// with its numbers kept (issue 42), and a commit made through the git hooks completing one of
// its tasks (issue 43). Each state is screenshotted into target/desktop-e2e/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { remote } from 'webdriverio';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'target', 'debug');
const SHOTS = path.join(ROOT, 'target', 'desktop-e2e');
const DRIVER_PORT = 4444;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitForPort(port, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.end(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`nothing listening on 127.0.0.1:${port} after ${ms} ms`);
}

/** Polls `f` until it returns a truthy value; fails with `what` after `ms`. */
async function eventually(what, ms, f) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await f();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'callsign-desktop-e2e-'));
const APP_LOG = path.join(tmp, 'app.log');

/** The last `n` lines of the app's log, for a failure's message. */
function appLogTail(n) {
  const lines = fs.readFileSync(APP_LOG, 'utf8').trimEnd().split('\n');
  return lines.slice(-n).join('\n');
}
const serverDir = path.join(tmp, 'server');
const clientDir = path.join(tmp, 'client');
let port;
let token;
let server;
let driver;
let browser;

function startServer(listen = port) {
  server = spawn(path.join(BIN, 'callsign-server'),
    ['serve', '--data-dir', serverDir, '--listen', `127.0.0.1:${listen}`],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RUST_LOG: 'warn' } });
  return waitForPort(listen, 15000);
}

/** Stops a process this file spawned and waits for its exit (none to wait for if it has exited). */
async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function stopServer() {
  await stop(server);
  server = null;
}

const cli = (...args) => execFileSync(path.join(BIN, 'callsign'), ['--data-dir', clientDir, ...args]).toString();

async function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  // The screenshot is the last painted frame: let what the test just read reach the screen.
  await browser.executeAsync((done) => requestAnimationFrame(() => requestAnimationFrame(() => done())));
  await sleep(100);
  await browser.saveScreenshot(path.join(SHOTS, `${name}.png`));
}

// Reads go through script execution (textContent, data attributes): element-level WebDriver
// reads are unreliable on WebKitWebDriver.
const rows = () => browser.execute(() => [...document.querySelectorAll('[data-testid="task-row"]')].map((r) => ({
  uuid: r.dataset.uuid,
  key: r.dataset.key ?? null,
  state: r.dataset.syncState,
  text: r.textContent,
  selected: r.getAttribute('aria-selected') === 'true',
  marker: r.querySelector('[data-testid="provisional-marker"]')?.textContent.trim() ?? null,
  failure: r.querySelector('[data-testid="row-failure"]')?.textContent.trim() ?? null,
})));
const textOf = (testid) => browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? null, testid);
const exists = (testid) => browser.execute((id) => document.querySelector(`[data-testid="${id}"]`) !== null, testid);
const click = (selector) => browser.execute((s) => {
  const el = document.querySelector(s);
  if (!el) throw new Error(`no ${s}`);
  el.click();
}, selector);
/** Sets a <select> or <input> by testid as a user would (value, then the input/change events). */
const setField = (testid, value) => browser.execute((id, v) => {
  const el = document.querySelector(`[data-testid="${id}"]`);
  if (!el) throw new Error(`no ${id}`);
  el.value = v;
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
}, testid, value);
const detailUuid = () => browser.execute(() => document.querySelector('[data-testid="task-detail"]')?.dataset.uuid ?? null);

async function rowByText(text) {
  return (await rows()).find((r) => r.text.includes(text)) ?? null;
}

/** Selects the row holding `text` (a click) and puts the focus on the list, as a user would. */
async function selectRow(text) {
  const r = await eventually(`a row with "${text}"`, 10000, () => rowByText(text));
  await click(`[data-testid="task-row"][data-uuid="${r.uuid}"]`);
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  return r;
}

async function capture(text) {
  const input = await browser.$('[data-testid="capture"]');
  await input.setValue(text);
  await browser.keys('Enter');
  await eventually(`"${text}" captured`, 10000, async () => (await textOf('task-list'))?.includes(text.split(' #')[0].split(' +')[0]));
}

/**
 * Starts tauri-driver and the app on `dataDir` (the app reads CALLSIGN_DATA_DIR from the
 * driver's environment), as a new user's first launch: the web view's own storage (theme,
 * density) under the temp dir too, so every run starts from the defaults.
 */
async function openApp(dataDir, xdg) {
  // The app's log (its sync engine's passes too) goes to a file; a failure quotes its end.
  const log = fs.openSync(APP_LOG, 'a');
  driver = spawn('tauri-driver', ['--port', String(DRIVER_PORT), '--native-port', '4445'],
    { stdio: ['ignore', 'inherit', log], env: { ...process.env, CALLSIGN_DATA_DIR: dataDir, XDG_DATA_HOME: xdg, RUST_LOG: 'warn,callsign_sync=info', NO_COLOR: '1' } });
  fs.closeSync(log);
  await waitForPort(DRIVER_PORT, 15000);
  browser = await remote({
    hostname: '127.0.0.1',
    port: DRIVER_PORT,
    logLevel: 'warn',
    capabilities: {
      browserName: 'wry',
      'wdio:enforceWebDriverClassic': true,
      'tauri:options': { application: path.join(BIN, 'callsign-desktop') },
    },
  });
  await browser.setWindowSize(1280, 800).catch(() => {});
}

/** A live process as /proc shows it; null once it has exited (a zombie has: it holds no files). */
function proc(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // After the name in parentheses (which may hold spaces): state, ppid, then from field 5 on.
  const [state, ppid, ...rest] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (state === 'Z') return null;
  return { pid, ppid: Number(ppid), start: rest[17], name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) };
}

/** The processes descending from `pid` now, each with its start time (a pid can be reused). */
function descendants(pid) {
  const all = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map((d) => proc(Number(d))).filter(Boolean);
  const found = [];
  for (let parents = new Set([pid]); parents.size;) {
    const children = all.filter((p) => parents.has(p.ppid));
    found.push(...children);
    parents = new Set(children.map((p) => p.pid));
  }
  return found;
}

const running = (p) => proc(p.pid)?.start === p.start;

/** The app and the WebKit processes it started: what runs under tauri-driver's WebKitWebDriver. */
const appProcesses = () => descendants(driver.pid).filter((p) => p.ppid !== driver.pid);

/** Waits until every one of `procs` has exited; fails naming those still running after `ms`. */
async function exited(what, procs, ms) {
  const deadline = Date.now() + ms;
  for (let left = procs.filter(running); left.length; left = left.filter(running)) {
    if (Date.now() > deadline) {
      throw new Error(`${what}: still running after ${ms} ms: ${left.map((p) => `${p.name} (${p.pid})`).join(', ')}`);
    }
    await sleep(100);
  }
}

/**
 * Deletes the WebDriver session. After the app has quit on its own (the tray's Quit) the session
 * has no browser left, and WebKitWebDriver ends it all the same: any error here is a real one.
 */
async function endSession() {
  const b = browser;
  browser = null;
  await b?.deleteSession();
}

/**
 * Ends the app: the WebDriver session, tauri-driver, and every process under them, and waits
 * until all of them have exited. Nothing of the app may outlive this: it would write into the
 * temp dirs being removed, and it holds this file's stderr (tauri-driver, spawned with `inherit`,
 * passes it on), which `node --test` reads to its end before it exits: the run, every test
 * passed, would wait for an app that only dies with Xvfb, until `timeout` kills it.
 *
 * Deleting the session does not always end the app: WebKitWebDriver kills the browser process
 * then only if it has not yet seen the app's automation connection close, and closing the web
 * view closes it, a race WebKitWebDriver can lose. The app, which does not quit when automation
 * closes its web view, then stays up, an orphan once tauri-driver takes WebKitWebDriver down.
 * So whatever is left is killed here, as WebKitWebDriver kills it when it wins.
 */
async function closeApp() {
  const procs = driver ? descendants(driver.pid) : [];
  try {
    await endSession();
  } finally {
    if (driver) await stop(driver);
    driver = null;
    for (const p of procs.filter(running)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch (e) {
        if (e.code !== 'ESRCH') throw e; // it exited in between
      }
    }
    await exited('the app and its driver', procs, 10000);
  }
}

before(async () => {
  port = await freePort();
  const acct = JSON.parse(execFileSync(path.join(BIN, 'callsign-server'),
    ['account', 'create', '--data-dir', serverDir, '--name', 'e2e', '--prefix', 'PFX']).toString());
  token = acct.token;
  // A fresh data dir: no login, no server running.
  await openApp(clientDir, path.join(tmp, 'xdg'));
});

after(async () => {
  try {
    await closeApp();
  } finally {
    if (server) await stopServer();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('no server: a capture is saved at once in the local inbox and the app says so', async () => {
  const input = await browser.$('[data-testid="capture"]');
  await input.waitForDisplayed({ timeout: 15000 });
  const focused = await browser.execute(() => document.activeElement?.dataset?.testid ?? null);
  assert.equal(focused, 'capture', 'quick capture is focused on start');
  await eventually('the empty list, local only', 10000, async () =>
    /no tasks yet/i.test((await textOf('list-empty')) ?? '') && /local only/i.test((await textOf('sync-text')) ?? ''));
  await shot('01-empty');
  await capture('Write the docs +docs');
  await capture('Plan the release');
  const list = await eventually('two local rows', 10000, async () => {
    const rs = await rows();
    return rs.length === 2 && rs.every((r) => /inbox/i.test(r.marker ?? '')) ? rs : null;
  });
  assert.match(list[0].text, /Plan the release/, 'newest at the top');
  assert.equal(await exists('error-banner'), false, 'no "Not saved"');
  assert.match(await textOf('sync-text'), /local only/i);
  // Saved in the store, not only shown: the CLI on the same data dir reads them.
  const saved = JSON.parse(cli('--json', 'list'));
  assert.deepEqual(saved.map((t) => [t.project, t.local]).sort(), [['INBOX', true], ['INBOX', true]]);
  await shot('02-local-inbox');
  // Assigned to me, with no member to be: it says why instead of showing an empty list.
  await click('[data-testid="sidebar-mine"]');
  await eventually('the no-member line', 5000, async () => /log in or join a team/.test((await textOf('list-empty')) ?? ''));
  assert.equal((await rows()).length, 0);
  await shot('02b-assigned-to-me-no-member');
  // The standup, with no team to report on: it says why, and how to get one.
  await click('[data-testid="sidebar-standup"]');
  const noTeam = await eventually('the no-team line', 5000, () => textOf('standup-no-team'));
  assert.match(noTeam, /isn't signed in to a team: log in or join a team \(Settings\)/);
  assert.equal(await exists('task-list'), false, 'the standup is in the list\'s place');
  await shot('02c-standup-no-team');
  await click('[data-testid="sidebar-all"]');
  await eventually('All again', 5000, async () => (await rows()).length === 2);
  await browser.execute(() => document.querySelector('[data-testid="capture"]').focus());
});

test('a server set up in Settings: the inbox goes to its project and gets keys', async () => {
  await startServer();
  await click('[data-testid="settings-open"]');
  await eventually('the settings dialog', 5000, () => exists('settings-dialog'));
  await setField('settings-server-url', `http://127.0.0.1:${port}`);
  await setField('settings-token', token);
  await click('[data-testid="settings-save"]');
  await eventually('the inbox banner', 15000, () => exists('inbox-banner'));
  assert.equal(await browser.execute(() => document.querySelector('[data-testid="inbox-project"]')?.value), 'PFX');
  await shot('03-inbox-banner');
  await click('[data-testid="inbox-send"]');
  const list = await eventually('keys on both rows', 15000, async () => {
    const rs = await rows();
    return rs.length === 2 && rs.every((r) => r.key) ? rs : null;
  });
  assert.deepEqual(list.map((r) => r.key).sort(), ['PFX-1', 'PFX-2']);
  assert.equal((await rowByText('Write the docs')).key, 'PFX-1', 'numbered in capture order');
  await eventually('the banner gone and all synced', 10000, async () =>
    !(await exists('inbox-banner')) && /all synced/i.test(await textOf('sync-text')));
  // New captures now go to the server's project.
  await capture('Captured after login');
  await eventually('PFX-3', 10000, async () => (await rowByText('Captured after login'))?.key === 'PFX-3');
  await shot('04-synced');
});

test('a refused task is fixed by choosing a project the server has, and the failed count returns to 0', async () => {
  cli('add', 'Filed under a typo', '--project', 'ZZZ');
  const bad = await eventually('the refused row', 15000, async () => {
    const r = await rowByText('Filed under a typo');
    return r?.state === 'failed' ? r : null;
  });
  assert.match(bad.failure ?? '', /no project ZZZ/i, 'plain words, not the raw problem');
  await eventually('1 failed in the header', 5000, async () => /1 failed/i.test(await textOf('sync-indicator')));
  await shot('05-failed');
  await selectRow('Filed under a typo');
  await browser.keys('o');
  await eventually('its detail with the fix', 5000, () => exists('detail-project'));
  assert.equal(await detailUuid(), bad.uuid);
  await setField('detail-project', 'PFX');
  await click('[data-testid="detail-send"]');
  const fixed = await eventually('the fixed task keyed', 15000, async () => {
    const r = await rowByText('Filed under a typo');
    return r?.key ? r : null;
  });
  assert.equal(fixed.key, 'PFX-4');
  await eventually('no failed count', 10000, async () => !/failed/i.test(await textOf('sync-indicator')));
  const status = JSON.parse(cli('--json', 'status'));
  assert.equal(status.failed, 0);
  await shot('06-fixed');
  await browser.keys('Escape');
});

test('server stopped: a capture says offline; started again: its key arrives within seconds', async () => {
  await stopServer();
  await capture('Captured in the outage');
  await eventually('the offline marker', 20000, async () => /offline/i.test((await rowByText('Captured in the outage'))?.marker ?? ''));
  await eventually('the header says offline', 5000, async () => /offline/i.test(await textOf('sync-text')));
  const problem = await textOf('sync-problem');
  assert.match(problem ?? '', /can.t reach the server/i, 'plain words');
  assert.doesNotMatch(problem ?? '', /os error|tcp connect/i);
  await shot('07-offline');
  await sleep(3000); // let the backoff grow
  await startServer();
  const back = Date.now();
  await eventually('the key after the server is back', 15000, async () => (await rowByText('Captured in the outage'))?.key === 'PFX-5');
  const took = Date.now() - back;
  console.log(`server back -> key visible in the app: ${took} ms`);
  await eventually('no problem shown', 5000, async () => !(await exists('sync-problem')));
  await shot('08-back-online');
});

test('keyboard: complete moves the highlight and the detail together; Ctrl+Z reopens', async () => {
  await selectRow('Plan the release');
  await browser.keys('o');
  await eventually('the detail', 5000, async () => (await detailUuid()) !== null);
  const before = (await rows()).map((r) => r.uuid);
  const done = await rowByText('Plan the release');
  await browser.keys('x');
  await eventually('the completed task leaves the pending list', 5000, async () => !(await rowByText('Plan the release')));
  const sel = (await rows()).find((r) => r.selected);
  assert.ok(sel, 'a row is highlighted');
  const shown = await detailUuid();
  assert.ok(shown === null || shown === sel.uuid, `the detail shows the highlighted task (${shown} vs ${sel.uuid})`);
  await browser.keys(['Control', 'z']);
  await eventually('the task back in the list', 5000, async () => (await rowByText('Plan the release'))?.uuid === done.uuid);
  assert.match(await textOf('notice'), /reopened/i);
  assert.deepEqual((await rows()).map((r) => r.uuid).sort(), before.sort());
  await browser.keys('Escape');
});

test('filter: +tag finds the tagged task and the list starts at the top', async () => {
  await setField('filter-input', '+docs');
  const rs = await eventually('one row', 5000, async () => {
    const r = await rows();
    return r.length === 1 ? r : null;
  });
  assert.match(rs[0].text, /Write the docs/);
  const top = await browser.execute(() => document.querySelector('[data-testid="task-list"]').scrollTop);
  assert.equal(top, 0);
  await shot('09-filter-tag');
  // The bar reads the CLI's grammar with the CLI's code (callsign-core): the same words keep
  // the same tasks as `callsign list` on this data dir.
  for (const words of [['+docs', 'status:all'], ['status:completed'], ['PFX-1..3'], ['-docs', 'pfx'], ['status:provisional']]) {
    const want = JSON.parse(cli('--json', 'list', ...words)).map((t) => t.uuid).sort();
    await setField('filter-input', words.join(' '));
    await eventually(`the CLI's tasks for "${words.join(' ')}"`, 5000, async () => {
      const got = (await rows()).map((r) => r.uuid).sort();
      return JSON.stringify(got) === JSON.stringify(want) ? got : null;
    });
  }
  await setField('filter-input', 'PFX-1..3 +docs');
  await shot('44-filter-key-range');
  await setField('filter-input', 'status:open');
  const err = await eventually('the refusal under the bar', 5000, () => textOf('filter-error'));
  assert.match(err, /'open' is not a status/);
  await shot('45-filter-refused');
  await setField('filter-input', '');
  await eventually('the refusal gone', 5000, async () => !(await exists('filter-error')));
});

test('jump: a bare number is the current project\'s key, and text finds tasks', async () => {
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  await browser.keys(['Control', 'k']);
  await eventually('the jump box', 5000, () => exists('jump-input'));
  const placeholder = await browser.execute(() => document.querySelector('[data-testid="jump-input"]').placeholder);
  assert.match(placeholder, /PFX/, 'examples use the user\'s prefix');
  await setField('jump-input', '2');
  await eventually('PFX-2 offered', 5000, async () => /PFX-2/.test((await textOf('jump-result')) ?? ''));
  await browser.keys('Enter');
  await eventually('PFX-2 opened', 5000, async () => /PFX-2/.test((await textOf('task-detail')) ?? ''));
  await shot('10-jump-number');
  await browser.keys('Escape');
  await browser.keys(['Control', 'k']);
  await eventually('the jump box', 5000, () => exists('jump-input'));
  await setField('jump-input', 'outage');
  await eventually('a text match', 5000, async () => /Captured in the outage/.test((await textOf('jump-result')) ?? ''));
  await shot('11-jump-text');
  await setField('jump-input', 'pfx 99');
  await browser.keys('Enter');
  const nf = await eventually('not found', 5000, () => textOf('jump-not-found'));
  assert.match(nf, /PFX-99/);
  await browser.keys('Escape');
});

test('a task added with the CLI appears in the open app; the dark theme reads well', async () => {
  cli('add', 'Added from the CLI');
  await eventually('the CLI task numbered PFX-6', 20000, async () => (await rowByText('Added from the CLI'))?.key === 'PFX-6');
  const background = () => browser.execute(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(await background(), 'rgb(255, 255, 255)', 'a first launch is light');
  await click('[data-testid="theme-toggle"]');
  await eventually('dark', 5000, async () => (await background()) !== 'rgb(255, 255, 255)');
  await shot('12-dark');
});

/** The local date `days` from today as the detail's field shows a whole day (`2026-11-27`). */
function localDate(days) {
  const d = new Date();
  d.setDate(d.getDate() + days);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}
const rowPart = (uuid, testid) => browser.execute((u, id) =>
  document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] [data-testid="${id}"] [aria-hidden="true"]`)?.textContent ?? null, uuid, testid);
const valueOf = (testid) => browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.value ?? null, testid);

test('due dates and priorities: captured with due: and pri:, changed in the detail, a bad date refused in words', async () => {
  // (Dark theme still on from the test before: these rows are seen in both themes.) Three from
  // the CLI first: overdue, due at the end of today, in two weeks.
  cli('add', 'Renew the passport', '--due', 'yesterday', '--priority', 'M');
  cli('add', 'Call the bank', '--due', 'eod', '--priority', 'L');
  cli('add', 'Book the flights', '--due', '2w');
  const overdue = await eventually('the overdue row', 20000, () => rowByText('Renew the passport'));
  const today = await eventually('the row due today', 20000, () => rowByText('Call the bank'));
  const later = await eventually('the row due in two weeks', 20000, () => rowByText('Book the flights'));
  const dueState = (uuid) => browser.execute((u) =>
    document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] [data-testid="row-due"]`)?.dataset.overdue ?? null, uuid);
  assert.equal(await rowPart(overdue.uuid, 'row-due'), 'due yesterday');
  assert.equal(await dueState(overdue.uuid), 'true', 'yesterday is overdue');
  assert.match(overdue.text, /overdue/, 'said in words too, not only in red');
  assert.equal(await rowPart(today.uuid, 'row-due'), 'due today');
  assert.equal(await dueState(today.uuid), 'false', 'the end of today is not past yet');
  assert.match(await rowPart(later.uuid, 'row-due'), /^due (Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d\d:\d\d$/);
  await setField('capture', 'Pay rent due:tomorrow pri:H');
  await browser.execute(() => document.querySelector('[data-testid="capture"]').focus());
  await browser.keys('Enter');
  const row = await eventually('the Pay rent row', 10000, () => rowByText('Pay rent'));
  assert.equal(await browser.execute((u) =>
    document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] .desc`).textContent.trim(), row.uuid), 'Pay rent',
  'due: and pri: are taken out of the description');
  assert.equal(await rowPart(row.uuid, 'row-due'), 'due tomorrow');
  assert.equal(await rowPart(row.uuid, 'row-priority'), 'H');
  assert.match(row.text, /priority high/, 'the badge is named for screen readers');
  assert.equal(await browser.execute(() => document.querySelectorAll('[data-testid="task-row"] .who').length), 0,
    'nobody is assigned anything: no row keeps a place for an assignee');
  await eventually('its key', 15000, async () => (await rowByText('Pay rent'))?.key);
  await shot('13-due-priority-dark');
  await click('[data-testid="theme-toggle"]');
  await eventually('light', 5000, async () =>
    (await browser.execute(() => getComputedStyle(document.body).backgroundColor)) === 'rgb(255, 255, 255)');
  await shot('14-due-priority-light');

  // The detail: the due date as a local date, the priority as chosen; both changed there.
  await selectRow('Pay rent');
  await browser.keys('o');
  await eventually('the detail of Pay rent', 5000, async () => (await detailUuid()) === row.uuid);
  assert.equal(await valueOf('detail-due'), localDate(1));
  assert.equal(await valueOf('detail-priority'), 'H');
  await setField('detail-priority', 'L');
  await eventually('the L badge', 5000, async () => (await rowPart(row.uuid, 'row-priority')) === 'L');
  await shot('15-detail-due-priority');
  // A date the backend cannot read: refused beside the field, nothing changed.
  await setField('detail-due', 'soon');
  await browser.execute(() => document.querySelector('[data-testid="detail-due"]').focus());
  await browser.keys('Enter');
  const inline = await eventually('the inline refusal', 5000, () => textOf('detail-due-error'));
  assert.match(inline, /'soon' is not a date: use a date/);
  assert.equal(await rowPart(row.uuid, 'row-due'), 'due tomorrow');
  await shot('16-detail-due-refused');
  // Empty clears it (Enter saves).
  await setField('detail-due', '');
  await browser.keys('Enter');
  await eventually('no due date on the row', 5000, async () => (await rowPart(row.uuid, 'row-due')) === null);
  assert.equal(await exists('detail-due-error'), false);
  const saved = JSON.parse(cli('--json', 'list')).find((t) => t.uuid === row.uuid);
  assert.equal(saved.priority, 'L', 'saved in the store');
  assert.equal(saved.due, null);
  await browser.keys('Escape');
  await eventually('the detail closed', 5000, async () => (await detailUuid()) === null);

  // Sorted: by due date, soonest first (Pay rent has none now); by priority, M then the two L
  // (the newer first); back to newest first.
  const top3 = async () => (await rows()).slice(0, 3).map((r) => r.uuid);
  await setField('sort-order', 'due');
  await eventually('soonest due first', 5000, async () =>
    JSON.stringify(await top3()) === JSON.stringify([overdue.uuid, today.uuid, later.uuid]));
  await shot('17-sorted-by-due');
  await setField('sort-order', 'priority');
  await eventually('M, then the two L (the newer first)', 5000, async () =>
    JSON.stringify(await top3()) === JSON.stringify([overdue.uuid, row.uuid, today.uuid]));
  await setField('sort-order', 'created');
  await eventually('newest first again', 5000, async () => (await rows())[0]?.uuid === row.uuid);

  // A capture with a date the backend cannot read: the notice says why, the text comes back.
  await setField('capture', 'Water the plants due:soon');
  await browser.execute(() => document.querySelector('[data-testid="capture"]').focus());
  await browser.keys('Enter');
  const notice = await eventually('the error notice', 5000, () => textOf('error-banner'));
  assert.match(notice, /^Not saved: 'soon' is not a date: use a date \(2026-12-01/);
  assert.equal(await valueOf('capture'), 'Water the plants due:soon', 'the capture text is given back');
  assert.equal(await rowByText('Water the plants'), null);
  await shot('18-due-refused-notice');
});

const subtaskItems = () => browser.execute(() => [...document.querySelectorAll('[data-testid="subtask"]')].map((li) => ({
  uuid: li.dataset.uuid,
  key: li.dataset.key ?? null,
  status: li.dataset.status,
  text: li.textContent,
})));
const rowBadge = (uuid, testid) => browser.execute((u, id) =>
  document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] [data-testid="${id}"]`)?.textContent.trim() ?? null, uuid, testid);
const completeButton = () => browser.execute(() => {
  const b = document.querySelector('[data-testid="detail-complete"]');
  return b ? { disabled: b.disabled, title: b.title } : null;
});

test('subtasks: added from the detail, numbered under the parent in place; the parent is blocked until it is done; Next', async () => {
  await setField('capture', '');
  await capture('Launch the beta');
  const parent = await eventually('the parent keyed', 15000, async () => {
    const r = await rowByText('Launch the beta');
    return r?.key ? r : null;
  });
  assert.match(parent.key, /^PFX-\d+$/);
  await selectRow('Launch the beta');
  await browser.keys('o');
  await eventually('its detail with a Subtasks section', 5000, async () =>
    (await detailUuid()) === parent.uuid && (await exists('subtask-input')));

  // Typed into the detail's field: in the detail and the list at once, provisional.
  const field = await browser.$('[data-testid="subtask-input"]');
  await field.setValue('Write the announcement');
  await browser.keys('Enter');
  const [added] = await eventually('the subtask in the detail at once', 5000, async () => {
    const items = await subtaskItems();
    return items.length === 1 ? items : null;
  });
  assert.match(added.text, /Write the announcement/);
  assert.equal(await valueOf('subtask-input'), '', 'the field is cleared for the next one');
  assert.equal(await browser.execute(() => document.activeElement?.dataset?.testid ?? null), 'subtask-input', 'and keeps the focus');
  assert.equal(await detailUuid(), parent.uuid, 'the detail stays on the parent');
  assert.ok(await rowByText('Write the announcement'), 'a row in the list too');
  // Blocked in the same update that shows the subtask, not once the parent's own event comes.
  assert.equal(await rowBadge(parent.uuid, 'row-blocked'), 'blocked · 1 open', 'the parent is blocked at once');

  // The server numbers it under the parent's key; the same item and row take the key.
  const want = `${parent.key}.1`;
  await eventually(`${want} in the detail`, 15000, async () => (await subtaskItems())[0]?.key === want);
  assert.equal((await subtaskItems())[0].uuid, added.uuid, 'the same subtask, keyed in place');
  const sub = await eventually(`${want} on its row`, 5000, async () => {
    const r = await rowByText('Write the announcement');
    return r?.key === want ? r : null;
  });
  assert.equal(sub.uuid, added.uuid);

  // The parent is blocked: its row says so, Complete is disabled and names the subtask.
  assert.equal(await rowBadge(parent.uuid, 'row-blocked'), 'blocked · 1 open');
  assert.match(await rowBadge(parent.uuid, 'row-progress'), /^0\/1/);
  const complete = await completeButton();
  assert.equal(complete.disabled, true, 'Complete is disabled while a subtask is open');
  assert.match(complete.title, new RegExp(`^${parent.key} has open subtasks \\(${want.replace('.', '\\.')}\\); complete or delete them first`));
  await shot('19-subtask-detail-blocked');

  // `x` on the blocked row: refused, in the backend's words, and nothing changes.
  await selectRow('Launch the beta');
  await browser.keys('x');
  const refusal = await eventually('the refusal', 5000, () => textOf('error-banner'));
  assert.match(refusal, new RegExp(`^${parent.key} has open subtasks \\(${want.replace('.', '\\.')}\\); complete or delete them first`));
  assert.ok(await rowByText('Launch the beta'), 'still pending');
  await shot('20-blocked-row-refused');

  // Next (N): the subtask first (the deepest leaf), the blocked parent not at all.
  await browser.keys('N');
  await eventually('the Next view', 5000, async () => (await valueOf('status-filter')) === 'next');
  const next = await eventually('the subtask on top', 5000, async () => {
    const rs = await rows();
    return rs[0]?.uuid === sub.uuid ? rs : null;
  });
  assert.equal(next.some((r) => r.uuid === parent.uuid), false, 'a blocked task is not next');
  await shot('21-next-view');
  await browser.keys('N');
  await eventually('back to Pending', 5000, async () => (await valueOf('status-filter')) === 'pending');

  // Done from the detail's check: the parent is free and completable.
  await selectRow('Launch the beta');
  await browser.keys('o');
  await eventually('the parent open again', 5000, async () => (await detailUuid()) === parent.uuid);
  await click(`[data-testid="subtask"][data-uuid="${sub.uuid}"] [data-testid="subtask-check"]`);
  await eventually('the subtask done', 5000, async () => (await subtaskItems())[0]?.status === 'completed');
  await eventually('the parent unblocked', 5000, async () => (await rowBadge(parent.uuid, 'row-blocked')) === null);
  assert.match(await rowBadge(parent.uuid, 'row-progress'), /^1\/1/);
  assert.deepEqual(await completeButton(), { disabled: false, title: '' });
  await shot('22-subtask-done-parent-free');
  // In Next now, after every leaf (a parent whose subtasks are done comes last).
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  await browser.keys('N');
  await eventually('the parent last in Next', 5000, async () => (await rows()).at(-1)?.uuid === parent.uuid);
  await browser.keys('N');
  await eventually('back to Pending', 5000, async () => (await valueOf('status-filter')) === 'pending');
  await selectRow('Launch the beta');
  await browser.keys('x');
  await eventually('the parent completed', 5000, async () => !(await rowByText('Launch the beta')));
  assert.match(await textOf('notice'), new RegExp(`Completed ${parent.key}`));
  const saved = JSON.parse(cli('--json', 'list', '--all'));
  assert.deepEqual(
    [saved.find((t) => t.uuid === parent.uuid)?.status, saved.find((t) => t.uuid === sub.uuid)?.status],
    ['completed', 'completed'], 'saved in the store');
});

/** The task as the server has it (another device's view), by key. */
async function serverTask(ref) {
  const res = await fetch(`http://127.0.0.1:${port}/v1/tasks/${ref}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200, `GET ${ref}`);
  return res.json();
}

test('an edit another device replaced shows as a conflict; Restore brings it back everywhere', async () => {
  await setField('capture', '');
  await capture('Fix the login page');
  const t = await eventually('the task keyed', 15000, async () => {
    const r = await rowByText('Fix the login page');
    return r?.key ? r : null;
  });
  // Edited here, in the detail, and sent.
  await selectRow('Fix the login page');
  await browser.keys('o');
  await eventually('its detail', 5000, async () => (await detailUuid()) === t.uuid);
  await click('[data-testid="detail-edit"]');
  await eventually('the edit form', 5000, () => exists('detail-description-input'));
  await setField('detail-description-input', 'Fix the login redirect');
  await click('[data-testid="detail-save"]');
  await eventually('the edit on the server', 15000, async () => (await serverTask(t.key)).description === 'Fix the login redirect');

  // Another device, which had not seen that edit, rewrites the description too: the server keeps
  // the later text and records ours as replaced.
  const res = await fetch(`http://127.0.0.1:${port}/v1/tasks/${t.key}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${token}`, 'idempotency-key': `other-${t.uuid}`, 'content-type': 'application/json' },
    body: JSON.stringify({ description: 'Fix login on Safari', base: { description: 'Fix the login page' } }),
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).conflicts?.[0]?.value, 'Fix the login redirect');

  // It reaches the open app without any action (at its next pull, every 30 s when idle): the
  // row says so, the detail names both values.
  await eventually('the conflict chip on the row', 40000, async () => (await rowBadge(t.uuid, 'row-conflict')) === 'changed elsewhere');
  await eventually('the detail shows the other value', 5000, async () => (await textOf('detail-description'))?.includes('Safari'));
  assert.equal(await textOf('conflict-other'), '“Fix the login redirect”');
  assert.equal(await textOf('conflict-kept'), '“Fix login on Safari”');
  assert.match(await textOf('detail-conflicts'), /Changed on another device/);
  await shot('23-conflict-detail');

  // One click restores it: here at once, on the server once sent, and the conflict is gone.
  await click('[data-testid="conflict-restore"]');
  await eventually('restored here', 5000, async () => (await textOf('detail-description')) === 'Fix the login redirect' && !(await exists('detail-conflicts')));
  assert.equal(await rowBadge(t.uuid, 'row-conflict'), null);
  await eventually('restored on the server', 15000, async () => {
    const s = await serverTask(t.key);
    return s.description === 'Fix the login redirect' && !s.conflicts;
  });
  await shot('24-conflict-restored');
});

const moveOptions = () => browser.execute(() => [...document.querySelectorAll('[data-testid="move-option"]')].map((b) => ({
  project: b.dataset.project,
  here: b.getAttribute('aria-disabled') === 'true',
  focused: document.activeElement === b,
})));

test('moves: a numbered task moved to another project gets its new key in place, and its old key still opens it', async () => {
  // A second project on the server (as another device would add it); Sync now fetches it.
  const made = await fetch(`http://127.0.0.1:${port}/v1/projects`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Operations', prefix: 'OPS' }),
  });
  assert.equal(made.status, 201);
  await browser.keys('Escape');
  await click('[data-testid="sync-now"]');
  const task = await selectRow('Captured after login');
  assert.equal(task.key, 'PFX-3');
  await eventually('OPS in the move menu', 10000, async () => {
    await browser.keys('m');
    const opts = await moveOptions();
    if (opts.some((o) => o.project === 'OPS')) return true;
    await browser.keys('Escape'); // the projects not fetched yet: close and try again
    return false;
  });
  // The menu: the server's projects, the task's own one not choosable, the focus on the first
  // one it can go to.
  assert.equal(await detailUuid(), task.uuid, 'm opened the task');
  assert.deepEqual(await moveOptions(), [
    { project: 'OPS', here: false, focused: true },
    { project: 'PFX', here: true, focused: false },
  ], "in the server's order");
  assert.match(await textOf('move-menu'), /It gets the next key there; PFX-3 still finds it/);
  await shot('30-move-menu');

  // Moved while the server is down: the project changes at once, the marker stands in the
  // key's place until the server answers.
  await stopServer();
  await browser.keys('Enter');
  await eventually('the menu closed', 5000, async () => !(await exists('move-menu')));
  const moving = await eventually('the moving marker on the row', 10000, async () => {
    const r = (await rows()).find((x) => x.uuid === task.uuid);
    return /^moving to OPS/.test(r?.marker ?? '') ? r : null;
  });
  assert.equal(moving.key, 'PFX-3', 'the old key until the server answers');
  assert.match(await textOf('notice'), /Moving PFX-3 to OPS: its new key comes when the server answers/);
  assert.match(await textOf('task-detail'), /Project\s*OPS/, 'the detail shows the new project at once');
  const saved = JSON.parse(cli('--json', 'show', task.uuid));
  assert.equal(saved.project, 'OPS', 'saved in the store');
  await eventually('offline in the marker', 20000, async () =>
    /^moving to OPS · offline/.test((await rows()).find((x) => x.uuid === task.uuid)?.marker ?? ''));
  await shot('31-moving-offline');

  // The server is back: OPS-1 in the same row, the old key listed in the detail.
  await startServer();
  const moved = await eventually('OPS-1 on the same row', 20000, async () => {
    const r = (await rows()).find((x) => x.uuid === task.uuid);
    return r?.key === 'OPS-1' && r.marker === null ? r : null;
  });
  assert.match(moved.text, /Captured after login/);
  await eventually('Previously PFX-3 in the detail', 5000, async () =>
    (await textOf('detail-previous-keys'))?.trim() === 'Previously PFX-3');
  assert.equal(await browser.execute(() => document.querySelector('[data-testid="task-detail"]')?.dataset.key), 'OPS-1');
  await shot('32-moved-previously');

  // The old key still opens it: in the jump box (the loaded list knows it) and in the engine.
  await browser.keys('Escape');
  await eventually('the detail closed', 5000, async () => (await detailUuid()) === null);
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  await browser.keys(['Control', 'k']);
  await eventually('the jump box', 5000, () => exists('jump-input'));
  await setField('jump-input', 'pfx 3');
  await eventually('the moved task offered for its old key', 5000, async () =>
    (await browser.execute(() => document.querySelector('[data-testid="jump-result"][aria-selected="true"]')?.dataset.uuid)) === task.uuid);
  assert.equal((await textOf('jump-reading')).trim(), 'PFX-3 moved: it is now OPS-1');
  await shot('33-jump-old-key');
  await browser.keys('Enter');
  await eventually('the task opened by its old key', 5000, async () => (await detailUuid()) === task.uuid);
  assert.equal(await exists('jump-dialog'), false);
  const shown = JSON.parse(cli('--json', 'show', 'PFX-3'));
  assert.deepEqual([shown.uuid, shown.key, shown.previous_keys], [task.uuid, 'OPS-1', ['PFX-3']]);
  await shot('34-opened-by-old-key');
  await browser.keys('Escape');
});

// ---- A desktop citizen (issue 24): sidebar, projects, quick capture, tray, notifications ----

/** A Tauri command called as the UI calls it (the tray menu and the shortcut run the same code). */
const invoke = (cmd, args = {}) => browser.executeAsync((c, a, done) => {
  window.__TAURI_INTERNALS__.invoke(c, a).then((v) => done({ ok: v }), (e) => done({ err: e }));
}, cmd, args);
const sidebarCount = (testid) => browser.execute((id) =>
  document.querySelector(`[data-testid="${id}"] [data-testid="count"]`)?.textContent.trim() ?? null, testid);
const current = () => browser.execute(() => document.querySelector('[data-testid="sidebar"] [aria-current="true"]')?.dataset.testid ?? null);
/** The whole X screen (a second window or the tray are not in WebDriver's screenshots). */
function screen(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  execFileSync('import', ['-window', 'root', path.join(SHOTS, `${name}.png`)]);
}
const xdotool = (...args) => execFileSync('xdotool', args).toString().trim();
const captureWindow = () => {
  try {
    return xdotool('search', '--name', '^Quick capture');
  } catch {
    return ''; // xdotool search exits 1 when nothing matches
  }
};
/**
 * Waits for the capture window and gives it the focus: `search` can find it before it is
 * mapped, and focusing it then fails (BadMatch), so both are tried again until they work.
 */
const focusCaptureWindow = (what) => eventually(what, 10000, () => {
  const win = captureWindow().split('\n')[0];
  if (!win) return null;
  xdotool('windowfocus', '--sync', win);
  return win;
});
const pendingIn = (prefix) => JSON.parse(cli('--json', 'list')).filter((t) => t.project === prefix && t.status === 'pending').length;

test('sidebar: each project with its open count; scoping, g-keys; a project created in the app numbers its tasks', async () => {
  await browser.keys('Escape');
  await eventually('PFX and OPS in the sidebar', 10000, async () =>
    (await exists('sidebar-project-PFX')) && (await exists('sidebar-project-OPS')));
  assert.equal(await sidebarCount('sidebar-project-PFX'), String(pendingIn('PFX')), 'PFX counts its open tasks');
  assert.equal(await sidebarCount('sidebar-project-OPS'), String(pendingIn('OPS')), 'OPS counts its open tasks');
  await click('[data-testid="sidebar-project-OPS"]');
  const ops = await eventually('only OPS rows', 5000, async () => {
    const rs = await rows();
    return rs.length > 0 && rs.every((r) => r.key?.startsWith('OPS-')) ? rs : null;
  });
  assert.equal(ops.length, pendingIn('OPS'));
  assert.equal(await current(), 'sidebar-project-OPS');
  await shot('35-sidebar-project');
  // g a: every project again; g p: the sidebar takes the keys, Enter picks an entry.
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  await browser.keys(['g', 'a']);
  await eventually('All selected', 5000, async () => (await current()) === 'sidebar-all');
  await browser.keys(['g', 'p']);
  await eventually('the sidebar focused', 5000, () =>
    browser.execute(() => document.querySelector('[data-testid="sidebar"]')?.contains(document.activeElement) ?? false));
  // From the current entry (All) down to PFX, one j per entry.
  const steps = await browser.execute(() => {
    const ids = [...document.querySelectorAll('[data-testid="sidebar"] [data-testid^="sidebar-"]')]
      .map((e) => e.dataset.testid).filter((id) => id !== 'sidebar-new-project');
    return ids.indexOf('sidebar-project-PFX') - ids.indexOf('sidebar-all');
  });
  assert.ok(steps > 0, 'PFX is below All');
  for (const k of [...Array(steps).fill('j'), 'Enter']) {
    await browser.keys(k); // a key at a time, as typed: each one moves the focus first
    await sleep(50);
  }
  await eventually('PFX picked with the keyboard', 5000, async () => (await current()) === 'sidebar-project-PFX');
  assert.equal(await browser.execute(() => document.activeElement?.dataset?.testid ?? null), 'task-list', 'back to the list');

  // New project: the server's prefix rule as typed, a taken prefix refused, then created.
  await click('[data-testid="sidebar-new-project"]');
  await eventually('the new-project dialog', 5000, () => exists('new-project-prefix'));
  await setField('new-project-prefix', '1web');
  await eventually('the rule for a bad prefix', 5000, async () =>
    /a prefix is 2-10 characters, a letter first/.test((await textOf('new-project-prefix-hint')) ?? ''));
  await setField('new-project-name', 'Website');
  await setField('new-project-prefix', 'pfx');
  await click('[data-testid="new-project-submit"]');
  await eventually('a taken prefix refused', 10000, async () => /taken|exists|already/i.test((await textOf('new-project-error')) ?? ''));
  await shot('36-new-project-taken');
  await setField('new-project-prefix', 'web');
  await click('[data-testid="new-project-submit"]');
  await eventually('WEB in the sidebar, selected', 10000, async () => (await current()) === 'sidebar-project-WEB');
  assert.equal(await exists('new-project-dialog'), false, 'the dialog closed');
  assert.equal(await sidebarCount('sidebar-project-WEB'), '0');
  assert.match(cli('project', 'list'), /WEB/, 'the server has it');
  await capture('Landing page copy #WEB');
  await eventually('WEB-1', 15000, async () => (await rowByText('Landing page copy'))?.key === 'WEB-1');
  await eventually('WEB counts 1', 5000, async () => (await sidebarCount('sidebar-project-WEB')) === '1');
  await shot('37-new-project-numbered');
  await click('[data-testid="sidebar-all"]');
});

test('quick capture: the global shortcut and the tray open it; Enter saves a task the main list shows', async () => {
  await click('[data-testid="sidebar-all"]');
  assert.equal(captureWindow(), '', 'not open yet');
  xdotool('key', 'ctrl+alt+space');
  const win = await eventually('the capture window from Ctrl+Alt+Space', 10000, () => captureWindow());
  await sleep(2000); // painted
  screen('38-quick-capture');
  xdotool('windowfocus', '--sync', win.split('\n')[0]);
  xdotool('type', '--delay', '20', 'Call the venue +event');
  xdotool('key', 'Return');
  await eventually('the capture window closed', 10000, () => captureWindow() === '');
  // Saved before the window closed: the store has it, and the main list shows it with its key.
  assert.ok(JSON.parse(cli('--json', 'list')).some((t) => t.description === 'Call the venue'), 'in the store');
  const row = await eventually('the key on the captured row', 15000, async () => {
    const r = await rowByText('Call the venue');
    return r?.key ? r : null;
  });
  assert.match(row.key, /^PFX-\d+$/, 'the default project');
  assert.match(row.text, /event/);
  // The tray's Quick capture runs the same code; Esc closes it with nothing saved.
  const before = JSON.parse(cli('--json', 'list')).length;
  assert.deepEqual(await invoke('tray_action', { action: 'capture' }), { ok: null });
  await focusCaptureWindow('the capture window from the tray');
  await sleep(1000); // painted
  xdotool('type', '--delay', '20', 'Never mind');
  xdotool('key', 'Escape');
  await eventually('closed by Esc', 10000, () => captureWindow() === '');
  assert.equal(JSON.parse(cli('--json', 'list')).length, before, 'Esc saves nothing');
  await shot('39-after-quick-capture');
});

test('tray: its state follows the sync; Sync now syncs; a refusal is notified once and opens the task', async () => {
  await click('[data-testid="sidebar-all"]');
  const tray = async () => (await invoke('tray_status')).ok;
  const first = await eventually('the tray synced', 15000, async () => ((await tray())?.state === 'synced' ? tray() : null));
  console.log(`tray: ${JSON.stringify(first)}`);
  assert.equal(first.tooltip, 'Callsign: Synced');
  // Sync now from the tray: a pass runs (its time moves).
  const t0 = JSON.parse(cli('--json', 'status')).last_sync_at;
  await sleep(1100);
  assert.deepEqual(await invoke('tray_action', { action: 'sync' }), { ok: null });
  await eventually('a sync from the tray', 10000, async () => {
    const s = (await invoke('sync_status')).ok;
    return s.last_sync_at && s.last_sync_at !== t0;
  });
  // Offline with work waiting.
  await stopServer();
  await capture('Written on the train');
  const off = await eventually('the tray offline', 20000, async () => ((await tray())?.state === 'offline' ? tray() : null));
  assert.ok(off.count >= 1, JSON.stringify(off));
  assert.match(off.tooltip, /Offline: \d+ tasks? waiting/);
  await startServer();
  await eventually('synced again', 20000, async () => (await tray())?.state === 'synced');
  // A refusal: the tray counts it, one notification says so, a click opens the task.
  cli('add', 'Filed under another typo', '--project', 'QQQ');
  const failed = await eventually('the tray failed', 20000, async () => ((await tray())?.state === 'failed' ? tray() : null));
  assert.equal(failed.count, 1);
  assert.equal(failed.tooltip, 'Callsign: 1 failed: open Callsign to fix');
  const notes = (await invoke('notifications')).ok.filter((n) => /Filed under another typo/.test(n.title));
  assert.equal(notes.length, 1, `once: ${JSON.stringify(notes)}`);
  assert.match(notes[0].title, /could not be synced/);
  assert.match(notes[0].body, /QQQ/);
  const bad = await rowByText('Filed under another typo');
  await invoke('open_task_from_notification', { uuid: bad.uuid });
  await eventually('the refused task opened', 5000, async () => (await detailUuid()) === bad.uuid);
  await shot('40-opened-from-notification');
  await click('[data-testid="detail-discard"]').catch(() => cli('discard', bad.uuid));
  await eventually('synced after the discard', 15000, async () => (await tray())?.state === 'synced');
  await browser.keys('Escape');
});

test('closed with "keep syncing in the tray": the window hides, quick capture still saves and syncs, the tray opens it', async () => {
  await click('[data-testid="settings-open"]');
  await eventually('the settings dialog', 5000, () => exists('settings-close-to-tray'));
  assert.equal(await browser.execute(() => document.querySelector('[data-testid="settings-close-to-tray"]').checked), false, 'off by default');
  await click('[data-testid="settings-close-to-tray"]');
  await shot('41-settings-desktop');
  await click('[data-testid="settings-save"]');
  await eventually('saved', 10000, async () => (await invoke('get_desktop_prefs')).ok?.close_to_tray === true);
  // The window manager's close (WM_DELETE_WINDOW), as the title bar's × sends it.
  const main = xdotool('search', '--onlyvisible', '--name', '^Callsign$').split('\n')[0];
  execFileSync('python3', [path.join(ROOT, 'tests', 'desktop', 'wm-close.py'), main]);
  await eventually('the window hidden', 10000, () => {
    try {
      return xdotool('search', '--onlyvisible', '--name', '^Callsign$') === '';
    } catch {
      return true;
    }
  });
  screen('42-closed-to-tray');
  // Still running and syncing: a quick capture gets its key with no window open.
  xdotool('key', 'ctrl+alt+space');
  await focusCaptureWindow('the capture window');
  await sleep(1000); // painted: keys typed before the page loads are lost
  xdotool('type', '--delay', '20', 'Captured with the window closed');
  screen('42b-typed');
  xdotool('key', 'Return');
  await eventually('closed', 10000, () => captureWindow() === '');
  const keyed = await eventually('its key, synced by the app in the tray', 15000, () => {
    const t = JSON.parse(cli('--json', 'list', '--all')).find((x) => x.description.includes('window closed'));
    return t?.key ? t : null;
  });
  assert.match(keyed.key, /^PFX-\d+$/);
  // The tray's Open brings the window back, the task in its list.
  await invoke('tray_action', { action: 'open' });
  await eventually('the window shown again', 10000, () => xdotool('search', '--onlyvisible', '--name', '^Callsign$') !== '');
  await eventually('the task in the list', 10000, async () => (await rowByText('Captured with the window closed'))?.key === keyed.key);
  await shot('43-reopened-from-tray');
});

// ---- Moving in (issue 42): another tracker's export imported from Settings, every key kept ----

const JIRA_CSV = path.join(ROOT, 'crates', 'callsign-import', 'fixtures', 'jira.csv');
const importText = (testid) => browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.textContent.replace(/\s+/g, ' ').trim() ?? null, testid);
const showImport = () => browser.execute(() => document.querySelector('[data-testid="settings-import"]').scrollIntoView());

/**
 * A TCP proxy from 127.0.0.1:`listenPort` to the server on `upstreamPort` that can hold the sync
 * loop's sends: while `hold` is on, a connection's `POST /v1/sync` (and whatever follows on that
 * connection) waits until `release()`; everything else (the import's own requests, the change
 * feed) passes. The keys then arrive when the test says, not before it has looked.
 */
async function holdingProxy(listenPort, upstreamPort) {
  const sockets = new Set();
  const held = [];
  let holding = false;
  const proxy = net.createServer((client) => {
    const up = net.connect(upstreamPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(up);
    let queue = null;
    client.on('data', (chunk) => {
      if (queue === null && holding && chunk.toString('latin1', 0, 14) === 'POST /v1/sync ') {
        queue = [];
        held.push(() => {
          for (const c of queue) up.write(c);
          queue = null;
        });
      }
      if (queue !== null) queue.push(chunk);
      else up.write(chunk);
    });
    up.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      up.destroy();
      sockets.delete(client);
      sockets.delete(up);
    };
    for (const s of [client, up]) {
      s.on('close', end);
      s.on('error', end);
    }
  });
  await new Promise((resolve, reject) => proxy.listen(listenPort, '127.0.0.1', resolve).on('error', reject));
  return {
    hold: (on) => (holding = on),
    held: () => held.length,
    release: () => held.splice(0).forEach((go) => go()),
    close: () => new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      proxy.close(resolve);
    }),
  };
}

test('import: a Jira export from Settings keeps its numbers; the preview, the keys arriving, the summary; Ctrl+K finds ENG-8', async () => {
  // The server moves behind the proxy (the app keeps its URL): the keys can be held back.
  if (server) await stopServer();
  const upstream = await freePort();
  await startServer(upstream);
  const proxy = await holdingProxy(port, upstream);
  try {
    await browser.keys('Escape');
    await click('[data-testid="settings-open"]');
    await eventually('the import section', 5000, () => exists('settings-import'));
    assert.equal(await exists('import-plan'), false, 'nothing planned yet');
    assert.equal(await browser.execute(() => document.querySelector('[data-testid="import-preview"]').disabled), true, 'no file yet');
    // The file input takes a path as WebDriver sends it; the app reads the file itself.
    await (await browser.$('[data-testid="import-file"]')).addValue(JIRA_CSV);
    await eventually('the format guessed from the file', 5000, async () => (await valueOf('import-format')) === 'jira');
    assert.equal(await textOf('import-format-hint'), 'Looks like Jira’s CSV export, all fields.');
    assert.match(await importText('settings-import'), /jira\.csv · [\d,]+ bytes/);
    // A format the file is not: refused in words, nothing planned.
    await setField('import-format', 'github');
    await click('[data-testid="import-preview"]');
    const wrong = await eventually('the refusal', 10000, () => textOf('import-error'));
    assert.match(wrong, /^This is not a GitHub issues JSON export: .*gh issue list/);
    assert.equal(await exists('import-plan'), false);
    await showImport();
    await shot('43b-import-wrong-format');
    await setField('import-format', 'jira');

    // Preview with "Keep their numbers": ENG is made, every number kept, ENG-3 (never in the
    // file) stays unused; the CLI's dry run plans the same; nothing is made.
    await click('[data-testid="import-keep-numbers"]');
    await click('[data-testid="import-preview"]');
    await eventually('the preview', 10000, () => exists('import-plan'));
    const dry = JSON.parse(cli('--json', 'import', '--from', 'jira', JIRA_CSV, '--keep-numbers', '--dry-run')).plan;
    assert.equal(dry.open + dry.done + dry.cancelled, 8);
    assert.equal(await importText('import-counts'), `8 tasks: ${dry.open} open, ${dry.done} done${dry.cancelled ? `, ${dry.cancelled} cancelled` : ''}`);
    const eng = await browser.execute(() => document.querySelector('[data-testid="import-project-line"][data-prefix="ENG"]')?.textContent.replace(/\s+/g, ' ').trim());
    assert.equal(eng, 'New project ENG: 8 tasks keep their numbers; the next new task is ENG-10 ENG-3 stays unused: the file never had it');
    const people = Object.entries(dry.unmapped_assignees).map(([n, c]) => `${n} (${c})`).join(', ');
    assert.equal(await importText('import-unassigned'), `Left unassigned, no member matches: ${people}`);
    assert.match(await importText('import-plan'), /nothing is made yet/);
    assert.equal(JSON.parse(cli('--json', 'list', '--all')).filter((t) => t.project === 'ENG').length, 0, 'a preview makes nothing');
    await showImport();
    await shot('43c-import-preview');

    // Import, the sync's sends held: the tasks are queued and wait for their keys, and the
    // section says so; every state of the progress line is recorded as the page shows it.
    await browser.execute(() => {
      window.__importSeen = [];
      new MutationObserver(() => {
        const t = document.querySelector('[data-testid="import-progress-text"]')?.textContent;
        if (t && window.__importSeen.at(-1) !== t) window.__importSeen.push(t);
      }).observe(document.querySelector('[data-testid="settings-import"]'), { subtree: true, childList: true, characterData: true });
    });
    proxy.hold(true);
    await click('[data-testid="import-run"]');
    await eventually('the progress', 10000, () => exists('import-progress'));
    await eventually('the tasks sent, and held', 30000, () => proxy.held() > 0);
    await sleep(1000); // a few polls of the progress
    assert.equal(await textOf('import-progress-text'), 'Keyed 0 of 8');
    assert.equal(await exists('import-summary'), false, 'no summary while keys are missing');
    assert.equal(await browser.execute(() => document.querySelector('[data-testid="import-run"]').disabled), true, 'no second import meanwhile');
    assert.match(await importText('settings-import'), /The keys come as the server numbers the tasks/);
    await showImport();
    await shot('43d-import-progress');
    // Let them through: the keys arrive, then the summary.
    proxy.hold(false);
    proxy.release();
    const summary = await eventually('the summary', 30000, () => textOf('import-summary'));
    assert.equal(summary, 'Imported 8 tasks from Jira: all 8 keyed');
    const seen = await browser.execute(() => window.__importSeen);
    assert.equal(seen[0], 'Keyed 0 of 8', JSON.stringify(seen));
    assert.equal(seen.at(-1), 'Keyed 8 of 8', JSON.stringify(seen));
    assert.equal(await browser.execute(() => document.querySelector('[data-testid="import-progress"] progress').value), 8);
    assert.equal(await exists('import-plan-done'), true, 'what it made stays in view');
    await showImport();
    await shot('43e-import-done');
    // Every key its own, in the store too; the same file again makes nothing.
    const stored = JSON.parse(cli('--json', 'list', '--all')).filter((t) => t.project === 'ENG').map((t) => t.key).sort();
    assert.deepEqual(stored, ['ENG-1', 'ENG-2', 'ENG-4', 'ENG-5', 'ENG-6', 'ENG-7', 'ENG-8', 'ENG-9']);
    await click('[data-testid="import-run"]');
    await eventually('the second summary', 20000, async () => /here already/.test((await textOf('import-summary')) ?? ''));
    assert.equal(await textOf('import-summary'), 'Imported 8 tasks from Jira: all 8 keyed, 8 of them here already from an earlier import');
    assert.equal(JSON.parse(cli('--json', 'list', '--all')).filter((t) => t.project === 'ENG').length, 8, 'nothing doubled');

    // Ctrl+K with the key as the tracker had it (any case) opens it; the detail says where from.
    await browser.keys('Escape');
    await eventually('Settings closed', 5000, async () => !(await exists('settings-dialog')));
    await eventually('ENG in the sidebar', 10000, () => exists('sidebar-project-ENG'));
    await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
    await browser.keys(['Control', 'k']);
    await eventually('the jump box', 5000, () => exists('jump-input'));
    await setField('jump-input', 'eng-8');
    const eng8 = JSON.parse(cli('--json', 'show', 'ENG-8'));
    await eventually('ENG-8 offered', 5000, async () =>
      (await browser.execute(() => document.querySelector('[data-testid="jump-result"][aria-selected="true"]')?.dataset.uuid)) === eng8.uuid);
    await shot('43f-import-jump');
    await browser.keys('Enter');
    await eventually('ENG-8 opened', 5000, async () => (await detailUuid()) === eng8.uuid);
    assert.equal(await browser.execute(() => document.querySelector('[data-testid="task-detail"]').dataset.key), 'ENG-8');
    assert.equal(await textOf('detail-origin'), 'Imported from Jira ENG-8');
    assert.match(await textOf('detail-parent'), /ENG-2/, 'a sub-task of ENG-2 in Jira, a subtask of it here');
    await shot('43g-imported-detail');
    await browser.keys('Escape');
  } finally {
    // The server back on its own port, no proxy.
    proxy.hold(false);
    proxy.release();
    await proxy.close();
    await stopServer();
    await startServer();
  }
});

// ---- Keys where the work happens (issue 43): a commit closes a task; its detail lists it ----

test('git: a commit through the hooks links ENG-7, its detail lists it, b copies the branch name; Fixes completes it', async () => {
  const repo = fs.mkdtempSync(path.join(tmp, 'repo-'));
  const env = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'Ann Author',
    GIT_AUTHOR_EMAIL: 'ann@example.org',
    GIT_COMMITTER_NAME: 'Ann Author',
    GIT_COMMITTER_EMAIL: 'ann@example.org',
  };
  const git = (...args) => execFileSync('git', args, { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  const commit = (file, message) => {
    fs.writeFileSync(path.join(repo, file), message);
    git('add', file);
    git('commit', '-q', '-m', message);
    return git('rev-parse', 'HEAD').trim();
  };
  const commitLine = (hash) =>
    browser.execute((h) => document.querySelector(`[data-testid="detail-commit"][data-hash="${h}"]`)?.textContent.replace(/\s+/g, ' ').trim() ?? null, hash);
  git('init', '-q', '-b', 'main');
  execFileSync(path.join(BIN, 'callsign'), ['--data-dir', clientDir, 'git', 'install'], { cwd: repo, env });
  const before = JSON.parse(cli('--json', 'show', 'ENG-7'));
  assert.equal(before.status, 'pending');
  assert.equal(before.open_children, 0);
  const branch = cli('branch', 'ENG-7', '--print').trim();
  assert.match(branch, /^eng-7-show-saved-cards-list/);

  // Open it in the app, then commit in the repository: the hook links the commit on this device
  // (the same data dir), and the app shows it once the change has gone round the server.
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  await browser.keys(['Control', 'k']);
  await eventually('the jump box', 5000, () => exists('jump-input'));
  await setField('jump-input', 'ENG-7');
  await eventually('ENG-7 offered', 5000, async () =>
    (await browser.execute(() => document.querySelector('[data-testid="jump-result"][aria-selected="true"]')?.dataset.uuid)) === before.uuid);
  await browser.keys('Enter');
  await eventually('ENG-7 opened', 5000, async () => (await detailUuid()) === before.uuid);
  const linked = commit('cards.txt', 'Sort saved cards by last use\n\nPart of ENG-7');
  const line = await eventually('the commit in the detail', 20000, () => commitLine(linked));
  assert.match(line, new RegExp(`^${linked.slice(0, 7)} Sort saved cards by last use Ann Author · `));
  assert.equal(await detailUuid(), before.uuid);
  await shot('44a-git-commit-in-detail');

  // `b` copies the branch name the key gives, as `callsign branch` makes it.
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  await browser.keys('b');
  const said = await eventually('a notice', 5000, async () => (await textOf('notice')) ?? (await textOf('error-banner')));
  assert.match(said, new RegExp(`^Copied ${branch}`));
  await shot('44b-git-branch-copied');

  // A closing commit completes it: it leaves the list of pending tasks, here as in the CLI.
  assert.equal(await browser.execute(() => document.querySelector('[data-testid="task-row"][data-key="ENG-7"]') !== null), true, 'in the list');
  const closing = commit('cards2.txt', 'Fixes ENG-7: the last card first');
  await eventually('ENG-7 completed in the app', 20000, () =>
    browser.execute(() => document.querySelector('[data-testid="task-row"][data-key="ENG-7"]') === null));
  const after = JSON.parse(cli('--json', 'show', 'ENG-7'));
  assert.equal(after.status, 'completed');
  assert.deepEqual(after.commits.map((c) => `${c.hash} ${c.action}`).sort(), [`${linked} refs`, `${closing} closes`].sort());
  await browser.keys('Escape');
});

test('quit from the tray stops the app cleanly with the outbox intact', async () => {
  if (server) await stopServer();
  await capture('Queued before quitting');
  await eventually('queued', 10000, async () => JSON.parse(cli('--json', 'status')).pending >= 1);
  const pending = JSON.parse(cli('--json', 'status')).pending;
  // The tray's Quit, as its menu item runs it. The app usually goes before WebKitWebDriver can
  // answer: the command then fails ("unknown error", which webdriverio retries) and ends in
  // `invalid session id` ("session deleted because of page crash or hang"), the one error that
  // means the app went. Then the app and its WebKit processes must exit by themselves, and the
  // session, its browser gone, is ended.
  const app = appProcesses();
  await invoke('tray_action', { action: 'quit' }).then(
    (answer) => assert.deepEqual(answer, { ok: null }),
    (e) => {
      if (e.name !== 'invalid session id') throw e;
    },
  );
  await exited('the app after Quit', app, 15000);
  await endSession();
  const after = JSON.parse(cli('--json', 'status'));
  assert.equal(after.pending, pending, 'the outbox as it was');
  // The sync lock was released: the CLI syncs at once when the server is back.
  await startServer();
  cli('sync', '--timeout', '20');
  assert.equal(JSON.parse(cli('--json', 'status')).pending, 0);
  const t = JSON.parse(cli('--json', 'list')).find((x) => x.description === 'Queued before quitting');
  assert.match(t.key ?? '', /^PFX-\d+$/);
});

test('join a team: a second device joins with an invite code from Settings, its captures sync; a used code is refused in words', async () => {
  // The owner makes a code with the CLI, logged in on a data dir of their own.
  if (!server) await startServer();
  const url = `http://127.0.0.1:${port}`;
  const ownerDir = path.join(tmp, 'owner');
  const owner = (...args) => execFileSync(path.join(BIN, 'callsign'), ['--data-dir', ownerDir, ...args]).toString();
  owner('login', '--server', url, '--token', token);
  const invite = JSON.parse(owner('--json', 'invite'));
  assert.match(invite.code, /^[0-9A-Z]{4}(-[0-9A-Z]{4}){3}$/);
  // The new device: the app on a fresh data dir, no login.
  await closeApp();
  const bobDir = path.join(tmp, 'bob');
  await openApp(bobDir, path.join(tmp, 'xdg-bob'));
  await (await browser.$('[data-testid="capture"]')).waitForDisplayed({ timeout: 15000 });
  await eventually('local only', 10000, async () => /local only/i.test((await textOf('sync-text')) ?? ''));
  await click('[data-testid="settings-open"]');
  await eventually('the join form', 5000, () => exists('settings-join'));
  assert.equal(await exists('settings-member'), false, 'no member before joining');
  await setField('settings-join-url', url);
  await setField('settings-join-code', invite.code.toLowerCase());
  await setField('settings-join-name', '@bob');
  await browser.execute(() => document.querySelector('[data-testid="settings-join"]').scrollIntoView());
  await shot('50-join-filled');
  // Enter in the form joins (not Save).
  await (await browser.$('[data-testid="settings-join-name"]')).click();
  await browser.keys('Enter');
  const done = await eventually('joined', 15000, () => textOf('settings-join-done'));
  assert.equal(done, `Joined ${url} as @bob (member).`);
  assert.match(await textOf('settings-member'), /Signed in as @bob \(member\) at http:\/\/127\.0\.0\.1:\d+/);
  assert.equal(await exists('settings-dialog'), true, 'the dialog stays open to show it');
  assert.equal(await browser.execute(() => document.querySelector('[data-testid="settings-server-url"]').value), url);
  await browser.execute(() => { document.querySelector('[data-testid="settings-dialog"]').scrollTop = 0; });
  await shot('51-joined');
  // The server knows bob, and the owner sees him among the members.
  const members = JSON.parse(owner('--json', 'members')).members;
  assert.deepEqual(members.find((m) => m.name === 'bob'), { name: 'bob', role: 'member' });
  // The same code again (as a third person would paste it): refused, the fields as typed.
  await setField('settings-join-code', invite.code);
  await setField('settings-join-name', 'carol');
  await click('[data-testid="settings-join-submit"]');
  const refused = await eventually('the refusal', 15000, () => textOf('settings-join-error'));
  assert.match(refused, /^Invite code already used: this invite code was used already \(each works once\): ask an owner for a new one$/);
  assert.deepEqual(
    await browser.execute(() => ['settings-join-code', 'settings-join-name'].map((id) => document.querySelector(`[data-testid="${id}"]`).value)),
    [invite.code, 'carol'],
    'a refusal keeps what was typed',
  );
  assert.match(await textOf('settings-member'), /@bob \(member\)/, 'still bob');
  await browser.execute(() => document.querySelector('[data-testid="settings-join"]').scrollIntoView());
  await shot('52-join-refused');
  // A fresh code with a name the team has: refused too, the code still good.
  const second = JSON.parse(owner('--json', 'invite'));
  await setField('settings-join-code', second.code);
  await setField('settings-join-name', 'bob');
  await click('[data-testid="settings-join-submit"]');
  await eventually('the name refused', 15000, async () =>
    /^Member name already in use: the team has or had a member named bob: choose another name \(the code is still good\)$/.test(
      (await textOf('settings-join-error')) ?? ''));
  // A code no owner made (a typo): refused as unknown.
  await setField('settings-join-code', '7KQ2-M9XD-4TRA-Z0PB');
  await setField('settings-join-name', 'carol');
  await click('[data-testid="settings-join-submit"]');
  await eventually('the unknown code refused', 15000, async () =>
    /^No such invite code: no invite has this code: check it, or ask an owner for a new one$/.test(
      (await textOf('settings-join-error')) ?? ''));
  await browser.keys('Escape');
  await eventually('the dialog closed', 5000, async () => !(await exists('settings-dialog')));
  // A capture on bob's device goes to the team's project and gets its key from the server
  // (#PFX: the default is the team's first project by name, OPS when the story ran before).
  await capture('Captured by bob #PFX');
  const row = await eventually('a PFX key', 15000, async () => {
    const r = await rowByText('Captured by bob');
    return /^PFX-\d+$/.test(r?.key ?? '') ? r : null;
  });
  const seen = await eventually('the owner sees it', 15000, () => {
    owner('sync', '--timeout', '10');
    return JSON.parse(owner('--json', 'list', '--all')).find((t) => t.description === 'Captured by bob') ?? null;
  });
  assert.equal(seen.key, row.key);
  await shot('53-bob-synced');
});

test('assignees: "@bob" in a capture assigns it; the row has a badge, the detail who created it; Assigned to me', async () => {
  // Bob's device, as the join above left it: logged in as @bob of the team.
  const ownerDir = path.join(tmp, 'owner');
  const owner = (...args) => execFileSync(path.join(BIN, 'callsign'), ['--data-dir', ownerDir, ...args]).toString();
  await capture('Review notes #PFX @bob');
  const row = await eventually('a PFX key', 15000, async () => {
    const r = await rowByText('Review notes');
    return /^PFX-\d+$/.test(r?.key ?? '') ? r : null;
  });
  const desc = await browser.execute((u) => document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] .desc`).textContent.trim(), row.uuid);
  assert.equal(desc, 'Review notes', 'the mention leaves the description');
  const badge = await browser.execute((u) => {
    const b = document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] [data-testid="row-assignee"]`);
    return b && { who: b.dataset.assignee, title: b.title, text: b.firstChild.textContent, w: b.offsetWidth, h: b.offsetHeight };
  }, row.uuid);
  assert.deepEqual({ ...badge, w: undefined, h: undefined }, { who: 'bob', title: 'Assigned to @bob', text: 'B', w: undefined, h: undefined });
  assert.equal(badge.w, badge.h, 'a round badge');
  assert.equal(await browser.execute(() => document.querySelectorAll('[data-testid="row-assignee"]').length), 1, 'only the assigned row has one');
  await selectRow('Review notes');
  await shot('54-row-assignee-badge');
  // The server stamped who created it; the owner's device sees the assignee.
  await browser.keys('Enter');
  await eventually('the creator', 15000, async () => (await textOf('detail-created-by')) === '@bob');
  assert.equal(await browser.execute(() => document.querySelector('[data-testid="detail-assignee"]').value), 'bob');
  const options = await browser.execute(() => [...document.querySelectorAll('[data-testid="detail-assignee"] option')].map((o) => o.textContent));
  assert.equal(options[0], 'Nobody');
  assert.ok(options.includes('@bob'), `the team's members: ${options}`);
  await shot('55-detail-created-by-assignee');
  const seen = await eventually('the owner sees the assignee', 15000, () => {
    owner('sync', '--timeout', '10');
    return JSON.parse(owner('--json', 'list', '--all')).find((t) => t.key === row.key && t.assignee === 'bob') ?? null;
  });
  assert.equal(seen.created_by, 'bob');
  // Assigned to me: this task, and not a task nobody has.
  await browser.keys('Escape');
  await click('[data-testid="sidebar-mine"]');
  await eventually('the view scoped', 5000, async () => (await rows()).every((r) => r.text.includes('Review notes')) && (await rows()).length === 1);
  assert.match(await textOf('sidebar-mine'), /Assigned to me\s*1/);
  await shot('56-assigned-to-me');
  // Given to nobody from the detail: the badge goes, and so does the row from Assigned to me.
  await selectRow('Review notes');
  await browser.keys('Enter');
  await eventually('the detail', 5000, () => exists('detail-assignee'));
  await setField('detail-assignee', '');
  await eventually('gone from Assigned to me', 10000, async () => (await rows()).length === 0);
  assert.match(await textOf('task-list'), /Nothing pending is assigned to @bob\./);
  // A capture in Assigned to me is mine: it stays in view, with the badge.
  await capture('Draft the agenda #PFX');
  const mine = await eventually('the capture in view', 10000, () => rowByText('Draft the agenda'));
  assert.equal(await browser.execute((u) => document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] [data-testid="row-assignee"]`)?.dataset.assignee, mine.uuid), 'bob');
  await click('[data-testid="sidebar-all"]');
  const after = await eventually('the row again', 5000, () => rowByText('Review notes'));
  assert.equal(await browser.execute((u) => document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] [data-testid="row-assignee"]`), after.uuid), null);
});

test("a teammate's task reaches the open app by itself within seconds: the held change request", async () => {
  // Bob's app is open and idle on All; the owner adds a task for bob with the CLI on a device
  // of their own. Nothing is clicked or reloaded here: the app's sync loop holds a
  // `GET /v1/changes?wait=` open, and the server answers it when the owner's create commits.
  const ownerDir = path.join(tmp, 'owner');
  const owner = (...args) => execFileSync(path.join(BIN, 'callsign'), ['--data-dir', ownerDir, ...args]).toString();
  await click('[data-testid="sidebar-all"]');
  await eventually('All', 5000, async () => (await rows()).length > 0);
  const count = () => browser.execute(() => Number(document.querySelector('[data-testid="task-list"]').dataset.count));
  const before = await count();
  await shot('57-before-teammate-task');
  const added = JSON.parse(owner('--json', 'add', '--project', 'PFX', 'Rotate the server keys', '@bob'));
  owner('sync', '--timeout', '10');
  const key = JSON.parse(owner('--json', 'list')).find((t) => t.uuid === added.uuid)?.key;
  assert.match(key ?? '', /^PFX-\d+$/, 'numbered by the server');
  const synced = Date.now();
  // The periodic pull is 10 minutes away: only the held request brings it this soon.
  const row = await eventually('the owner\'s task in the open app', 5000, async () => {
    const r = (await rows()).find((x) => x.uuid === added.uuid);
    return r?.key === key ? r : null;
  });
  const ms = Date.now() - synced;
  assert.ok(ms < 5000, `arrived ${ms} ms after the owner's sync`);
  assert.equal(await count(), before + 1, 'one more task, nothing else changed');
  assert.equal(row.selected, false, 'it does not take the highlight');
  assert.equal(await browser.execute((u) => document.querySelector(`[data-testid="task-row"][data-uuid="${u}"] [data-testid="row-assignee"]`)?.dataset.assignee ?? null, row.uuid), 'bob');
  await shot('58-teammate-task-arrived');
});

test('standup: per member, keys first; a line opens its task; the day can change', async () => {
  const ownerDir = path.join(tmp, 'owner');
  const owner = (...args) => execFileSync(path.join(BIN, 'callsign'), ['--data-dir', ownerDir, ...args]).toString();
  const ownerList = JSON.parse(owner('--json', 'list', '--all'));
  const fix = ownerList.find((t) => t.description === 'Rotate the server keys');
  await browser.execute(() => document.querySelector('[data-testid="task-list"]').focus());
  // g s: the standup, in the list's place.
  await browser.keys(['g', 's']);
  await eventually('the standup', 5000, async () => (await browser.execute(() => document.querySelectorAll('[data-testid="standup-member"]').length)) === 2);
  assert.equal(await exists('task-list'), false);
  assert.equal(await browser.execute(() => document.querySelector('[data-testid="sidebar-standup"]').getAttribute('aria-current')), 'true');
  const report = () => browser.execute(() => Object.fromEntries([...document.querySelectorAll('[data-testid="standup-member"]')].map((m) => [
    m.dataset.member,
    {
      heading: m.querySelector('h3').textContent.trim(),
      empty: m.querySelector('[data-testid="standup-member-empty"]')?.textContent ?? null,
      ...Object.fromEntries([...m.querySelectorAll('[data-testid="standup-section"]')].map((s) => [
        s.dataset.section,
        [...s.querySelectorAll('[data-testid="standup-line"]')].map((l) => ({
          uuid: l.dataset.uuid,
          key: l.dataset.key ?? null,
          provisional: l.dataset.provisional === 'true',
          text: [...l.children].map((c) => c.textContent.trim()).join('  '),
        })),
      ])),
    },
  ])));
  const said = (lines) => (lines ?? []).map((l) => l.text);
  const r = await report();
  assert.deepEqual(Object.keys(r), ['bob', 'owner'], 'both members, by name');
  assert.equal(r.bob.heading, '@bob (you)');
  assert.equal(r.owner.heading, '@owner');
  // Each line as said aloud, the key first; bob's open lines are what is assigned to him.
  assert.ok(said(r.owner.created).includes(`${fix.key}  Rotate the server keys`), JSON.stringify(r.owner));
  assert.ok(said(r.bob.open).includes(`${fix.key}  Rotate the server keys`), JSON.stringify(r.bob));
  assert.ok(said(r.bob.open).some((t) => /^PFX-\d+  Draft the agenda$/.test(t)), JSON.stringify(r.bob));
  assert.ok(said(r.bob.created).some((t) => /^PFX-\d+  Captured by bob$/.test(t)), JSON.stringify(r.bob));
  assert.ok(said(r.bob.created).some((t) => /^PFX-\d+  Review notes$/.test(t)), JSON.stringify(r.bob));
  assert.equal(r.bob.completed, undefined, 'bob completed nothing yet');
  assert.ok([...r.bob.created, ...r.owner.created].every((l) => !l.provisional && /^[A-Z]+-\d+(\.\d+)*$/.test(l.key)), 'all numbered');
  // The same report the CLI prints for the owner's device (after a sync, the same tasks).
  owner('sync', '--timeout', '10');
  const cliReport = JSON.parse(owner('--json', 'standup'));
  const cliBob = cliReport.members.find((m) => m.name === 'bob');
  assert.deepEqual(cliBob.open.map((l) => `${l.key}  ${l.description}`), said(r.bob.open), 'the CLI says the same');
  assert.match(await textOf('standup-heading'), /^Standup · since (Monday|Tuesday|Wednesday|Thursday|Friday|yesterday)$/);
  await shot('59-standup');

  // A click on a line opens its task in the detail, beside the standup.
  const captured = r.bob.created.find((l) => l.text.endsWith('Captured by bob'));
  await click(`[data-testid="standup-line"][data-uuid="${captured.uuid}"]`);
  await eventually('the detail', 5000, async () => (await detailUuid()) === captured.uuid);
  assert.equal(await textOf('detail-created-by'), '@bob');
  assert.equal(await exists('standup'), true, 'the standup stays');
  await shot('60-standup-line-opened');
  // x completes the highlighted line's task: it moves to bob's Completed on its own.
  await browser.keys('x');
  await eventually('completed in the standup', 10000, async () => said((await report()).bob.completed).some((t) => t.endsWith('Captured by bob')));
  assert.equal((await report()).bob.created.some((l) => l.uuid === captured.uuid), true, 'still created since then');
  // j / k walk the lines and the detail follows.
  await browser.keys('Escape');
  await eventually('the detail closed', 5000, async () => (await detailUuid()) === null);
  await browser.keys('g');
  await sleep(1100); // g alone: the first line, after the sequence window
  await browser.keys('j');
  await browser.keys('Enter');
  const second = await browser.execute(() => document.querySelectorAll('[data-testid="standup-line"]')[1].dataset.uuid);
  await eventually('the second line opened', 5000, async () => (await detailUuid()) === second);
  await browser.keys('Escape');

  // Since a later day: nothing completed or created then; what is open and assigned stays.
  await setField('standup-since', 'day');
  await eventually('the day field', 5000, () => exists('standup-day'));
  await setField('standup-day', localDate(1));
  await (await browser.$('[data-testid="standup-day"]')).click();
  await browser.keys('Enter');
  await eventually('the report since tomorrow', 10000, async () => {
    const later = await report();
    return later.owner.empty !== null && later.bob.created === undefined && later.bob.completed === undefined && said(later.bob.open).length >= 2;
  });
  assert.equal((await report()).owner.empty, 'Nothing since tomorrow, nothing open.');
  assert.match(await textOf('standup-heading'), /^Standup · since tomorrow$/);
  await shot('61-standup-since-a-day');
  // A day it cannot read is refused in words, the last report kept.
  await setField('standup-day', 'someday');
  await (await browser.$('[data-testid="standup-day"]')).click();
  await browser.keys('Enter');
  const refused = await eventually('the refusal', 10000, () => textOf('standup-error'));
  assert.match(refused, /'someday' is not a date/);
  assert.equal(await browser.execute(() => document.querySelectorAll('[data-testid="standup-member"]').length), 2);
  await shot('62-standup-day-refused');
  // Offline, a capture made here is bob's at once, plainly provisional; its key comes in place.
  await setField('standup-since', 'last');
  await eventually('the last working day again', 10000, async () => !(await exists('standup-day')) && (await report()).bob.created !== undefined);
  await stopServer();
  await (await browser.$('[data-testid="capture"]')).setValue('Draft the retro notes #PFX');
  await browser.keys('Enter');
  const draft = await eventually('the provisional line', 10000, async () =>
    (await report()).bob.created.find((l) => l.text.endsWith('Draft the retro notes')) ?? null);
  assert.equal(draft.provisional, true);
  assert.equal(draft.key, null, 'no key to say yet');
  assert.equal(draft.text, 'provisional  Draft the retro notes');
  assert.equal(await exists('task-list'), false, 'still the standup');
  await shot('63-standup-provisional');
  await startServer();
  const keyed = await eventually('its key in place', 20000, async () => {
    const l = (await report()).bob.created.find((x) => x.uuid === draft.uuid);
    return l && !l.provisional ? l : null;
  });
  assert.match(keyed.text, /^PFX-\d+  Draft the retro notes$/);
  await shot('64-standup-keyed');
  // g a: the list again.
  await browser.execute(() => document.querySelector('[data-testid="standup-lines"]').focus());
  await browser.keys(['g', 'a']);
  await eventually('the list again', 5000, () => exists('task-list'));
});

test('a restored server: a capture waits in plain words, and gets the next key once the team has checked in', async () => {
  // Bob's app is open. The admin backs the server up; the owner then files a task whose key is
  // said aloud; the server is restored from the backup, which lacks it.
  const ownerDir = path.join(tmp, 'owner');
  const owner = (...args) => execFileSync(path.join(BIN, 'callsign'), ['--data-dir', ownerDir, ...args]).toString();
  const admin = (...args) => JSON.parse(execFileSync(path.join(BIN, 'callsign-server'), [...args, '--data-dir', serverDir]).toString());
  if (!server) await startServer();
  await click('[data-testid="sidebar-all"]');
  await eventually('All', 5000, async () => (await rows()).length > 0);
  owner('sync', '--timeout', '10');
  const backup = path.join(tmp, 'backup');
  admin('backup', '--to', backup);
  const said = JSON.parse(owner('--json', 'add', '--project', 'PFX', 'Said aloud after the backup'));
  owner('sync', '--timeout', '10');
  const saidKey = JSON.parse(owner('--json', 'show', said.uuid)).key;
  const n = Number(saidKey.split('-')[1]);
  await eventually('the said-aloud task in bob\'s app', 10000, async () => (await rows()).find((r) => r.uuid === said.uuid)?.key === saidKey);
  await stopServer();
  admin('restore', '--from', backup);
  await startServer();

  // Bob captures: the task waits, and says why in plain words; bob's app brings back its keys.
  await capture('Captured after the restore #PFX');
  // On a timeout, what the app and the server showed instead.
  let seen;
  const waiting = await eventually('the recovering marker', 20000, async () => {
    const r = await rowByText('Captured after the restore');
    seen = { row: r, header: await textOf('sync-text') };
    return r?.marker === 'server recovering' ? r : null;
  }).catch((e) => {
    throw new Error(`${e.message}; the app showed ${JSON.stringify(seen)}; the server: ${JSON.stringify(admin('recovery', 'status'))}; the app's log ends:\n${appLogTail(40)}`);
  });
  assert.equal(waiting.key, null, 'no key while the server recovers');
  await eventually('the header saying so', 5000, async () => /^Sending 1 · server recovering$/.test((await textOf('sync-text')) ?? ''));
  await selectRow('Captured after the restore');
  await browser.keys('o');
  const why = await eventually('the reason in the detail', 5000, () => textOf('detail-sync'));
  assert.match(why, /^waiting for its key: the server is recovering from a backup; your task keeps its place and gets its key when the team's devices have checked in/);
  const status = admin('recovery', 'status');
  assert.ok(status.recovering.some((r) => r.prefix === 'PFX'), JSON.stringify(status));
  assert.deepEqual(status.waiting_for.map((d) => d.member), ['owner'], 'bob has checked in; the owner has not');
  assert.equal(status.recovering.find((r) => r.prefix === 'PFX').last, n, 'bob brought back the key said aloud');
  await shot('65-recovering');

  // The owner's device syncs: recovery ends, and bob's capture gets the next number in place.
  owner('sync', '--timeout', '10');
  const keyed = await eventually('its key in place', 20000, async () => {
    const r = await rowByText('Captured after the restore');
    return r?.key ? r : null;
  });
  assert.equal(keyed.key, `PFX-${n + 1}`, `the next number after ${saidKey}, never ${saidKey} again`);
  assert.deepEqual(admin('recovery', 'status').recovering, []);
  // Nothing is left to send: the held create is done once its key has come (no 60 s retry).
  await eventually('all synced', 5000, async () => (await textOf('sync-text')) === 'All synced');
  await eventually('the detail without the reason', 5000, async () => (await textOf('detail-sync')) === null || !/recovering/.test(await textOf('detail-sync')));
  await shot('66-recovered');
  await browser.keys('Escape');
});
