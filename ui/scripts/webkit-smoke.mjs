#!/usr/bin/env node
// Drives the UI preview (dist-preview: the real UI over the in-memory fake backend) in a real
// WebKitGTK window through WebKitWebDriver and MiniBrowser, with no npm dependencies (the
// WebDriver protocol over fetch). Checks the main flows, measures first list paint with 50,000
// tasks, per-keystroke filter time and scrolling, and saves screenshots.
//
//   npm run build:preview && xvfb-run -a -s "-screen 0 1280x800x24" node scripts/webkit-smoke.mjs
//
// Output: a table on stdout; screenshots in $SHOTS (default ../target/ui-smoke).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

const UI = path.resolve(import.meta.dirname, '..');
const ROOT = path.join(UI, 'dist-preview');
const SHOTS = process.env.SHOTS ?? path.resolve(UI, '../target/ui-smoke');
const MINIBROWSER = process.env.MINIBROWSER ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.png': 'image/png' };
// A baseline for the scrolling figures: 3,000 plain rows, no script, same row look.
const BASELINE = `<!doctype html><style>body{margin:0;font-family:sans-serif}#v{height:640px;overflow-y:auto}
.r{height:40px;display:flex;align-items:center;gap:12px;border-bottom:1px solid #ddd;padding:0 12px}
.k{width:12rem;font-family:monospace;color:#24d}</style><div id=v data-testid=task-list>${Array.from({ length: 3000 },
  (_, i) => `<div class=r><span class=k>SYN-${i}</span><span>Task description number ${i}</span></div>`).join('')}</div>`;

function serve(port) {
  const srv = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/baseline') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(BASELINE);
      return;
    }
    const file = path.join(ROOT, url.pathname === '/' ? 'preview.html' : decodeURIComponent(url.pathname));
    if (!file.startsWith(ROOT) || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((r) => srv.listen(port, '127.0.0.1', () => r(srv)));
}

