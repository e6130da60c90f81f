import { describe, expect, it } from 'vitest';
import { keyColumnCh, loadDensity, MARKER_MIN_CH, ROW_HEIGHT, saveDensity, tagChips } from '../src/lib/layout';
import { brokenStorage, memoryStorage as memory } from './fixtures';

describe('keyColumnCh', () => {
  const k = (...keys: (string | null)[]) => keys.map((key) => ({ key }));
  it.each([
    ['no tasks: the marker width', k(), MARKER_MIN_CH],
    ['only provisional tasks', k(null, null), MARKER_MIN_CH],
    ['short keys fit in the marker width', k('DEV-1', 'DEV-42'), MARKER_MIN_CH],
    ['DEV-12345 (9) + 1', k('DEV-1', 'DEV-12345'), 10],
    ['a long prefix and number: longest + 1', k('DEV-2', 'PLATFORM-123456', null), 16],
  ] as const)('%s', (_n, tasks, want) => {
    expect(keyColumnCh(tasks)).toBe(want);
  });
});

describe('tagChips', () => {
  it.each([
    ['none', [], { shown: [], more: 0 }],
    ['one', ['docs'], { shown: ['docs'], more: 0 }],
    ['two fit', ['docs', 'ops'], { shown: ['docs', 'ops'], more: 0 }],
    ['more than two: +N', ['a', 'b', 'c', 'd', 'e'], { shown: ['a', 'b'], more: 3 }],
    ['a long first tag leaves no room for a second', ['a-very-long-tag-name-here', 'ops'], { shown: ['a-very-long-tag-name-here'], more: 1 }],
  ] as const)('%s', (_n, tags, want) => {
    expect(tagChips([...tags])).toEqual(want);
  });
});

describe('density', () => {
  it('compact (32 px) unless comfortable (40 px) was saved', () => {
    expect(ROW_HEIGHT[loadDensity(memory())]).toBe(32);
    expect(ROW_HEIGHT[loadDensity(memory({ 'callsign.density': 'comfortable' }))]).toBe(40);
    expect(loadDensity(memory({ 'callsign.density': 'huge' }))).toBe('compact');
    expect(loadDensity(null)).toBe('compact');
  });

  it('saves and loads back', () => {
    const s = memory();
    saveDensity('comfortable', s);
    expect(loadDensity(s)).toBe('comfortable');
  });

  it('storage that throws is not fatal', () => {
    const broken = brokenStorage();
    expect(loadDensity(broken)).toBe('compact');
    expect(() => saveDensity('compact', broken)).not.toThrow();
  });
});
