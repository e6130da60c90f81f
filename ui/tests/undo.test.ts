import { describe, expect, it } from 'vitest';
import { inversePatch, taskLabel, undoStep, UndoStack, type UndoEntry } from '../src/lib/undo';
import type { TaskPatch } from '../src/lib/types';
import { task } from './fixtures';

const keyed = task({ key: 'DEV-3', description: 'Old', notes: 'n', tags: ['a', 'b'], project: 'DEV' });
const provisional = task({ uuid: 'abcdef12-0000-4000-8000-000000000000', project: 'ZZZ', description: 'Draft', notes: '', tags: [] });
const entry = (kind: UndoEntry['kind'], t = keyed, patch?: UndoEntry['patch']): UndoEntry => ({ id: 1, kind, task: t, ...(patch ? { patch } : {}) });

describe('undoStep', () => {
  it.each([
    ['complete → reopen', entry('complete'), { call: 'reopen', id: keyed.uuid, message: 'Reopened DEV-3' }],
    ['reopen → complete', entry('reopen'), { call: 'complete', id: keyed.uuid, message: 'Completed DEV-3' }],
    ['delete → reopen, "Restored"', entry('delete'), { call: 'reopen', id: keyed.uuid, message: 'Restored DEV-3' }],
    [
      'discard → create again with the same fields',
      entry('discard'),
      { call: 'create', input: { description: 'Old', project: 'DEV', notes: 'n', tags: ['a', 'b'] }, message: 'Restored as a new local task' },
    ],
    [
      'discard of a bare task: no empty notes or tags sent',
      entry('discard', provisional),
      { call: 'create', input: { description: 'Draft', project: 'ZZZ' }, message: 'Restored as a new local task' },
    ],
    [
      'discard keeps the due date (as its time) and the priority',
      entry('discard', task({ ...provisional, due: '2026-11-27T00:00:00Z', priority: 'H' })),
      {
        call: 'create',
        input: { description: 'Draft', project: 'ZZZ', due: '2026-11-27T00:00:00Z', priority: 'H' },
        message: 'Restored as a new local task',
      },
    ],
    [
      'edit → edit back',
      entry('edit', keyed, { description: 'Old' }),
      { call: 'edit', id: keyed.uuid, patch: { description: 'Old' }, message: 'Undid the edit of DEV-3' },
    ],
  ] as const)('%s', (_n, e, want) => {
    expect(undoStep(e)).toEqual(want);
  });

  it('names the task as it is now (it got its key since)', () => {
    expect(undoStep(entry('complete', provisional), 'ZZZ-9').message).toBe('Reopened ZZZ-9');
  });

  it('taskLabel: the key, else the short id', () => {
    expect(taskLabel(keyed)).toBe('DEV-3');
    expect(taskLabel(provisional)).toBe('~abcdef12');
  });
});

describe('inversePatch', () => {
  it.each<[string, TaskPatch, TaskPatch]>([
    ['description only', { description: 'New' }, { description: 'Old' }],
    ['notes and tags', { notes: 'x', tags: ['c'] }, { notes: 'n', tags: ['a', 'b'] }],
    ['nothing', {}, {}],
  ])('%s', (_n, patch, want) => {
    expect(inversePatch(keyed, patch)).toEqual(want);
  });

  it.each<[string, TaskPatch, TaskPatch]>([
    ['a due date set: cleared again', { due: 'fri' }, { due: '' }],
    ['a priority set: cleared again', { priority: 'H' }, { priority: '' }],
  ])('%s', (_n, patch, want) => {
    expect(inversePatch(keyed, patch)).toEqual(want);
  });

  it('a due date and priority changed or cleared: the old ones back', () => {
    const planned = task({ due: '2026-11-27T13:30:00Z', priority: 'M' });
    expect(inversePatch(planned, { due: '', priority: 'L' })).toEqual({ due: '2026-11-27T13:30:00Z', priority: 'M' });
  });

  it('copies the tags (a later change to the task does not leak in)', () => {
    const p = inversePatch(keyed, { tags: [] });
    expect(p.tags).not.toBe(keyed.tags);
  });
});

describe('UndoStack', () => {
  it('pops newest first', () => {
    const s = new UndoStack();
    s.push('complete', keyed);
    s.push('delete', provisional);
    expect(s.pop()?.kind).toBe('delete');
    expect(s.pop()?.kind).toBe('complete');
    expect(s.pop()).toBeNull();
  });

  it('keeps the last `limit` entries', () => {
    const s = new UndoStack(3);
    for (let i = 0; i < 5; i++) s.push('complete', task({ uuid: String(i) }));
    expect(s.size).toBe(3);
    expect([s.pop(), s.pop(), s.pop()].map((e) => e?.task.uuid)).toEqual(['4', '3', '2']);
  });

  it('take(id) removes that entry wherever it is, once', () => {
    const s = new UndoStack();
    const a = s.push('complete', keyed);
    s.push('delete', provisional);
    expect(s.take(a.id)?.kind).toBe('complete');
    expect(s.take(a.id)).toBeNull();
    expect(s.size).toBe(1);
    expect(s.pop()?.kind).toBe('delete');
  });
});
