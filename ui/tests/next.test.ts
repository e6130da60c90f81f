// The Next view's order: the engine's `Engine::next` (crates/callsign-sync/src/engine/mod.rs),
// its test `next_lists_unblocked_tasks_leaf_first` in the same words.
import { describe, expect, it } from 'vitest';
import { depthOf, MAX_DEPTH, nextTasks } from '../src/lib/next';
import { Subtasks } from '../src/lib/subtasks';
import type { LocalTask, TaskStatus } from '../src/lib/types';
import { task } from './fixtures';

const u = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const at = (s: number) => new Date(Date.parse('2026-11-22T10:00:00Z') + s * 1000).toISOString();

/** Tasks from `[n, key | null, parent n | null, status]`, captured in the order given. */
function tasks(rows: [number, string | null, number | null, TaskStatus][]): LocalTask[] {
  const out = rows.map(([n, key, parent, status], i) =>
    task({
      uuid: u(n),
      key,
      number: key === null ? null : Number(key.split(/[-.]/).at(-1)),
      description: key ?? `captured ${n}`,
      parent: parent === null ? null : u(parent),
      status,
      created_at: at(i),
    }),
  );
  return out.reverse(); // newest first, as the store holds them
}

const next = (list: LocalTask[], complete = true) => nextTasks(list, new Subtasks(list, complete)).map((t) => t.description);

describe('nextTasks', () => {
  it('leaves out blocked parents; the deepest leaves first; a parent whose subtasks are done after every leaf', () => {
    const list = tasks([
      [1, 'SYN-1', null, 'pending'],
      [11, 'SYN-1.1', 1, 'pending'],
      [111, 'SYN-1.1.1', 11, 'pending'],
      [12, 'SYN-1.2', 1, 'pending'],
      [2, 'SYN-2', null, 'pending'],
      [3, 'SYN-3', null, 'pending'],
      [31, 'SYN-3.1', 3, 'completed'],
      [4, null, null, 'pending'],
    ]);
    expect(next(list)).toEqual(['SYN-1.1.1', 'SYN-1.2', 'SYN-2', 'captured 4', 'SYN-3']);
  });

  it('by number among equals, provisional after numbered, ties in capture order', () => {
    const list = tasks([
      [5, null, null, 'pending'],
      [9, 'SYN-9', null, 'pending'],
      [6, null, null, 'pending'],
      [2, 'SYN-2', null, 'pending'],
      [7, 'OPS-2', null, 'pending'], // same number as SYN-2, captured later
    ]);
    expect(next(list)).toEqual(['SYN-2', 'OPS-2', 'SYN-9', 'captured 5', 'captured 6']);
  });

  it('only pending tasks; a done subtask no longer blocks; a deleted subtask still makes a parent', () => {
    const list = tasks([
      [1, 'SYN-1', null, 'pending'],
      [11, 'SYN-1.1', 1, 'deleted'],
      [2, 'SYN-2', null, 'completed'],
      [3, 'SYN-3', null, 'deleted'],
      [4, 'SYN-4', null, 'pending'],
    ]);
    expect(next(list)).toEqual(['SYN-4', 'SYN-1']);
  });

  it('a subtask whose parent is not loaded still counts as one level deep', () => {
    const list = tasks([
      [1, 'SYN-1', null, 'pending'],
      [21, 'SYN-2.1', 2, 'pending'],
    ]);
    expect(next(list)).toEqual(['SYN-2.1', 'SYN-1']);
  });

  it("while pages load, a parent's own counts keep it out until its subtasks are loaded", () => {
    const parent = task({ uuid: u(1), key: 'SYN-1', number: 1, description: 'SYN-1', children: 1, open_children: 1 });
    expect(next([parent], false)).toEqual([]);
    expect(next([parent], true)).toEqual(['SYN-1']);
  });
});

describe('depthOf', () => {
  it('counts ancestors and stops past MAX_DEPTH on a cycle', () => {
    const parentOf = new Map([
      [u(3), u(2)],
      [u(2), u(1)],
    ]);
    expect(depthOf({ parent: null }, parentOf)).toBe(0);
    expect(depthOf({ parent: u(1) }, parentOf)).toBe(1);
    expect(depthOf({ parent: u(3) }, parentOf)).toBe(3);
    const cycle = new Map([
      [u(1), u(2)],
      [u(2), u(1)],
    ]);
    expect(depthOf({ parent: u(1) }, cycle)).toBe(MAX_DEPTH + 1);
  });
});
