// Who is whose subtask, and what a parent's row and detail say about them.
import { describe, expect, it } from 'vitest';
import { blockedReason, blockedText, isBlocked, parseSubtask, progressText, Subtasks } from '../src/lib/subtasks';
import type { LocalTask } from '../src/lib/types';
import { task } from './fixtures';

const u = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const at = (s: number) => new Date(Date.parse('2026-11-22T10:00:00Z') + s * 1000).toISOString();

/** Launch (SYN-3) with three subtasks: done, open, open provisional; and a deleted one. */
function tree(): LocalTask[] {
  const launch = task({ uuid: u(3), key: 'SYN-3', number: 3, description: 'Launch', created_at: at(0), children: 1, open_children: 1 });
  const post = task({ uuid: u(31), key: 'SYN-3.1', number: 1, parent: u(3), status: 'completed', created_at: at(1) });
  const demo = task({ uuid: u(32), key: 'SYN-3.2', number: 2, parent: u(3), created_at: at(2) });
  const room = task({ uuid: 'ab12cd34-0000-4000-8000-000000000033', parent: u(3), created_at: at(3) });
  const gone = task({ uuid: u(34), key: 'SYN-3.3', number: 3, parent: u(3), status: 'deleted', created_at: at(4) });
  // Newest first, as the store holds them.
  return [gone, room, demo, post, launch];
}

describe('Subtasks', () => {
  it("lists a task's subtasks oldest first and names each one's parent", () => {
    const s = new Subtasks(tree(), true);
    expect(s.of(u(3)).map((t) => t.key ?? t.uuid.slice(0, 8))).toEqual(['SYN-3.1', 'SYN-3.2', 'ab12cd34', 'SYN-3.3']);
    expect(s.shown(u(3)).map((t) => t.uuid)).not.toContain(u(34));
    expect(s.of(u(31))).toEqual([]);
    expect(s.parentOf.get(u(32))).toBe(u(3));
    expect(s.parentOf.has(u(3))).toBe(false);
  });

  it("counts from the loaded list once every page is in: the parent's own counts go stale", () => {
    // The parent was sent when it had one subtask; three more came since, one was completed.
    const launch = tree().at(-1) as LocalTask;
    const s = new Subtasks(tree(), true);
    expect(s.facts(launch)).toEqual({ children: 4, open: 2, done: 1 });
    expect(s.openLabels(u(3))).toEqual(['SYN-3.2', '~ab12cd34']);
  });

  it('a pending task with open subtasks is blocked, and the reason names them; a done one is not', () => {
    const list = tree();
    const s = new Subtasks(list, true);
    const launch = list.at(-1) as LocalTask;
    expect(s.blocked(launch)).toBe(true);
    expect(s.reason(launch)).toBe('SYN-3 has open subtasks (SYN-3.2, ~ab12cd34); complete or delete them first');
    expect(s.blocked({ ...launch, status: 'completed' })).toBe(false);
    expect(s.blocked(list[2] as LocalTask)).toBe(false); // SYN-3.2: no subtasks of its own
  });

  it("while pages load, a task's own counts stand in for subtasks not loaded yet", () => {
    const parent = task({ uuid: u(7), children: 3, open_children: 2 });
    const one = task({ uuid: u(71), parent: u(7), status: 'completed' });
    expect(new Subtasks([parent, one], false).facts(parent)).toEqual({ children: 3, open: 2, done: 1 });
    // Every one of them loaded (or more, added since): the list's counts again.
    const more = [task({ uuid: u(72), parent: u(7) }), task({ uuid: u(73), parent: u(7), status: 'completed' }), task({ uuid: u(74), parent: u(7) })];
    expect(new Subtasks([parent, one, ...more], false).facts(parent)).toEqual({ children: 4, open: 2, done: 2 });
    // Once complete, a task with no subtask in the list has none, whatever its copy says.
    expect(new Subtasks([parent], true).facts(parent)).toEqual({ children: 0, open: 0, done: 0 });
    expect(new Subtasks([task()], false).facts(task())).toEqual({ children: 0, open: 0, done: 0 });
  });
});

describe('what a row and the detail say', () => {
  it.each([
    [{ children: 0, open: 0, done: 0 }, null, false],
    [{ children: 3, open: 2, done: 1 }, '1/3', true],
    [{ children: 3, open: 0, done: 3 }, '3/3', false],
    // Deleted subtasks count for Next's order, not in the progress.
    [{ children: 4, open: 1, done: 1 }, '1/2', true],
    [{ children: 1, open: 0, done: 0 }, null, false],
  ])('%j: progress %s, blocked %s', (f, progress, blocked) => {
    expect(progressText(f)).toBe(progress);
    expect(isBlocked(f)).toBe(blocked);
  });

  it('a blocked task says how many are open, and names them as the backend does', () => {
    const f = { children: 3, open: 2, done: 1 };
    expect(blockedText(f)).toBe('blocked · 2 open');
    expect(blockedReason('SYN-3', f, ['SYN-3.2', '~ab12cd34'])).toBe(
      'SYN-3 has open subtasks (SYN-3.2, ~ab12cd34); complete or delete them first',
    );
    expect(blockedReason('SYN-3', { children: 1, open: 1, done: 0 }, [])).toBe(
      'SYN-3 has 1 open subtask; complete or delete them first',
    );
  });
});

describe('parseSubtask', () => {
  it.each([
    ['Write the post', { description: 'Write the post' }],
    ['Write the post +blog due:fri pri:H', { description: 'Write the post', tags: ['blog'], due: 'fri', priority: 'H' }],
    // The parent's own project is nothing to choose; another one stays in the text.
    ['Write the post #SYN', { description: 'Write the post' }],
    ['Ask #OPS about it', { description: 'Ask #OPS about it' }],
    ['  ', null],
    ['+blog due:fri', null],
  ] as const)('%j', (text, want) => {
    expect(parseSubtask(text, 'SYN')).toEqual(want);
  });
});
