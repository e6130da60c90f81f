// The Next view: what can be done now, in the order the engine's `Engine::next` gives
// (crates/callsign-sync/src/engine/mod.rs), so the app and `callsign next` agree. Pure: tested
// in tests/next.test.ts.
import { isBlocked, type Subtasks } from './subtasks';
import type { LocalTask } from './types';
import { createdMs } from './view';

/** How many numbers a key has at most (`callsign_core::MAX_DEPTH`): a walk up stops past it. */
export const MAX_DEPTH = 8;

/**
 * How many ancestors `t` has: 0 for a task, 1 for its subtask, and so on, walking `parentOf`
 * (subtask → parent). A parent that is not loaded still counts as one; the walk stops past
 * `MAX_DEPTH`, as the engine's does, so a cycle cannot hang it.
 */
export function depthOf(t: Pick<LocalTask, 'parent'>, parentOf: ReadonlyMap<string, string>): number {
  let d = 0;
  let up = t.parent;
  while (up !== null && d <= MAX_DEPTH) {
    d++;
    up = parentOf.get(up) ?? null;
  }
  return d;
}

/**
 * The pending tasks that are not blocked (no open subtask), leaf-first: tasks without
 * subtasks first, then the deepest first, then by number (provisional tasks, which have none,
 * after numbered ones), ties in capture order (oldest first). `list` is newest first (the
 * loaded order), so equal capture times keep the older-loaded task first. A new array.
 */
export function nextTasks(list: readonly LocalTask[], subs: Subtasks): LocalTask[] {
  const picked: LocalTask[] = [];
  const keys: [number, number, number, number, number, number][] = [];
  for (let i = list.length - 1; i >= 0; i--) {
    const t = list[i] as LocalTask;
    if (t.status !== 'pending') continue;
    const f = subs.facts(t);
    if (isBlocked(f)) continue;
    keys.push([
      f.children > 0 ? 1 : 0,
      -depthOf(t, subs.parentOf),
      t.number === null ? 1 : 0,
      t.number ?? 0,
      createdMs(t),
      picked.length,
    ]);
    picked.push(t);
  }
  const at = Array.from(picked, (_, i) => i);
  at.sort((a, b) => {
    const x = keys[a] as number[];
    const y = keys[b] as number[];
    for (let k = 0; k < x.length; k++) if (x[k] !== y[k]) return (x[k] as number) - (y[k] as number);
    return 0;
  });
  return at.map((i) => picked[i] as LocalTask);
}
