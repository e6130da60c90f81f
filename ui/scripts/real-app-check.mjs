#!/usr/bin/env node
// The UI inside the real app (target/debug/callsign-desktop, which embeds ui/dist) against a
// real callsign-server: three tasks captured while the server is down show "offline" markers,
// then get PFX-1..3 in place when it starts. Uses tauri-driver on port $DRIVER_PORT (default
// 4544, so it does not collide with tests/desktop on 4444). Prints what it sees; screenshots in
// target/ui-smoke/real-app-*.png. Tasks are typed with "#PFX": a device logged in while the
// server was down has no default project yet. Build the binaries first (cargo build), then:
//   xvfb-run -a -s "-screen 0 1280x800x24" node scripts/real-app-check.mjs
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'target', 'debug');
const SHOTS = path.join(ROOT, 'target', 'ui-smoke');
fs.mkdirSync(SHOTS, { recursive: true });
const DRIVER_PORT = Number(process.env.DRIVER_PORT ?? 4544);
const tmp = fs.mkdtempSync('/tmp/cs-sync-');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () => new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); }); });
const port = await freePort();
const acct = JSON.parse(execFileSync(`${BIN}/callsign-server`, ['account', 'create', '--data-dir', `${tmp}/server`, '--name', 'ui', '--prefix', 'PFX']).toString());
execFileSync(`${BIN}/callsign`, ['--data-dir', `${tmp}/client`, 'login', '--server', `http://127.0.0.1:${port}`, '--token', acct.token, '--device', 'ui-check']);
const d = spawn('tauri-driver', ['--port', String(DRIVER_PORT), '--native-port', String(DRIVER_PORT + 1)], { stdio: 'inherit', env: { ...process.env, CALLSIGN_DATA_DIR: `${tmp}/client` } });
await sleep(1500);
const base = `http://127.0.0.1:${DRIVER_PORT}`;
const wd = async (m, p, b) => { const r = await fetch(base + p, { method: m, headers: { 'content-type': 'application/json' }, body: b && JSON.stringify(b) }); const j = await r.json(); if (!r.ok) throw new Error(JSON.stringify(j).slice(0, 300)); return j.value; };
let sid, server;
const t0 = Date.now();
try {
  sid = (await wd('POST', '/session', { capabilities: { alwaysMatch: { browserName: 'wry', 'tauri:options': { application: `${BIN}/callsign-desktop` } } } })).sessionId;
  const s = (p) => `/session/${sid}${p}`;
  const exec = (script, ...args) => wd('POST', s('/execute/sync'), { script, args });
  const keys = (text) => wd('POST', s('/actions'), { actions: [{ type: 'key', id: 'kb', actions: [...text].flatMap((c) => [{ type: 'keyDown', value: c }, { type: 'keyUp', value: c }]) }] });
  const rows = () => exec('return [...document.querySelectorAll("[data-testid=task-row]")].map(r => [r.dataset.uuid.slice(0,8), r.dataset.key ?? null, r.querySelector("[data-testid=provisional-marker]")?.textContent.trim() ?? null, Math.round(r.getBoundingClientRect().top)])');
  for (let i = 0; i < 50; i++) { if (await exec('return !!document.querySelector("[data-testid=capture]")')) break; await sleep(200); }
  await sleep(500);
  for (const t of ['One #PFX', 'Two #PFX', 'Three #PFX']) await keys(`${t}\uE007`);
  await sleep(1500);
  console.log('capture value:', await exec('return document.querySelector("[data-testid=capture]").value'), 'notice:', await exec('return document.querySelector("[data-testid=notice], [data-testid=error-banner]")?.textContent'));
  await sleep(5000);
  console.log('after 5 s more:', JSON.stringify(await rows()), await exec('return document.querySelector("[data-testid=notice], [data-testid=error-banner]")?.textContent'));
  console.log('offline rows:', JSON.stringify(await rows()));
  console.log('sync:', await exec('return document.querySelector("[data-testid=sync-indicator]").textContent.replace(/\\s+/g, " ")'));
  const shot = async (n) => fs.writeFileSync(path.join(SHOTS, `${n}.png`), Buffer.from(await wd('GET', s('/screenshot')), 'base64'));
  await shot('real-app-offline');
  server = spawn(`${BIN}/callsign-server`, ['serve', '--data-dir', `${tmp}/server`, '--listen', `127.0.0.1:${port}`], { stdio: 'ignore' });
  const started = Date.now();
  for (let i = 0; i < 100; i++) { const r = await rows(); if (r.every((x) => x[1])) break; await sleep(200); }
  console.log(`after server start (${Date.now() - started} ms):`, JSON.stringify(await rows()));
  console.log('focus:', await exec('return document.activeElement?.dataset.testid'));
  console.log('sync:', await exec('return document.querySelector("[data-testid=sync-indicator]").textContent.replace(/\\s+/g, " ")'));
  await sleep(300);
  await shot('real-app-synced');
} catch (e) { console.error('ERR', e.message); process.exitCode = 1; }
finally { if (sid) await wd('DELETE', `/session/${sid}`).catch(() => {}); d.kill(); server?.kill(); await sleep(300); fs.rmSync(tmp, { recursive: true, force: true }); }
