// Conflicts in words: the detail's notice reads them through these.
import { describe, expect, it } from 'vitest';
import { conflictLine, valueText } from '../src/lib/conflicts';
import type { LocalTask } from '../src/lib/types';

describe('conflicts', () => {
  it('says each kind of value as a person reads it', () => {
    expect(valueText('description', 'Fix  the\nlogin')).toBe('“Fix the login”');
    expect(valueText('notes', 'x'.repeat(100), 10)).toBe('“xxxxxxxxx…”');
    expect(valueText('tags', ['a', 'b'])).toBe('+a +b');
    expect(valueText('tags', [])).toBe('no tags');
    expect(valueText('priority', null)).toBe('none');
    expect(valueText('priority', 'H')).toBe('H');
    expect(valueText('status', 'completed')).toBe('completed');
    expect(valueText('due', 'not a date')).toBe('not a date');
  });

  it('names the value replaced and the one kept', () => {
    const t = { description: 'Later text' } as LocalTask;
    expect(conflictLine(t, { field: 'description', value: 'Earlier text', at: '2026-11-26T10:00:00Z' })).toBe(
      'Description: “Earlier text” was replaced by “Later text”',
    );
  });
});
