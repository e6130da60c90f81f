import { describe, expect, it } from 'vitest';
import { loadSort, saveSort, sortByKey, sortTasks, type SortOrder } from '../src/lib/sort';
import type { LocalTask } from '../src/lib/types';
import { brokenStorage, memoryStorage, task } from './fixtures';

// Newest capture first, as the list is loaded.
const list: LocalTask[] = [
  task({ uuid: 'a', due: null, priority: null }),
  task({ uuid: 'b', due: '2026-12-01T00:00:00Z', priority: 'L' }),
  task({ uuid: 'c', due: '2026-11-27T09:00:00Z', priority: 'H' }),
  task({ uuid: 'd', due: null, priority: 'M' }),
  task({ uuid: 'e', due: '2026-11-27T09:00:00Z', priority: null }),
  task({ uuid: 'f', due: '2026-11-20T00:00:00.5Z', priority: 'H' }),
];

describe('sortTasks', () => {
  it.each<[string, SortOrder, string[]]>([
    ['created: as captured', 'created', ['a', 'b', 'c', 'd', 'e', 'f']],
    ['due: soonest first, none last, ties in capture order', 'due', ['f', 'c', 'e', 'b', 'a', 'd']],
    ['priority: H, M, L, none, ties in capture order', 'priority', ['c', 'f', 'd', 'b', 'a', 'e']],
  ])('%s', (_n, order, want) => {
    expect(sortTasks(list, order).map((t) => t.uuid)).toEqual(want);
  });

  it('created is the same array (no work for the default order)', () => {
    expect(sortTasks(list, 'created')).toBe(list);
  });

  it('does not reorder its input', () => {
    const copy = list.slice();
    sortTasks(list, 'due');
    sortTasks(list, 'priority');
    expect(list).toEqual(copy);
  });

  it('time, not text: an offset or fractions compare as the instant they name', () => {
    const x = task({ uuid: 'x', due: '2026-11-27T10:00:00+02:00' }); // 08:00 UTC
    const y = task({ uuid: 'y', due: '2026-11-27T09:00:00Z' });
    expect(sortTasks([y, x], 'due').map((t) => t.uuid)).toEqual(['x', 'y']);
  });
});

describe('sortByKey', () => {
  it('ascending; equal keys, Infinity too, keep their order; one key call per item', () => {
    const items = ['a:3', 'b:inf', 'c:1', 'd:3', 'e:inf', 'f:-2', 'g:1'];
    let calls = 0;
    const key = (s: string) => {
      calls++;
      const v = s.slice(2);
      return v === 'inf' ? Infinity : Number(v);
    };
    expect(sortByKey(items, key)).toEqual(['f:-2', 'c:1', 'g:1', 'a:3', 'd:3', 'b:inf', 'e:inf']);
    expect(calls).toBe(items.length);
  });
});

describe('loadSort / saveSort', () => {
  it('remembers the choice', () => {
    const s = memoryStorage();
    expect(loadSort(s)).toBe('created');
    saveSort('due', s);
    expect(loadSort(s)).toBe('due');
  });

  it('anything else stored, or no storage, is the default', () => {
    expect(loadSort(memoryStorage({ 'callsign.sort': 'urgency' }))).toBe('created');
    expect(loadSort(null)).toBe('created');
    expect(loadSort(brokenStorage())).toBe('created');
  });
});
