// A benchmark, not a test: the real desktop app over real Tauri IPC with a big local store.
// For each of RUNS launches of the app (a fresh copy of the seeded data dir each time, no server
// configured, so local-only): time to the first painted list (window.__callsignPerf), the
// list_tasks IPC call, time per filter keystroke, and idle memory (VmRSS and PSS of the app and
// its WebKit child processes, read from /proc). Prints a table; exits by itself.
//
// Run by scripts/bench-desktop.sh, which builds, seeds and starts Xvfb. Environment:
//   BENCH_APP       the app binary (default target/debug/callsign-desktop)
//   BENCH_DATA      the seeded data dir (copied per launch; required)
//   BENCH_RUNS      launches (default 3)
//   BENCH_TEXT      what is typed into the filter, one key at a time (default "deploy docs 12":
//                   the length and shape of webkit-smoke.mjs's "review docs 12", but with matches
//                   after every keystroke in this data; "review d" already matches nothing)
//   BENCH_IDLE_MS   idle time after the first paint before memory is read (default 5000)
//   BENCH_BASELINE  optional: a file holding the output of the fake-backend WebKit smoke run
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { remote } from 'webdriverio';

const ROOT = path.resolve(import.meta.dirname, '../..');
const APP = path.resolve(process.env.BENCH_APP ?? path.join(ROOT, 'target', 'debug', 'callsign-desktop'));
const DATA = process.env.BENCH_DATA;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const TEXT = process.env.BENCH_TEXT ?? 'deploy docs 12';
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 5000);
const BASELINE = process.env.BENCH_BASELINE;
const DEADLINE_MS = 120_000 * RUNS + 60_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x, d = 1) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));
/** "median (min-max)" over launches. */
const spread = (xs, d = 1) => (xs.length === 1 ? fmt(xs[0], d)
  : `${fmt(median(xs), d)} (${fmt(Math.min(...xs), d)}-${fmt(Math.max(...xs), d)})`);

if (!DATA || !fs.existsSync(DATA)) {
  console.error('bench: set BENCH_DATA to a seeded data dir (scripts/bench-desktop.sh does it)');
  process.exit(2);
}
if (!fs.existsSync(APP)) {
  console.error(`bench: no app binary at ${APP}`);
  process.exit(2);
}

let driver = null;
let browser = null;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'callsign-desktop-bench-'));

function cleanup() {
  try { driver?.kill(); } catch { /* already gone */ }
  fs.rmSync(tmp, { recursive: true, force: true });
}
// Bounded in time whatever happens: a stuck driver or window ends the run.
const watchdog = setTimeout(() => {
  console.error(`bench: gave up after ${DEADLINE_MS / 1000} s`);
  cleanup();
  process.exit(3);
}, DEADLINE_MS);
watchdog.unref();

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
    await sleep(50);
  }
  throw new Error(`nothing listening on 127.0.0.1:${port} after ${ms} ms`);
}