let base;
let session;
async function wd(method, p, body) {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${p}: ${JSON.stringify(json.value ?? json).slice(0, 400)}`);
  return json.value;
}
const s = (p) => `/session/${session}${p}`;
const exec = (script, ...args) => wd('POST', s('/execute/sync'), { script, args });
const execAsync = (script, ...args) => wd('POST', s('/execute/async'), { script, args });
const $ = (css) => exec('return document.activeElement === document.querySelector(arguments[0])', css);
async function keys(text) {
  // Actions API: one key at a time (\uE007 is Enter, \uE009 Control, \uE00C Escape).
  const actions = [];
  for (const ch of text) actions.push({ type: 'keyDown', value: ch }, { type: 'keyUp', value: ch });
  await wd('POST', s('/actions'), { actions: [{ type: 'key', id: 'kb', actions }] });
}
async function chord(mod, key) {
  await wd('POST', s('/actions'), {
    actions: [{ type: 'key', id: 'kb', actions: [
      { type: 'keyDown', value: mod }, { type: 'keyDown', value: key },
      { type: 'keyUp', value: key }, { type: 'keyUp', value: mod },
    ] }],
  });
}
const ENTER = '\uE007';
const CTRL = '\uE009';
const ESC = '\uE00C';

async function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await sleep(250); // the screenshot is the last painted frame: let the latest change paint
  const png = await wd('GET', s('/screenshot'));
  const file = path.join(SHOTS, `${name}.png`);
  fs.writeFileSync(file, Buffer.from(png, 'base64'));
  return file;
}

async function eventually(what, ms, f) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await f().catch((e) => e);
    if (last && !(last instanceof Error)) return last;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

async function measureScroll(label, px) {
  const scroll = await execAsync(`
    const done = arguments[arguments.length - 1];
    const v = document.querySelector('[data-testid=task-list]');
    const frames = [];
    let last = performance.now();
    let i = 0;
    const step = () => {
      const now = performance.now();
      frames.push(now - last);
      last = now;
      v.scrollTop += arguments[0];
      if (++i < 240) requestAnimationFrame(step); else done({ frames });
    };
    requestAnimationFrame(step);`, px);
  const fr = scroll.frames.slice(1).sort((a, b) => a - b);
  results.push([`${label}, median / p95 / max frame (ms)`,
    `${med(fr).toFixed(1)} / ${fr[Math.floor(fr.length * 0.95)].toFixed(1)} / ${fr[fr.length - 1].toFixed(1)}`]);
}

async function open(query) {
  await wd('POST', s('/url'), { url: `${base.replace(/:\d+$/, `:${webPort}`)}/?${query}` });
  await eventually('the app', 15000, () => exec('return document.querySelector("[data-testid=capture]") !== null'));
  if (!/n=50000/.test(query)) {
    await eventually('the list', 15000, () => exec('return window.__callsignPerf?.initialCount !== null && !document.querySelector("[data-testid=list-empty]")?.textContent.includes("Loading")'));
  }
}

const rowsInfo = () =>
  exec(`return [...document.querySelectorAll('[data-testid=task-row]')].map(r => ({
    uuid: r.dataset.uuid, key: r.dataset.key ?? null, top: r.getBoundingClientRect().top,
    marker: r.querySelector('[data-testid=provisional-marker]')?.textContent.trim() ?? null,
    text: r.textContent.replace(/\\s+/g, ' ').trim() }))`);

const results = [];
const checks = [];
function check(name, ok, detail = '') {
  checks.push({ name, ok, detail });
  if (!ok) process.exitCode = 1;
}

let webPort;
const driverPort = await freePort();
webPort = await freePort();
const web = await serve(webPort);
const driver = spawn('WebKitWebDriver', [`--port=${driverPort}`], { stdio: 'ignore' });
base = `http://127.0.0.1:${driverPort}`;
try {
  await eventually('WebKitWebDriver', 10000, () => fetch(`${base}/status`).then((r) => r.ok));
  const created = await wd('POST', '/session', {
    capabilities: {
      alwaysMatch: {
        browserName: 'MiniBrowser',
        'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
      },
    },
  });
  session = created.sessionId;
  await wd('POST', s('/window/rect'), { width: 1280, height: 800 }).catch(() => {});

  if (process.env.SMOKE_ONLY !== 'perf') {
  // ---- 1. Offline: capture three tasks -----------------------------------------------------
  await open('n=0&online=0&latency=300');
  check('quick capture is focused on start', await exec('return document.activeElement?.dataset.testid === "capture"'));
  for (const d of ['First offline task', 'Second offline task', 'Third offline task']) {
    await keys(d + ENTER);
  }
  let rows = await eventually('three rows', 5000, async () => ((await rowsInfo()).length === 3 ? rowsInfo() : null));
  check('newest on top', rows[0].text.includes('Third offline task'), rows[0].text);
  check('markers say offline', rows.every((r) => /offline/.test(r.marker ?? '')), rows.map((r) => r.marker).join(' | '));
  check('capture keeps focus after Enter', await exec('return document.activeElement?.dataset.testid === "capture"'));
  results.push(['screenshot offline', await shot('1-offline-provisional')]);

  // ---- 2. Online: keys replace the markers in place ------------------------------------------
  await exec('document.querySelector("[data-testid=capture]").focus()');
  const before = rows;
  await exec('window.__callsignFake.setOnline(true)');
  rows = await eventually('keys', 10000, async () => {
    const r = await rowsInfo();
    return r.every((x) => x.key) ? r : null;
  });
  check('keys SYN-1..3 arrive', JSON.stringify(rows.map((r) => r.key).sort()) === '["SYN-1","SYN-2","SYN-3"]', rows.map((r) => r.key).join(','));
  check('same rows, same order, same positions',
    JSON.stringify(rows.map((r) => [r.uuid, r.top])) === JSON.stringify(before.map((r) => [r.uuid, r.top])));
  check('focus kept while keys arrived', await exec('return document.activeElement?.dataset.testid === "capture"'));
  results.push(['screenshot keys', await shot('2-synced-keys')]);

  // ---- 3. Jump to key --------------------------------------------------------------------------
  await exec('document.activeElement.blur()');
  await chord(CTRL, 'k');
  await eventually('jump input', 3000, () => $('[data-testid=jump-input]'));
  await keys('syn 2' + ENTER);
  const detail = await eventually('detail', 3000, () => exec('return document.querySelector("[data-testid=task-detail]")?.textContent ?? null'));
  check('jump "syn 2" opens SYN-2', /SYN-2/.test(detail) && /Second offline task/.test(detail));
  results.push(['screenshot jump', await shot('3-jump-found')]);
  await keys(ESC);
  await chord(CTRL, 'k');
  await eventually('jump input', 3000, () => $('[data-testid=jump-input]'));
  await keys('syn 99' + ENTER);
  const nf = await eventually('not found', 3000, () => exec('return document.querySelector("[data-testid=jump-not-found]")?.textContent ?? null'));
  check('jump "syn 99" says No task SYN-99', /No task SYN-99/.test(nf), nf);
  results.push(['screenshot not found', await shot('4-jump-not-found')]);
  await keys(ESC);

  // ---- 4. Keyboard: j/k, x, c ---------------------------------------------------------------
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  await keys('gjx');
  await sleep(300);
  const left = await rowsInfo();
  check('x completes the selected task (pending view drops it)', left.length === 2, left.map((r) => r.key).join(','));
  await keys('c');
  const copied = await eventually('copy notice', 3000, () => exec('const t = document.querySelector("[data-testid=notice], [data-testid=error-banner]")?.textContent ?? ""; return /Copied|Copy failed/.test(t) ? t : null'));
  check('c copies the key', /Copied SYN-\d/.test(copied), copied);
  await keys('?');
  check('? opens help', await exec('return !!document.querySelector("[data-testid=help-dialog]")'));
  await keys(ESC);

  // ---- 4b. A row inserted above the view does not move what is in view -----------------------
  await open('n=300&provisional=0&online=1');
  const firstVisible = () => exec(`const v = document.querySelector('[data-testid=task-list]');
    const top = v.getBoundingClientRect().top;
    const r = [...v.querySelectorAll('[data-testid=task-row]')].find((x) => x.getBoundingClientRect().bottom > top + 1);
    return [r.dataset.uuid, Math.round(r.getBoundingClientRect().top - top)];`);
  await exec('document.querySelector("[data-testid=task-list]").scrollTop = 2000');
  await sleep(200);
  const seen = await firstVisible();
  await exec('window.__callsignFake.addExternal("Added elsewhere")');
  await sleep(800);
  const seenAfter = await firstVisible();
  check('a new task on top keeps the scrolled view still', JSON.stringify(seen) === JSON.stringify(seenAfter), `${seen} -> ${seenAfter}`);

  // ---- 4c. Editing is not reset when the key arrives ------------------------------------------
  await open('n=3&provisional=1&online=0&latency=100');
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  await keys('ge');
  await eventually('edit form', 3000, () => exec('return document.activeElement?.id === "detail-description"'));
  await keys(' (edited)');
  await exec('window.__callsignFake.setOnline(true)');
  await eventually('key in the detail', 5000, () => exec('return document.querySelector("[data-testid=task-detail]").dataset.key ?? null'));
  const edit = await exec('return [document.activeElement?.id, document.activeElement?.value]');
  check('edit form keeps focus and text when the key arrives', edit[0] === 'detail-description' && edit[1].endsWith(' (edited)'), JSON.stringify(edit));
  await chord(CTRL, ENTER);
  const saved = await eventually('saved', 3000, () => exec('return document.querySelector("[data-testid=detail-description]")?.textContent ?? null'));
  check('Ctrl+Enter saves the edit', saved.endsWith('(edited)'), saved);

  // ---- 4c2. A refused task says why in plain words; Retry or Fix -------------------------------
  await open('n=3&provisional=2&online=0');
  const victim = await exec('return document.querySelector("[data-testid=task-row]").dataset.uuid');
  await exec(`window.__callsignFake.refuse(arguments[0], { summary: 'The server was busy — send it again', detail: '503 unavailable: try later', code: 'unavailable', fix: 'retry' })`, victim);
  const failedRow = await eventually('failed marker', 3000, () => exec(`const r = document.querySelector("[data-testid=task-row]");
    const m = r.querySelector("[data-testid=provisional-marker]").textContent.trim();
    return m === "failed" ? [m, r.querySelector("[data-testid=row-failure]")?.textContent.trim(), r.querySelector("[data-testid=row-failure]")?.title] : null`));
  check('a refused task: marker "failed", the plain summary beside it (whole text in the title)',
    failedRow[1] === 'The server was busy — send it again' && failedRow[2] === failedRow[1], JSON.stringify(failedRow));
  results.push(['screenshot failed', await shot('4c2-failed-retry')]);
  await exec('document.querySelector("[data-testid=task-row] [data-testid=retry]").click()');
  const retried = await eventually('retried', 3000, () => exec('const m = document.querySelector("[data-testid=task-row] [data-testid=provisional-marker]").textContent.trim(); return m === "failed" ? null : m'));
  check('Retry sends it again (marker back to offline, Retry gone)', retried === 'offline' && await exec('return !document.querySelector("[data-testid=task-row] [data-testid=retry]")'), retried);

  // ---- 4c3. Failed tasks: the header count, the Failed filter, choose a project, discard, undo ----
  await open('n=6&provisional=0&failed=2&online=1');
  const failedCount = await eventually('failed count', 3000, () => exec('return document.querySelector("[data-testid=sync-failed]")?.textContent.trim() ?? null'));
  check('the header counts failed tasks', failedCount === '2 failed', failedCount);
  await exec('document.querySelector("[data-testid=sync-failed]").click()');
  const failedRows = await eventually('failed filter', 3000, async () => {
    const r = await rowsInfo();
    return (await exec('return document.querySelector("[data-testid=status-filter]").value')) === 'failed' && r.length === 2 ? r : null;
  });
  check('clicking it shows the Failed filter', failedRows.every((r) => r.marker === 'failed'), JSON.stringify(failedRows.map((r) => r.marker)));
  await exec('document.querySelector("[data-testid=task-row] [data-testid=row-fix]").click()');
  const fixPanel = await eventually('fix panel', 3000, () => exec(`const d = document.querySelector("[data-testid=task-detail]");
    return d && document.querySelector("[data-testid=detail-project]") ? [d.dataset.uuid, document.activeElement?.dataset.testid,
      document.querySelector("[data-testid=detail-project]").value, document.querySelector("[data-testid=detail-send]").textContent.trim()] : null`));
  check('Fix opens the task with a project choice (focused), "Send to" another project',
    fixPanel[0] === failedRows[0].uuid && fixPanel[1] === 'detail-project' && fixPanel[2] === 'SYN' && fixPanel[3] === 'Send to SYN', JSON.stringify(fixPanel));
  results.push(['screenshot fix panel', await shot('4c3-fix-panel')]);
  await exec('document.querySelector("[data-testid=detail-failure-detail] summary").click()');
  results.push(['screenshot fix panel details', await shot('4c3-fix-panel-details')]);
  await exec('const s = document.querySelector("[data-testid=detail-project]"); s.value = "OPS"; s.dispatchEvent(new Event("change", {bubbles: true}))');
  await exec('document.querySelector("[data-testid=detail-send]").click()');
  const sent = await eventually('sent to OPS', 5000, () => exec(`const n = document.querySelector("[data-testid=notice]")?.textContent ?? "";
    const c = document.querySelector("[data-testid=sync-failed]")?.textContent.trim() ?? "none"; return /to OPS/.test(n) ? [n, c] : null`));
  check('Send to OPS: the notice says so and the failed count drops', /Sending ~\w+ to OPS/.test(sent[0]) && sent[1] === '1 failed', JSON.stringify(sent));
  const keyed = await eventually('OPS key', 5000, () => exec('return window.__callsignFake.handle("resolve_task", {query: arguments[0]}).key', failedRows[0].uuid));
  check('the moved task gets its key in OPS', /^OPS-\d+$/.test(keyed), keyed);
  // the failed view no longer holds it: the other failed task is now current, and the detail shows it
  const follow = await eventually('detail follows', 3000, () => exec(`const d = document.querySelector("[data-testid=task-detail]");
    const sel = document.querySelector("[data-testid=task-row][aria-selected=true]"); return d && sel && d.dataset.uuid === sel.dataset.uuid ? d.dataset.uuid : null`));
  check('the detail follows the row that took the current task\'s place', follow === failedRows[1].uuid, follow);
  await exec('document.querySelector("[data-testid=detail-discard]").click()');
  await eventually('discarded', 3000, () => exec('return document.querySelectorAll("[data-testid=task-row]").length === 0'));
  const afterDiscard = await exec('return [document.querySelector("[data-testid=sync-text]").textContent.trim(), document.querySelector("[data-testid=sync-failed]")?.textContent ?? null]');
  check('Discard removes it; the header is back to all synced', afterDiscard[0] === 'All synced' && afterDiscard[1] === null, JSON.stringify(afterDiscard));
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  await chord(CTRL, 'z');
  const restored = await eventually('restored', 3000, () => exec('const n = document.querySelector("[data-testid=notice]")?.textContent ?? ""; return /Restored/.test(n) ? n : null'));
  check('Ctrl+Z after Discard creates it again', /Restored as a new local task/.test(restored), restored);

  // ---- 4d. Delete and Undo; settings to local-only ---------------------------------------------
  await open('n=5&provisional=2&online=0');
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  const firstUuid = await exec('return document.querySelector("[data-testid=task-row]").dataset.uuid');
  await keys('g\uE017'); // g, Delete
  await eventually('deleted', 3000, () => exec('return document.querySelector("[data-testid=task-row]").dataset.uuid !== arguments[0]', firstUuid));
  await exec('document.querySelector("[data-testid=undo]").click()');
  await eventually('undo', 3000, () => exec('return document.querySelector("[data-testid=task-row]").dataset.uuid === arguments[0]', firstUuid));
  check('Delete removes the task and Undo brings it back in place', true);
  await keys(',');
  await eventually('settings', 3000, () => exec('return document.activeElement?.dataset.testid === "settings-server-url"'));
  const tokenField = await exec('const t = document.querySelector("[data-testid=settings-token]"); return [t.type, t.value, document.querySelector("[data-testid=settings-token-hint]").textContent.trim()]');
  check('token field is a password field, empty, with only the hint shown', tokenField[0] === 'password' && tokenField[1] === '' && /…9f3a/.test(tokenField[2]), JSON.stringify(tokenField));
  await exec('const i = document.querySelector("[data-testid=settings-server-url]"); i.value = "not a url"; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await exec('document.querySelector("[data-testid=settings-save]").click()');
  const bad = await eventually('settings error', 3000, () => exec('return document.querySelector("[data-testid=settings-error]")?.textContent ?? null'));
  check('a bad server URL is refused with the backend message', /not a server URL/.test(bad), bad);
  await exec('const i = document.querySelector("[data-testid=settings-server-url]"); i.value = ""; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await exec('document.querySelector("[data-testid=settings-save]").click()');
  const local = await eventually('local only', 3000, () => exec('const t = document.querySelector("[data-testid=sync-text]").textContent; return /Local only/.test(t) ? t : null'));
  const markers = await exec('return [...document.querySelectorAll("[data-testid=provisional-marker]")].map((m) => m.textContent.trim())');
  check('no server: the indicator and the markers say local only', local === 'Local only · 2 tasks on this device' && markers.length === 2 && markers.every((m) => m === 'local only'), `${local} ${markers}`);
  results.push(['screenshot local only', await shot('4d-local-only')]);

  // ---- 4e. A fresh device with no server: the local inbox ----------------------------------------
  await open('n=0&server=none');
  const picker = await exec(`const p = document.querySelector("[data-testid=project-picker]");
    return [p.value, [...p.options].map((o) => o.textContent.trim())]`);
  check('no "Default" entry: the picker offers the inbox, selected', picker[0] === 'INBOX' && JSON.stringify(picker[1]) === '["Inbox (this device)"]', JSON.stringify(picker));
  await exec('document.querySelector("[data-testid=capture]").focus()');
  await keys('Idea on the train +later' + ENTER);
  const inboxRow = await eventually('inbox row', 3000, async () => ((await rowsInfo())[0]?.marker ? rowsInfo() : null));
  const header = await exec('return document.querySelector("[data-testid=sync-text]").textContent.trim()');
  const err = await exec('return document.querySelector("[data-testid=error-banner]")?.textContent ?? null');
  check('saved with no project and no server: marked "Inbox · this device", no error', inboxRow[0].marker === 'Inbox · this device' && err === null, `${inboxRow[0].marker} / ${err}`);
  check('the header says "Local only · 1 task on this device"', header === 'Local only · 1 task on this device', header);
  results.push(['screenshot local inbox', await shot('4e-local-inbox')]);

  // ---- 4f. Inbox banner once a server is set ------------------------------------------------------
  await open('n=8&provisional=0&local=3&online=1&latency=100');
  const banner = await eventually('banner', 3000, () => exec('return document.querySelector("[data-testid=inbox-banner]")?.textContent.replace(/\\s+/g, " ").trim() ?? null'));
  check('a banner offers to send the inbox', /^3 tasks captured on this device wait for a server project/.test(banner) && /Send to SYN/.test(banner), banner);
  results.push(['screenshot inbox banner', await shot('4f-inbox-banner')]);
  await exec('document.querySelector("[data-testid=inbox-send]").click()');
  const sentInbox = await eventually('inbox sent', 3000, () => exec('return document.querySelector("[data-testid=notice]")?.textContent.trim() ?? null'));
  check('Send to SYN: "Sending 3 tasks to SYN", the banner goes', /Sending 3 tasks to SYN/.test(sentInbox) && await exec('return !document.querySelector("[data-testid=inbox-banner]")'), sentInbox);
  await eventually('keys for the inbox tasks', 5000, async () => ((await rowsInfo()).slice(0, 3).every((r) => r.key?.startsWith('SYN-')) ? true : null));
  const expired = await eventually('the notice expires', 8000, () => exec('return !document.querySelector("[data-testid=notice]")'));
  check('an info notice goes by itself', expired);

  // ---- 4g. Sync problem in plain words; details on demand ------------------------------------
  await open('n=6&provisional=2&online=0');
  const problem = await exec('const p = document.querySelector("[data-testid=sync-problem]"); return p ? [p.textContent.trim(), p.title] : null');
  check('the header gives the problem in plain words', problem && /^Can't reach the server/.test(problem[0]) && problem[0] === problem[1] && !/os error/.test(problem[0]), JSON.stringify(problem));
  await exec('document.querySelector("[data-testid=sync-details]").click()');
  const detailText = await eventually('details', 3000, () => exec('return document.querySelector("[data-testid=sync-detail-text]")?.textContent ?? null'));
  check('Details shows the technical text', /Connection refused \(os error 111\)/.test(detailText), detailText);
  results.push(['screenshot sync problem', await shot('4g-sync-problem')]);
  await exec('document.querySelector("[data-testid=sync-now]").click()');
  await eventually('sync error', 3000, () => exec('return document.querySelector("[data-testid=error-banner]") !== null'));
  await exec('window.__callsignFake.setOnline(true)');
  const cleared = await eventually('error cleared', 3000, () => exec('return !document.querySelector("[data-testid=error-banner]") && !document.querySelector("[data-testid=sync-problem]")'));
  check('a sync error goes when the sync works again', cleared);

  // ---- 4h. One current task; Ctrl+Z; filter syntax; jump by words and numbers; density --------------
  await open('n=40&provisional=0&online=1');
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  await keys('gjj' + ENTER);
  const opened = await eventually('detail', 3000, () => exec('return document.querySelector("[data-testid=task-detail]")?.dataset.key ?? null'));
  await keys('x');
  const same = await eventually('moved on', 3000, () => exec(`const d = document.querySelector("[data-testid=task-detail]"), s = document.querySelector("[data-testid=task-row][aria-selected=true]");
    return d && s && d.dataset.key !== arguments[0] ? [d.dataset.key, s.dataset.key] : null`, opened));
  check('after x the highlight and the detail show the same next task', same[0] === same[1], JSON.stringify([opened, ...same]));
  await chord(CTRL, 'z');
  const undone = await eventually('undo', 3000, () => exec('const n = document.querySelector("[data-testid=notice]")?.textContent ?? ""; return /Reopened/.test(n) ? n : null'));
  check('Ctrl+Z reopens what x completed', undone.includes(`Reopened ${opened}`), undone);
  await keys(ESC);
  await exec('document.querySelector("[data-testid=task-list]").scrollTop = 400');
  await exec('const i = document.querySelector("[data-testid=filter-input]"); i.value = "+ops"; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await sleep(200);
  const tagged = await exec(`const v = document.querySelector("[data-testid=task-list]");
    return [v.scrollTop, [...v.querySelectorAll("[data-testid=task-row]")].map((r) => r.textContent.includes("+ops"))]`);
  check('+ops filters by tag, and the results start at the top', tagged[0] === 0 && tagged[1].length > 0 && tagged[1].every(Boolean), JSON.stringify(tagged));
  await exec('const i = document.querySelector("[data-testid=filter-input]"); i.value = ""; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  await chord(CTRL, 'k');
  await eventually('jump input', 3000, () => $('[data-testid=jump-input]'));
  await keys('backups');
  const found = await eventually('text results', 3000, () => exec('const r = [...document.querySelectorAll("[data-testid=jump-result]")]; return r.length ? r.map((x) => x.textContent.trim()) : null'));
  check('Ctrl+K finds tasks by words', found.length > 0 && found.length <= 8 && found.every((t) => /backups/i.test(t)), JSON.stringify(found));
  results.push(['screenshot jump words', await shot('4h-jump-words')]);
  await exec('const i = document.querySelector("[data-testid=jump-input]"); i.value = ""; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await keys('7');
  const reading = await eventually('number read', 3000, () => exec('return document.querySelector("[data-testid=jump-reading]")?.textContent.trim() ?? null'));
  check('a bare number is read in the current project', /SYN-7$/.test(reading), reading);
  await keys(ENTER);
  const seven = await eventually('SYN-7 open', 3000, () => exec('return document.querySelector("[data-testid=task-detail]")?.dataset.key ?? null'));
  check('Enter opens it', seven === 'SYN-7', seven);
  await keys(ESC);
  await keys('?');
  const help = await exec('return document.querySelector("[data-testid=help-dialog]").textContent');
  check('help examples use the user\'s prefix', /SYN-42/.test(help) && /Ctrl\+Z/.test(help) && !/DEV-42/.test(help));
  results.push(['screenshot help', await shot('4h-help')]);
  await keys(ESC);
  const compact = await exec('return document.querySelector("[data-testid=task-row]").getBoundingClientRect().height');
  await keys(',');
  await eventually('settings', 3000, () => exec('return !!document.querySelector("[data-testid=settings-density]")'));
  results.push(['screenshot settings', await shot('4h-settings')]);
  await exec('const s = document.querySelector("[data-testid=settings-density]"); s.value = "comfortable"; s.dispatchEvent(new Event("change", {bubbles: true}))');
  await exec('document.querySelector("[data-testid=settings-save]").click()');
  await sleep(300);
  const comfy = await exec('return document.querySelector("[data-testid=task-row]").getBoundingClientRect().height');
  check('rows are 32 px, 40 px once Comfortable is chosen', compact === 32 && comfy === 40, `${compact} -> ${comfy}`);
  await exec('localStorage.removeItem("callsign.density")');

  // ---- 4i. The look, light and dark: inbox, failed, provisional, tags ---------------------------
  await open('n=60&provisional=3&local=2&failed=1&online=0');
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  results.push(['screenshot mixed light', await shot('4i-mixed-light')]);
  await keys('t');
  await keys('gjjj' + ENTER);
  results.push(['screenshot mixed dark', await shot('4i-mixed-dark')]);
  await keys('t');

  // ---- 4j. Subtasks: a parent with a nested one; one held by a parent the server refused -----------
  await open('n=12&provisional=0&failed=1&subtasks=2&online=1');
  const openRow = (css) => exec(`const r = [...document.querySelectorAll('[data-testid=task-row]')].find((r) => r.matches(arguments[0]));
    r.click(); r.dispatchEvent(new MouseEvent('dblclick', { bubbles: true })); return r.dataset.uuid`, css);
  const subtaskItems = () => exec(`return [...document.querySelectorAll('[data-testid=subtask]')].map((li) => ({
    status: li.dataset.status, stuck: li.querySelector('[data-testid=subtask-check]').disabled,
    marker: li.querySelector('[data-testid=provisional-marker]')?.textContent.trim() ?? null }))`);
  // The newest parent got the nested subtask (under its second one).
  await openRow(':not([data-key*="."]):has([data-testid=row-blocked])');
  const kids = await eventually('its subtasks', 3000, async () => ((await subtaskItems()).length === 3 ? subtaskItems() : null));
  check('a parent lists its subtasks, oldest first; one with an open subtask of its own cannot be checked',
    kids.map((k) => `${k.status}${k.stuck ? ' stuck' : ''}`).join(',') === 'completed,pending stuck,pending', JSON.stringify(kids));
  check('its progress is done of not deleted', /^1\/3/.test(await exec('return document.querySelector("[data-testid=detail-progress]").textContent.trim()')));
  results.push(['screenshot subtasks', await shot('4j-subtasks')]);
  const refused = await openRow(':has([data-testid=row-fix])');
  await eventually('its Add subtask field', 3000, () => exec('return !!document.querySelector("[data-testid=subtask-input]")'));
  await exec('document.querySelector("[data-testid=subtask-input]").focus()');
  await keys('Q1 milestones' + ENTER);
  await eventually('the subtask in the detail', 3000, async () => (await subtaskItems()).length === 1);
  check('the refused parent is blocked as soon as its subtask shows', await exec(`return document.querySelector('[data-testid=task-row][data-uuid="' + arguments[0] + '"] [data-testid=row-blocked]') !== null`, refused));
  const held = await eventually('the subtask held', 3000, async () => (await subtaskItems())[0]?.marker?.startsWith('waiting for ~') && subtaskItems());
  check('a subtask under a refused parent says whom it waits for', /^waiting for ~[0-9a-f]{8}$/.test(held[0].marker), held[0].marker);
  results.push(['screenshot held subtask', await shot('4j-held-subtask')]);

  // ---- 4k. The projects sidebar: counts, scope, g sequences; New project; Desktop settings ---------
  await open('n=40&provisional=0&local=2&failed=1&online=1');
  const sideEntries = () => exec(`return [...document.querySelectorAll('[data-testid=sidebar] [data-entry]')].map((b) =>
    [b.dataset.testid, b.querySelector('[data-testid=count]')?.textContent.trim() ?? null, b.getAttribute('aria-current')])`);
  const entries0 = await sideEntries();
  check('the sidebar: All, Assigned to me, Standup (no count), the projects, Inbox, Failed, each list with a count; All selected',
    entries0.map((e) => e[0]).join(',') === 'sidebar-all,sidebar-mine,sidebar-standup,sidebar-project-SYN,sidebar-project-OPS,sidebar-inbox,sidebar-failed'
      && entries0.find((e) => e[0] === 'sidebar-standup')[1] === null
      && entries0[0][2] === 'true' && entries0.filter((e) => e[2] === 'true').length === 1 && entries0.find((e) => e[0] === 'sidebar-failed')[1] === '1',
    JSON.stringify(entries0));
  results.push(['screenshot sidebar', await shot('4k-sidebar')]);
  await exec('document.querySelector("[data-testid=sidebar-project-OPS]").click()');
  const opsView = await eventually('OPS scope', 3000, async () => {
    const c = await exec('return document.querySelector("[data-testid=list-count]").textContent.trim()');
    return c.startsWith('OPS') ? [c, await rowsInfo(), await exec('return [document.querySelector("[data-testid=task-list]").dataset.count, document.activeElement?.dataset.testid]')] : null;
  });
  const opsCount = entries0.find((e) => e[0] === 'sidebar-project-OPS')[1];
  check('a project scopes the list: its rows only, its count, the header names it, focus on the list',
    opsView[1].every((r) => r.key?.startsWith('OPS-')) && opsView[2][0] === opsCount && opsView[0].startsWith(`OPS · ${opsCount} of `) && opsView[2][1] === 'task-list'
      && await exec('return document.querySelector("[data-testid=sidebar-project-OPS]").getAttribute("aria-current") === "true"'),
    JSON.stringify([opsView[0], opsView[2], opsCount]));
  await keys('gf');
  const gf = await eventually('g f', 3000, () => exec(`const s = document.querySelector("[data-testid=status-filter]").value;
    return s === 'failed' ? [s, document.querySelector("[data-testid=sidebar-failed]").getAttribute("aria-current"), document.querySelectorAll("[data-testid=task-row]").length] : null`));
  check('g f: the Failed view, Failed selected', gf[1] === 'true' && gf[2] === 1, JSON.stringify(gf));
  await keys('ga');
  const ga = await eventually('g a', 3000, () => exec(`const s = document.querySelector("[data-testid=status-filter]").value;
    return s === 'pending' ? document.querySelector("[data-testid=sidebar-all]").getAttribute("aria-current") : null`));
  check('g a: All, back to Pending', ga === 'true', String(ga));
  await keys('gs');
  const gs = await eventually('g s', 3000, () => exec(`return document.querySelector("[data-testid=standup]") && !document.querySelector("[data-testid=task-list]")
    && document.querySelector("[data-testid=sidebar-standup]").getAttribute("aria-current") === "true"
    ? document.querySelector("[data-testid=standup-heading]").textContent.trim() : null`));
  check('g s: the Standup in the list\'s place, Standup selected', /^Standup/.test(gs), String(gs));
  results.push(['screenshot standup', await shot('4k-standup')]);
  await keys('ga');
  await eventually('g a from the standup', 3000, () => exec('return document.querySelector("[data-testid=task-list]") !== null'));
  await keys('gp');
  const gp = await eventually('g p', 3000, () => exec('return document.activeElement?.dataset.entry ?? null'));
  await keys('jjjj');
  const moved = await exec('return document.activeElement?.dataset.entry ?? null');
  await keys(ENTER);
  const chosen = await eventually('chosen', 3000, () => exec(`const b = document.querySelector("[data-testid=sidebar-project-OPS]");
    return b.getAttribute("aria-current") === "true" ? document.activeElement?.dataset.testid : null`));
  check('g p focuses the sidebar on the selected entry; j moves; Enter selects and returns to the list',
    gp === 'all' && moved === 'project:OPS' && chosen === 'task-list', JSON.stringify([gp, moved, chosen]));
  await keys('gi');
  const gi = await eventually('g i', 3000, () => exec(`return document.querySelector("[data-testid=sidebar-inbox]").getAttribute("aria-current") === "true"
    ? [...document.querySelectorAll("[data-testid=task-row]")].map((r) => r.dataset.syncState + ":" + r.querySelector("[data-testid=provisional-marker]")?.textContent.trim()) : null`));
  check('g i: the inbox, its local tasks only', gi.length === 2 && gi.every((m) => /Inbox · this device/.test(m)), JSON.stringify(gi));
  await keys('gp' + ESC);
  check('Esc in the sidebar goes back to the list', await exec('return document.activeElement?.dataset.testid === "task-list"'));

  // New project: the prefix checked as typed, a taken one refused by the backend, then created.
  await exec('document.querySelector("[data-testid=sidebar-new-project]").click()');
  await eventually('new project dialog', 3000, () => $('[data-testid=new-project-name]'));
  await keys('Website');
  await exec('document.querySelector("[data-testid=new-project-prefix]").focus()');
  await keys('w-b');
  const hint = await exec('return [document.querySelector("[data-testid=new-project-prefix-hint]").textContent.trim(), document.querySelector("[data-testid=new-project-submit]").disabled]');
  check('an invalid prefix: the server\'s words as typed, Create disabled',
    hint[0] === 'invalid prefix "w-b": a prefix is 2-10 characters, a letter first, then letters or digits (e.g. SYN)' && hint[1] === true, JSON.stringify(hint));
  results.push(['screenshot new project, invalid prefix', await shot('4k-new-project-invalid')]);
  await exec('const i = document.querySelector("[data-testid=new-project-prefix]"); i.value = ""; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await keys('syn' + ENTER);
  const taken = await eventually('taken', 3000, () => exec('return document.querySelector("[data-testid=new-project-error]")?.textContent.trim() ?? null'));
  check('a taken prefix: the backend\'s message, the dialog stays', taken === 'prefix SYN is taken by another project' && await exec('return !!document.querySelector("[data-testid=new-project-dialog]")'), taken);
  await exec('const i = document.querySelector("[data-testid=new-project-prefix]"); i.value = ""; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await keys('web');
  results.push(['screenshot new project', await shot('4k-new-project')]);
  await keys(ENTER);
  const createdNotice = await eventually('created', 3000, () => exec(`return !document.querySelector("[data-testid=new-project-dialog]")
    && document.querySelector("[data-testid=sidebar-project-WEB]")?.getAttribute("aria-current") === "true"
    ? document.querySelector("[data-testid=notice]")?.textContent.trim() ?? "" : null`));
  check('created: the dialog closes, the project is listed and selected, the notice says so', /Created WEB — Website/.test(createdNotice), createdNotice);
  await keys('t');
  results.push(['screenshot sidebar dark', await shot('4k-sidebar-dark')]);
  await exec('document.querySelector("[data-testid=sidebar-new-project]").click()');
  await eventually('new project dialog', 3000, () => $('[data-testid=new-project-name]'));
  await exec('document.querySelector("[data-testid=new-project-prefix]").focus()');
  await keys('inbox');
  results.push(['screenshot new project dark', await shot('4k-new-project-dark')]);
  await keys(ESC);
  await keys('t');

  // Desktop settings: a shortcut the backend refuses stays at its field; a good one is saved.
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  await keys(',');
  await eventually('desktop settings', 3000, () => exec('return !!document.querySelector("[data-testid=settings-shortcut]")'));
  const prefs0 = await exec(`return ['settings-close-to-tray', 'settings-notify-failures', 'settings-notify-keyed'].map((id) => document.querySelector('[data-testid=' + id + ']').checked)
    .concat(document.querySelector('[data-testid=settings-shortcut]').value)`);
  check('Settings shows the desktop preferences as saved', JSON.stringify(prefs0) === '[false,true,true,"Ctrl+Alt+Space"]', JSON.stringify(prefs0));
  await exec('const i = document.querySelector("[data-testid=settings-shortcut]"); i.value = "Ctrl+Alt"; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await exec('document.querySelector("[data-testid=settings-notify-keyed]").click()');
  await exec('document.querySelector("[data-testid=settings-save]").click()');
  const scErr = await eventually('shortcut refused', 3000, () => exec('return document.querySelector("[data-testid=settings-shortcut-error]")?.textContent.trim() ?? null'));
  check('a shortcut that cannot be registered: its message at the field, the dialog open', /"Ctrl\+Alt" is not a shortcut/.test(scErr) && await exec('return !!document.querySelector("[data-testid=settings-dialog]")'), scErr);
  results.push(['screenshot settings, desktop', await shot('4k-settings-desktop')]);
  await exec('const i = document.querySelector("[data-testid=settings-shortcut]"); i.value = "Ctrl+Alt+N"; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await exec('document.querySelector("[data-testid=settings-save]").click()');
  await eventually('settings closed', 3000, () => exec('return !document.querySelector("[data-testid=settings-dialog]")'));
  const prefs1 = await exec('return window.__callsignFake.desktop');
  check('saved with the settings', prefs1.capture_shortcut === 'Ctrl+Alt+N' && prefs1.notify_keyed === false, JSON.stringify(prefs1));

  // A "failed to sync" notification clicked (open-task): the task opens, whatever hid it goes.
  await exec('document.querySelector("[data-testid=sidebar-project-OPS]").click()');
  await exec('const i = document.querySelector("[data-testid=filter-input]"); i.value = "nothing like it"; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await sleep(200);
  const failedUuid = await exec('return window.__callsignFake.handle("list_tasks", {filter: {status: "all"}}).find((t) => t.failure).uuid');
  await exec('window.__callsignFake.openTask(arguments[0])', failedUuid);
  const opened2 = await eventually('open-task', 3000, () => exec(`const d = document.querySelector("[data-testid=task-detail]"), s = document.querySelector("[data-testid=task-row][aria-selected=true]");
    return d && s ? [d.dataset.uuid, s.dataset.uuid, document.querySelector("[data-testid=filter-input]").value, document.querySelector("[data-testid=sidebar-all]").getAttribute("aria-current")] : null`));
  check('open-task opens the task in the detail, its row selected, the scope and the filter cleared',
    opened2[0] === failedUuid && opened2[1] === failedUuid && opened2[2] === '' && opened2[3] === 'true', JSON.stringify(opened2));

  // ---- 4l. The quick-capture window (index.html?window=capture) ------------------------------------
  const openCapture = async (query, where = /SYN/) => {
    await wd('POST', s('/url'), { url: `${base.replace(/:\d+$/, `:${webPort}`)}/?window=capture&${query}` });
    await eventually('the capture window', 15000, () => exec('return document.activeElement?.dataset.testid === "quick-capture-input"'));
    await eventually('its projects', 3000, async () => where.test(await exec('return document.querySelector("[data-testid=quick-capture-target]")?.textContent ?? ""')));
  };
  await wd('POST', s('/window/rect'), { width: 560, height: 140 }).catch(() => {});
  await openCapture('n=5&online=1&latency=50');
  check('the capture window: the field focused, no list', !(await exec('return !!document.querySelector("[data-testid=task-list]")')));
  await keys('Call the bank #OPS +phone');
  const target = await exec('return document.querySelector("[data-testid=quick-capture-target]").textContent.replace(/\\s+/g, " ").trim()');
  check('it says where the task goes', target === '→ OPS — Operations · +phone', target);
  results.push(['screenshot quick capture', await shot('4l-quick-capture')]);
  await keys(ENTER);
  await eventually('closed', 3000, () => exec('return window.__callsignFake.captureClosed === 1'));
  const made = await exec('return window.__callsignFake.handle("list_tasks", {filter: {status: "all"}})[0]');
  check('Enter saves it (create_task) and closes the window (close_capture)', made.description === 'Call the bank' && made.project === 'OPS' && made.tags[0] === 'phone', JSON.stringify([made.description, made.project, made.tags]));
  await keys('+only');
  await keys(ENTER);
  const empty = await eventually('empty refused', 3000, () => exec('return document.querySelector("[data-testid=quick-capture-error]")?.textContent.trim() ?? null'));
  check('no description: the capture bar\'s message', empty === 'A task needs a description (#project, +tags, @member, due: and pri: alone are not one).', empty);
  await exec('const i = document.querySelector("[data-testid=quick-capture-input]"); i.value = ""; i.dispatchEvent(new Event("input", {bubbles: true}))');
  await keys('Pay rent due:someday' + ENTER);
  const refusedDue = await eventually('refused', 3000, () => exec('return document.querySelector("[data-testid=quick-capture-error]")?.textContent.trim() ?? null'));
  const kept = await exec('return [document.querySelector("[data-testid=quick-capture-input]").value, window.__callsignFake.captureClosed]');
  check('a refusal: its message, the text kept, the window open', /someday/.test(refusedDue) && kept[0] === 'Pay rent due:someday' && kept[1] === 1, JSON.stringify([refusedDue, kept]));
  results.push(['screenshot quick capture error', await shot('4l-quick-capture-error')]);
  await keys(ESC);
  await eventually('closed by Esc', 3000, () => exec('return window.__callsignFake.captureClosed === 2'));
  check('Esc closes it without saving', (await exec('return window.__callsignFake.handle("list_tasks", {filter: {status: "all"}}).length')) === 6);
  await exec('localStorage.setItem("callsign.theme", "dark")');
  await openCapture('n=5&online=1&server=none', /Inbox/);
  results.push(['screenshot quick capture dark, no server', await shot('4l-quick-capture-dark')]);
  await exec('localStorage.removeItem("callsign.theme")');
  await wd('POST', s('/window/rect'), { width: 1280, height: 800 }).catch(() => {});

  // ---- 5. Narrow window and dark theme ----------------------------------------------------------
  await open('n=200&provisional=4&online=0');
  await wd('POST', s('/window/rect'), { width: 400, height: 800 }).catch(() => {});
  await sleep(400);
  const overflow = await exec('return document.documentElement.scrollWidth - document.documentElement.clientWidth');
  check('no horizontal overflow at 400 px', overflow <= 0, `overflow ${overflow}px`);
  results.push(['screenshot narrow', await shot('5-narrow-400')]);
  await exec('document.querySelector("[data-testid=sidebar-toggle]").click()');
  const drawer = await eventually('the drawer', 3000, () => exec('const r = document.querySelector("[data-testid=sidebar]").getBoundingClientRect(); return r.width > 0 ? [r.width, document.activeElement?.dataset.entry] : null'));
  check('narrow: the sidebar opens as a drawer from the toggle, focus on its entry', drawer[1] === 'all', JSON.stringify(drawer));
  results.push(['screenshot narrow sidebar', await shot('5-narrow-sidebar')]);
  await keys(ESC);
  check('narrow: Esc closes the drawer', await exec('return document.querySelector("[data-testid=sidebar]").getBoundingClientRect().width === 0'));
  await exec('document.querySelector("[data-testid=task-list]").focus()');
  await keys('t');
  await sleep(200);
  results.push(['screenshot narrow dark', await shot('6-narrow-dark')]);
  await wd('POST', s('/window/rect'), { width: 1280, height: 800 }).catch(() => {});
  await sleep(300);
  results.push(['screenshot wide dark', await shot('7-wide-dark')]);
  await keys('t');
  }

  // ---- 6. 50,000 tasks: first paint, filter per keystroke, scrolling ---------------------------
  await open('n=50000&provisional=5&online=1');
  const p = await eventually('first list paint', 30000, () =>
    exec('const p = window.__callsignPerf; return p && p.firstListPaintMs !== null ? p : null'));
  results.push(['50k: first list paint (ms since navigation)', p.firstListPaintMs.toFixed(1)]);
  const appStart = await exec('return performance.getEntriesByName("callsign-app-start")[0]?.startTime ?? null');
  if (appStart !== null) {
    results.push(['50k: of which the preview seeding its fake tasks (ms)', appStart.toFixed(1)]);
    results.push(['50k: first list paint after the app started (ms)', (p.firstListPaintMs - appStart).toFixed(1)]);
  }
  results.push(['50k: first list_tasks_page, 200 tasks (fake) (ms)', p.pageMs.toFixed(1)]);
  const all = await eventually('every page', 30000, () => exec('const p = window.__callsignPerf; return p.initialCount !== null ? p : null'));
  results.push(['50k: every page in (fake), ms from the first call', all.listTasksMs.toFixed(1)]);
  check('50k: every task loaded', all.initialCount === 50000, String(all.initialCount));
  const dom = await exec('return document.querySelectorAll("[data-testid=task-row]").length');
  results.push(['50k: rows in the DOM', dom]);
  check('virtualized: fewer than 100 rows in the DOM', dom < 100, String(dom));

  const typed = await execAsync(`
    const done = arguments[arguments.length - 1];
    const input = document.querySelector('[data-testid=filter-input]');
    input.focus();
    const text = 'review docs 12';
    const out = [];
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    (async () => {
      for (let i = 1; i <= text.length; i++) {
        const t0 = performance.now();
        input.value = text.slice(0, i);
        input.dispatchEvent(new Event('input', { bubbles: true }));
        await new Promise((r) => setTimeout(r, 0));
        const script = performance.now() - t0;
        await frame();
        out.push({ text: text.slice(0, i), script, total: performance.now() - t0, filter: window.__callsignPerf.lastFilterMs,
          shown: document.querySelector('[data-testid=list-count]').textContent.trim() });
      }
      input.value = '';
      input.dispatchEvent(new Event('input', { bubbles: true }));
      await frame();
      done(out);
    })();`);
  for (const k of typed) results.push([`50k: keystroke "${k.text}" → ${k.shown}`, `filter ${k.filter.toFixed(1)} ms, script ${k.script.toFixed(1)} ms, to next paint ${k.total.toFixed(1)} ms`]);
  const filterMs = typed.map((k) => k.filter);
  const paintMs = typed.map((k) => k.total);
  const scriptMs = typed.map((k) => k.script);
  results.push(['50k: keystroke script (filter + DOM update), median / max (ms)', `${med(scriptMs).toFixed(1)} / ${Math.max(...scriptMs).toFixed(1)}`]);
  results.push(['50k: filter per keystroke, median / max (ms)', `${med(filterMs).toFixed(2)} / ${Math.max(...filterMs).toFixed(2)}`]);
  results.push(['50k: keystroke to painted frame, median / max (ms)', `${med(paintMs).toFixed(1)} / ${Math.max(...paintMs).toFixed(1)}`]);

  const idle = await execAsync(`
    const done = arguments[arguments.length - 1];
    const f = []; let last = performance.now(); let i = 0;
    const step = () => { const n = performance.now(); f.push(n - last); last = n; if (++i < 60) requestAnimationFrame(step); else done(f); };
    requestAnimationFrame(step);`);
  results.push(['idle frame interval in this window, median (ms)', med(idle.slice(1)).toFixed(1)]);
  for (const px of [40, 1200]) await measureScroll(`50k: scroll 240 frames x ${px} px`, px);
  results.push(['50k: screenshot', await shot('8-50k-scrolled')]);
  await wd('POST', s('/url'), { url: `http://127.0.0.1:${webPort}/baseline` });
  for (const px of [40, 1200]) await measureScroll(`baseline, static page without script: ${px} px`, px);
} catch (e) {
  check('smoke run', false, String(e?.stack ?? e));
} finally {
  if (session) await wd('DELETE', `/session/${session}`).catch(() => {});
  driver.kill();
  web.close();
}

console.log('\nChecks');
for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail && !c.ok ? ` — ${c.detail}` : ''}`);
console.log('\nFigures (real WebKitGTK, MiniBrowser, fake backend)');
const w = Math.max(...results.map((r) => r[0].length));
for (const [k, v] of results) console.log(`  ${k.padEnd(w)}  ${v}`);
