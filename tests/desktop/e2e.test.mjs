// End-to-end tests of the desktop app in a real WebKitGTK window: Xvfb + WebKitWebDriver,
// driven through tauri-driver, against a real callsign-server on 127.0.0.1.
// Run by scripts/test-desktop.sh (which builds everything and starts Xvfb).
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
    await sleep(150);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${last})`);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'callsign-desktop-e2e-'));
const serverDir = path.join(tmp, 'server');
const clientDir = path.join(tmp, 'client');
let port;
let token;
let server;
let driver;
let browser;

function startServer() {
  server = spawn(path.join(BIN, 'callsign-server'),
    ['serve', '--data-dir', serverDir, '--listen', `127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RUST_LOG: 'warn' } });
  return waitForPort(port, 15000);
}

async function stopServer() {
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  await exited;
  server = null;
}

async function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await browser.saveScreenshot(path.join(SHOTS, `${name}.png`));
}

// Reads go through script execution (textContent, data attributes): element-level WebDriver
// reads are unreliable on WebKitWebDriver.
const rows = () => browser.execute(() => [...document.querySelectorAll('[data-testid="task-row"]')].map((r) => ({
  uuid: r.dataset.uuid,
  key: r.dataset.key ?? null,
  text: r.textContent,
  marker: r.querySelector('[data-testid="provisional-marker"]')?.textContent.trim() ?? null,
})));
const textOf = (testid) => browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? null, testid);

async function rowByText(text) {
  return (await rows()).find((r) => r.text.includes(text)) ?? null;
}

before(async () => {
  port = await freePort();
  const acct = JSON.parse(execFileSync(path.join(BIN, 'callsign-server'),
    ['account', 'create', '--data-dir', serverDir, '--name', 'e2e', '--prefix', 'PFX']).toString());
  token = acct.token;
  // Log in while the server is up (that fetches the default project), then go offline.
  await startServer();
  execFileSync(path.join(BIN, 'callsign'), ['--data-dir', clientDir, 'login',
    '--server', `http://127.0.0.1:${port}`, '--token', token, '--device', 'e2e-desktop']);
  await stopServer();
  driver = spawn('tauri-driver', ['--port', String(DRIVER_PORT), '--native-port', '4445'],
    { stdio: 'inherit', env: { ...process.env, CALLSIGN_DATA_DIR: clientDir, RUST_LOG: 'warn' } });
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
});

after(async () => {
  await browser?.deleteSession().catch(() => {});
  driver?.kill();
  server?.kill();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('offline: three tasks captured through the UI show provisional markers saying offline', async () => {
  const capture = await browser.$('[data-testid="capture"]');
  await capture.waitForDisplayed({ timeout: 15000 });
  const focused = await browser.execute(() => document.activeElement?.dataset?.testid ?? null);
  assert.equal(focused, 'capture', 'quick capture is focused on start');
  for (const d of ['First offline task', 'Second offline task', 'Third offline task']) {
    await capture.setValue(d);
    await browser.keys('Enter');
  }
  const list = await eventually('three rows saying offline', 10000, async () => {
    const rs = await rows();
    return rs.length === 3 && rs.every((r) => /offline/i.test(r.marker ?? '')) ? rs : null;
  });
  assert.match(list[0].text, /Third offline task/, 'newest at the top');
  assert.ok(list.every((r) => r.key === null), 'no keys yet');
  await shot('1-offline-provisional');
});

test('server starts: the three tasks get PFX-1..3 in place, without a reload', async () => {
  const uuids = (await rows()).map((r) => r.uuid);
  await startServer();
  const list = await eventually('keys on all three rows', 30000, async () => {
    const rs = await rows();
    return rs.length === 3 && rs.every((r) => r.key && r.key.startsWith('PFX-')) ? rs : null;
  });
  assert.deepEqual(list.map((r) => r.key).sort(), ['PFX-1', 'PFX-2', 'PFX-3']);
  assert.equal((await rowByText('Third offline task')).key, 'PFX-3', 'numbered in creation order');
  assert.deepEqual(list.map((r) => r.uuid), uuids, 'same rows, same order: replaced in place');
  await shot('2-synced-keys');
});

test('a task added with the CLI on the same data dir appears in the open app', async () => {
  execFileSync(path.join(BIN, 'callsign'), ['--data-dir', clientDir, 'add', 'Added from the CLI']);
  await eventually('the CLI task in the list, numbered PFX-4', 20000,
    async () => (await rowByText('Added from the CLI'))?.key === 'PFX-4');
  await shot('3-cli-task');
});

test('jump-to-key: "pfx 2" opens task 2; "pfx 99" says not found', async () => {
  await browser.keys(['Control', 'k']);
  const jump = await browser.$('[data-testid="jump-input"]');
  await jump.waitForDisplayed({ timeout: 5000 });
  await jump.setValue('pfx 2');
  await browser.keys('Enter');
  const detail = await eventually('task 2 opened', 5000, async () => {
    const t = await textOf('task-detail');
    return t && t.includes('PFX-2') ? t : null;
  });
  assert.match(detail, /Second offline task/);
  await shot('4-jump-found');
  await browser.keys('Escape');
  await browser.keys(['Control', 'k']);
  const jump2 = await browser.$('[data-testid="jump-input"]');
  await jump2.waitForDisplayed({ timeout: 5000 });
  await jump2.setValue('pfx 99');
  await browser.keys('Enter');
  const nf = await eventually('not found message', 5000, () => textOf('jump-not-found'));
  assert.match(nf, /PFX-99/i);
  await shot('5-jump-not-found');
});