async function eventually(what, ms, f, every = 25) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await f();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(every);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${last})`);
}

// ---- /proc: the app and its WebKit processes ----------------------------------------------

function procTable() {
  const rows = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const argv0 = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')[0];
      rows.push({ pid: Number(d), ppid, name: path.basename(argv0) });
    } catch {
      // exited meanwhile
    }
  }
  return rows;
}

function descendants(root, table) {
  const out = [];
  const queue = [root];
  while (queue.length) {
    const p = queue.shift();
    for (const r of table) if (r.ppid === p) { out.push(r); queue.push(r.pid); }
  }
  return out;
}

/** kB from a "Key:   123 kB" line of a /proc file, or null. */
function kb(file, key) {
  try {
    const m = fs.readFileSync(file, 'utf8').match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** The app process (a descendant of tauri-driver) and everything it started. */
function memory(driverPid) {
  const table = procTable();
  const app = descendants(driverPid, table).find((r) => r.name === path.basename(APP));
  if (!app) throw new Error('the app process is not among tauri-driver\'s descendants');
  return [app, ...descendants(app.pid, table)].map((r) => ({
    ...r,
    rssKb: kb(`/proc/${r.pid}/status`, 'VmRSS'),
    pssKb: kb(`/proc/${r.pid}/smaps_rollup`, 'Pss'),
  })).filter((r) => r.rssKb !== null);
}

// ---- one launch ---------------------------------------------------------------------------

async function launch(run) {
  const dataDir = path.join(tmp, `run-${run}`);
  fs.cpSync(DATA, dataDir, { recursive: true });
  const port = await freePort();
  const nativePort = await freePort();
  driver = spawn('tauri-driver', ['--port', String(port), '--native-port', String(nativePort)],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, CALLSIGN_DATA_DIR: dataDir, RUST_LOG: 'warn' } });
  try {
    await waitForPort(port, 15000);
    const t0 = Date.now();
    browser = await remote({
      hostname: '127.0.0.1',
      port,
      logLevel: 'error',
      connectionRetryTimeout: 60000,
      capabilities: {
        browserName: 'wry',
        'wdio:enforceWebDriverClassic': true,
        'tauri:options': { application: APP },
      },
    });
    // The first screenful is painted from a first page; the rest loads in pages after it.
    // Wait for both: the first paint, then every page in (initialCount is set then).
    const p = await eventually('the first painted list, then every page', 60000, () => browser.execute(() => {
      const q = window.__callsignPerf;
      return q && q.firstListPaintMs !== null && q.initialCount !== null
        ? { ...q, origin: performance.timeOrigin, now: performance.now() } : null;
    }));
    const r = {
      firstPaintMs: p.firstListPaintMs,
      pageMs: p.pageMs,
      listTasksMs: p.listTasksMs,
      launchToPaintMs: p.origin + p.firstListPaintMs - t0,
      count: p.initialCount,
    };
    r.domRows = await browser.execute(() => document.querySelectorAll('[data-testid="task-row"]').length);
    r.shown = await browser.execute(() => document.querySelector('[data-testid="list-count"]')?.textContent.trim());

    // Idle: nothing typed, nothing scrolled; the text cache is warmed in the meantime.
    await sleep(IDLE_MS);
    r.memory = memory(driver.pid);

    // Per keystroke, timed inside the page: set the value, let Svelte update the DOM (script),
    // then wait two animation frames (the next painted frame).
    r.keys = await browser.executeAsync((text, done) => {
      const input = document.querySelector('[data-testid="filter-input"]');
      input.focus();
      const out = [];
      const frame = () => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
      (async () => {
        for (let i = 1; i <= text.length; i++) {
          const t0 = performance.now();
          input.value = text.slice(0, i);
          input.dispatchEvent(new Event('input', { bubbles: true }));
          await new Promise((res) => setTimeout(res, 0));
          const script = performance.now() - t0;
          await frame();
          out.push({
            text: text.slice(0, i),
            script,
            paint: performance.now() - t0,
            filter: window.__callsignPerf.lastFilterMs,
            shown: document.querySelector('[data-testid="list-count"]')?.textContent.trim(),
          });
        }
        input.value = '';
        input.dispatchEvent(new Event('input', { bubbles: true }));
        await frame();
        done(out);
      })();
    }, TEXT);

    // The same text as real key events from the driver: wall time of each WebDriver keys call
    // (it returns once the key events were dispatched), and the filter pass each one caused.
    await browser.execute(() => document.querySelector('[data-testid="filter-input"]').focus());
    r.driverKeys = [];
    for (const ch of TEXT) {
      const k0 = Date.now();
      await browser.keys(ch);
      const wall = Date.now() - k0;
      const filter = await browser.execute(() => window.__callsignPerf.lastFilterMs);
      r.driverKeys.push({ wall, filter });
    }
    r.driverShown = await browser.execute(() => document.querySelector('[data-testid="list-count"]')?.textContent.trim());
    return r;
  } finally {
    await browser?.deleteSession().catch(() => {});
    browser = null;
    const exited = new Promise((res) => driver.once('exit', res));
    driver.kill();
    await Promise.race([exited, sleep(5000)]);
    driver = null;
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---- the fake-backend baseline (ui/scripts/webkit-smoke.mjs output), if given -------------

function baseline() {
  if (!BASELINE || !fs.existsSync(BASELINE)) return null;
  const text = fs.readFileSync(BASELINE, 'utf8');
  const pick = (label) => {
    const line = text.split('\n').find((l) => l.includes(label));
    return line ? line.slice(line.indexOf(label) + label.length).trim() : null;
  };
  return {
    firstPaint: pick('50k: first list paint (ms since navigation)'),
    listTasks: pick('50k: list_tasks (fake) (ms)'),
    filter: pick('50k: filter per keystroke, median / max (ms)'),
    script: pick('50k: keystroke script (filter + DOM update), median / max (ms)'),
    paint: pick('50k: keystroke to painted frame, median / max (ms)'),
  };
}

// ---- main ---------------------------------------------------------------------------------

const results = [];
const loadAtStart = os.loadavg();
try {
  for (let run = 1; run <= RUNS; run++) {
    const r = await launch(run);
    results.push(r);
    const mem = r.memory.reduce((a, m) => a + m.rssKb, 0);
    console.error(`run ${run}: ${r.count} tasks, first paint ${fmt(r.firstPaintMs)} ms, first page ${fmt(r.pageMs)} ms, all pages ${fmt(r.listTasksMs)} ms, `
      + `filter median ${fmt(median(r.keys.map((k) => k.filter)), 2)} ms, RSS ${(mem / 1024).toFixed(0)} MiB`);
  }
} catch (e) {
  console.error(`bench: ${e?.stack ?? e}`);
  cleanup();
  process.exit(1);
}
cleanup();

const perRun = (f) => results.map(f);
const keyStat = (pick, agg) => perRun((r) => agg(r.keys.map(pick)));
const base = baseline();
const rows = [
  ['tasks in the store / loaded by the UI', `${results[0].count.toLocaleString('en')}`, '50,000'],
  ['rows in the DOM (virtualized)', `${results[0].domRows}`, ''],
  ['first list paint, ms since navigation', spread(perRun((r) => r.firstPaintMs)), base?.firstPaint ?? '370-520 (earlier runs)'],
  ['  of which the first page (200 tasks, IPC), ms', spread(perRun((r) => r.pageMs ?? NaN)), ''],
  ['every page in (the whole list, IPC), ms', spread(perRun((r) => r.listTasksMs)), base?.listTasks ? `${base.listTasks} (one call)` : ''],
  ['launch to first list paint (driver clock), ms', spread(perRun((r) => r.launchToPaintMs), 0), ''],
  [`filter per keystroke (${TEXT.length} keys), median ms`, spread(keyStat((k) => k.filter, median), 2), base?.filter ? `${base.filter} (median / max)` : '4 (earlier runs)'],
  ['filter per keystroke, max ms', spread(keyStat((k) => k.filter, (xs) => Math.max(...xs)), 2), ''],
  ['keystroke script (filter + DOM update), median ms', spread(keyStat((k) => k.script, median)), base?.script ? `${base.script} (median / max)` : ''],
  ['keystroke to painted frame, median ms', spread(keyStat((k) => k.paint, median)), base?.paint ? `${base.paint} (median / max)` : '50-85 (earlier runs)'],
  ['keystroke to painted frame, max ms', spread(keyStat((k) => k.paint, (xs) => Math.max(...xs))), ''],
  ['driver keys() wall per keystroke, median ms', spread(perRun((r) => median(r.driverKeys.map((k) => k.wall))), 0), ''],
  ['  filter pass per driver keystroke, median ms', spread(perRun((r) => median(r.driverKeys.map((k) => k.filter))), 2), ''],
];
// Memory: per process name (summed if a name occurs twice), then the total.
const names = [...new Set(results.flatMap((r) => r.memory.map((m) => m.name)))];
for (const n of names) {
  const rss = perRun((r) => r.memory.filter((m) => m.name === n).reduce((a, m) => a + m.rssKb, 0) / 1024);
  const pss = perRun((r) => r.memory.filter((m) => m.name === n).reduce((a, m) => a + (m.pssKb ?? 0), 0) / 1024);
  rows.push([`idle RSS / PSS, ${n}, MiB`, `${spread(rss, 0)} / ${spread(pss, 0)}`, '']);
}
rows.push(['idle RSS / PSS, total, MiB',
  `${spread(perRun((r) => r.memory.reduce((a, m) => a + m.rssKb, 0) / 1024), 0)} / `
  + `${spread(perRun((r) => r.memory.reduce((a, m) => a + (m.pssKb ?? 0), 0) / 1024), 0)}`, '']);

const w0 = Math.max(...rows.map((r) => r[0].length));
const w1 = Math.max(...rows.map((r) => r[1].length), 'real app (IPC)'.length);
console.log(`\nCallsign desktop, ${path.relative(ROOT, APP) || APP}, ${RUNS} launch(es); median (min-max) over launches`);
console.log(`(${os.cpus().length} CPUs; load average at start ${loadAtStart.map((l) => l.toFixed(1)).join(' ')}, at end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
console.log(`${''.padEnd(w0)}  ${'real app (IPC)'.padEnd(w1)}  fake backend (MiniBrowser)`);
for (const [k, v, b] of rows) console.log(`${k.padEnd(w0)}  ${v.padEnd(w1)}  ${b}`);
console.log(`\nFilter typed: "${TEXT}", one key at a time; tasks shown after each key (first launch): `
  + results[0].keys.map((k) => k.shown.split(' ')[0]).join(', '));
console.log('Processes (last launch): ' + results.at(-1).memory
  .map((m) => `${m.name} ${m.pid} ${(m.rssKb / 1024).toFixed(0)} MiB`).join(', '));
process.exit(0);
