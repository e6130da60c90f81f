// The list's hot paths over 50,000 tasks: `npm run bench` (vitest bench; prints a table).
// Per-keystroke filtering is measured both cold (full scan per keystroke) and as the app does it
// (createFilter: narrows the previous answer while the text grows), with the text cache warm.
import { bench, describe } from 'vitest';
import { vf } from '../src/dev/fake-filter';
import type { LocalTask } from '../src/lib/types';
import {
  applyTaskEvent,
  computeWindow,
  createFilter,
  filterTasks,
  haystack,
  orderTasks,
} from '../src/lib/view';
import { markerFor } from '../src/lib/status';
import { planJump } from '../src/lib/jump';
import { scopeTasks, sidebarCounts } from '../src/lib/sidebar';
import { many, NOW, status, task } from '../tests/fixtures';

const N = 50_000;
const tasks: LocalTask[] = many(N);
for (const t of tasks) haystack(t); // warm, as the app does after the first paint
const TEXT = 'task number 4 deploy';

/** A plain table first: per keystroke, median of 15 runs, the app's path vs a full scan. */
function printKeystrokeTable(): void {
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const rows: string[] = [];
  const runs = 15;
  const app: number[][] = Array.from({ length: TEXT.length }, () => []);
  const full: number[][] = Array.from({ length: TEXT.length }, () => []);
  const shown: number[] = [];
  for (let r = 0; r < runs; r++) {
    const f = createFilter();
    for (let i = 1; i <= TEXT.length; i++) {
      const text = TEXT.slice(0, i);
      let t0 = performance.now();
      const out = f(tasks, vf({ text, status: 'pending' }));
      app[i - 1]?.push(performance.now() - t0);
      t0 = performance.now();
      filterTasks(tasks, vf({ text, status: 'pending' }));
      full[i - 1]?.push(performance.now() - t0);
      shown[i - 1] = out.length;
    }
  }
  rows.push(`Filter per keystroke over ${N.toLocaleString()} tasks (median of ${runs} runs, ms)`);
  rows.push(`${'typed'.padEnd(24)} ${'shown'.padStart(7)} ${'app path'.padStart(9)} ${'full scan'.padStart(10)}`);
  for (let i = 0; i < TEXT.length; i++) {
    rows.push(
      `${JSON.stringify(TEXT.slice(0, i + 1)).padEnd(24)} ${String(shown[i]).padStart(7)} ${median(app[i] ?? []).toFixed(2).padStart(9)} ${median(full[i] ?? []).toFixed(2).padStart(10)}`,
    );
  }
  const win: number[] = [];
  for (let r = 0; r < 1000; r++) {
    const t0 = performance.now();
    for (let k = 0; k < 100; k++) computeWindow((r * 100 + k) * 977 % (N * 40), 800, 40, N);
    win.push((performance.now() - t0) / 100);
  }
  rows.push(`computeWindow (one scroll event): median ${(median(win) * 1000).toFixed(2)} µs`);
  console.log('\n' + rows.join('\n') + '\n');
}
printKeystrokeTable();

describe(`filter, ${N.toLocaleString()} tasks, per keystroke`, () => {
  for (const n of [1, 4, 6, 11]) {
    const text = TEXT.slice(0, n);
    bench(`full scan "${text}"`, () => {
      filterTasks(tasks, vf({ text, status: 'pending' }));
    });
  }
  bench(`typing "${TEXT}" (${TEXT.length} keystrokes) with createFilter, per sequence`, () => {
    const f = createFilter();
    for (let i = 1; i <= TEXT.length; i++) f(tasks, vf({ text: TEXT.slice(0, i), status: 'pending' }));
  });
  bench('status only (no text)', () => {
    filterTasks(tasks, { status: 'pending' });
  });
  bench('cold text cache, first keystroke "t"', () => {
    const fresh = tasks.map((t) => ({ ...t }));
    filterTasks(fresh, vf({ text: 't', status: 'all' }));
  }, { iterations: 5 });
});

describe(`list updates, ${N.toLocaleString()} tasks`, () => {
  const mid = tasks[N / 2] as LocalTask;
  const keyed = { ...mid, key: 'SYN-999999', sync_state: 'synced' as const, waiting: null };
  bench('applyTaskEvent: key arrives (replace in place)', () => {
    applyTaskEvent(tasks, keyed);
  });
  bench('applyTaskEvent: new task (insert on top)', () => {
    applyTaskEvent(tasks, task({ uuid: 'new-task' }));
  });
  bench('orderTasks (newest first)', () => {
    orderTasks(tasks);
  }, { iterations: 10 });
  bench('sidebarCounts (the sidebar, once per list update)', () => {
    sidebarCounts(tasks);
  });
  bench('scopeTasks to one project (a sidebar entry chosen)', () => {
    scopeTasks(tasks, { kind: 'project', prefix: 'SYN' });
  });
});

describe('windowing and markers', () => {
  let top = 0;
  bench('computeWindow (one scroll event)', () => {
    top = (top + 977) % (N * 40);
    computeWindow(top, 800, 40, N);
  });
  const s = status({ online: false });
  const visible = tasks.slice(0, 30);
  bench('markerFor for 30 visible rows (one timer tick)', () => {
    for (const t of visible) markerFor(t, s, NOW);
  });
});

describe(`jump, ${N.toLocaleString()} tasks, per keystroke`, () => {
  const ctx = { currentProject: 'SYN', knownPrefixes: ['SYN'], examplePrefix: 'SYN' };
  for (const q of ['42', 'syn 4999', 'deploy', 'task number 4 dep', 'zebra']) {
    bench(`planJump "${q}"`, () => {
      planJump(q, tasks, ctx);
    });
  }
});
