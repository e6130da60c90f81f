import { describe, expect, it } from 'vitest';
import { cursorAt, cursorOn, NO_CURSOR, reconcileCursor, type Cursor } from '../src/lib/cursor';

const rows = (...ids: string[]) => ids.map((uuid) => ({ uuid }));
const all = (ids: string[]) => (uuid: string) => ids.includes(uuid);

describe('reconcileCursor', () => {
  it.each([
    ['no rows yet, nothing current', NO_CURSOR, [], [], NO_CURSOR],
    ['rows arrive: the first is current', NO_CURSOR, ['a', 'b'], ['a', 'b'], { uuid: 'a', index: 0, pinned: false }],
    ['the task is still there', { uuid: 'b', index: 1, pinned: false }, ['a', 'b', 'c'], ['a', 'b', 'c'], { uuid: 'b', index: 1, pinned: false }],
    ['a task inserted above: its index follows', { uuid: 'b', index: 1, pinned: false }, ['n', 'a', 'b'], ['n', 'a', 'b'], { uuid: 'b', index: 2, pinned: false }],
    // completing DEV-3 in the pending view: the task that took its place becomes current
    ['it left the list: the row that took its place', { uuid: 'b', index: 1, pinned: false }, ['a', 'c'], ['a', 'b', 'c'], { uuid: 'c', index: 1, pinned: false }],
    ['it was the last row: the new last row', { uuid: 'c', index: 2, pinned: false }, ['a', 'b'], ['a', 'b', 'c'], { uuid: 'b', index: 1, pinned: false }],
    ['the list emptied: nothing current', { uuid: 'a', index: 0, pinned: false }, [], ['a'], NO_CURSOR],
    ['a pinned task (a jump) outside the list stays current', { uuid: 'z', index: 1, pinned: true }, ['a', 'b'], ['a', 'b', 'z'], { uuid: 'z', index: 1, pinned: true }],
    ['a pinned task that is gone: the row at its hint', { uuid: 'z', index: 1, pinned: true }, ['a', 'b'], ['a', 'b'], { uuid: 'b', index: 1, pinned: false }],
    ['a pinned task that enters the list is a plain row', { uuid: 'z', index: 0, pinned: true }, ['a', 'z'], ['a', 'z'], { uuid: 'z', index: 1, pinned: false }],
  ] as const)('%s', (_n, c, list, existing, want) => {
    expect(reconcileCursor(c as Cursor, rows(...list), all([...existing]))).toEqual(want);
  });

  it('returns the same object when nothing changed (no write-back loop)', () => {
    const c: Cursor = { uuid: 'b', index: 1, pinned: false };
    expect(reconcileCursor(c, rows('a', 'b'), () => true)).toBe(c);
    const p: Cursor = { uuid: 'z', index: 0, pinned: true };
    expect(reconcileCursor(p, rows('a'), () => true)).toBe(p);
  });
});

describe('cursorAt / cursorOn', () => {
  it.each([
    [0, 'a'],
    [2, 'c'],
    [9, 'c'],
    [-1, 'a'],
  ])('cursorAt(%i) is on %s', (to, want) => {
    expect(cursorAt(rows('a', 'b', 'c'), to).uuid).toBe(want);
  });

  it('cursorAt on an empty list is no cursor', () => {
    expect(cursorAt([], 3)).toEqual(NO_CURSOR);
  });

  it('cursorOn a row of the list', () => {
    expect(cursorOn(rows('a', 'b'), 'b', 0)).toEqual({ uuid: 'b', index: 1, pinned: false });
  });

  it('cursorOn a task outside the list pins it, keeping the hint', () => {
    expect(cursorOn(rows('a', 'b'), 'z', 1)).toEqual({ uuid: 'z', index: 1, pinned: true });
  });
});
