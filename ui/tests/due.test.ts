// Due dates as rows and the detail show them. Built from local times (`new Date(y, m, d, h)`),
// so the answers hold in any time zone the tests run in.
import { describe, expect, it } from 'vitest';
import { dateSegments, dueInputText, dueView, isOverdue } from '../src/lib/due';
import type { TaskStatus } from '../src/lib/types';

/** A local wall-clock time as the backend sends it (RFC 3339, UTC). Months from 1. */
const at = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) => new Date(y, mo - 1, d, h, mi, s).toISOString();
/** Wednesday 25 November 2026, 15:30 local. */
const NOW = new Date(2026, 10, 25, 15, 30).getTime();
const view = (due: string | null, status: TaskStatus = 'pending', now = NOW) => dueView({ due, status }, now);

describe('dueView', () => {
  it.each([
    ['today, a whole day', at(2026, 11, 25), 'today', 'Wednesday 25 November 2026'],
    ['today with a time', at(2026, 11, 25, 18, 5), 'today 18:05', 'Wednesday 25 November 2026, 18:05'],
    ['tomorrow', at(2026, 11, 26), 'tomorrow', 'Thursday 26 November 2026'],
    ['yesterday', at(2026, 11, 24), 'yesterday', 'Tuesday 24 November 2026'],
    ['a day this week', at(2026, 11, 27), 'Fri 27 Nov', 'Friday 27 November 2026'],
    ['a span from now keeps its time', at(2026, 11, 28, 15, 30), 'Sat 28 Nov 15:30', 'Saturday 28 November 2026, 15:30'],
    ['an end of day (eow) reads as the date', at(2026, 11, 29, 23, 59, 59), 'Sun 29 Nov', 'Sunday 29 November 2026'],
    ['next year, within months: no year', at(2027, 1, 4), 'Mon 4 Jan', 'Monday 4 January 2027'],
    ['far ahead: the year, no weekday', at(2028, 3, 1), '1 Mar 2028', 'Wednesday 1 March 2028'],
    ['long ago: the year', at(2025, 2, 10), '10 Feb 2025', 'Monday 10 February 2025'],
  ])('%s', (_n, due, text, long) => {
    expect(view(due)).toMatchObject({ text, long });
  });

  it('no due date: nothing to show', () => {
    expect(view(null)).toBeNull();
  });

  it.each([
    ['a time earlier today is overdue', at(2026, 11, 25, 9, 0), true, false],
    ['a time later today is due today', at(2026, 11, 25, 18, 0), false, true],
    ['today as a whole day is not overdue until it is over', at(2026, 11, 25), false, true],
    ['yesterday is overdue', at(2026, 11, 24), true, false],
    ['tomorrow is neither', at(2026, 11, 26), false, false],
  ])('%s', (_n, due, overdue, today) => {
    expect(view(due)).toMatchObject({ overdue, today });
  });

  it.each(['completed', 'deleted'] as const)('a %s task is never overdue', (status) => {
    expect(view(at(2026, 11, 1), status)).toMatchObject({ overdue: false, today: false, text: 'Sun 1 Nov' });
  });
});

describe('isOverdue', () => {
  it('a whole day ends at the next midnight', () => {
    const due = at(2026, 11, 25);
    expect(isOverdue(due, new Date(2026, 10, 25, 23, 59, 59).getTime())).toBe(false);
    expect(isOverdue(due, new Date(2026, 10, 26, 0, 0, 0).getTime())).toBe(true);
  });

  it('a time is overdue the moment after it', () => {
    const due = at(2026, 11, 25, 15, 30);
    expect(isOverdue(due, NOW)).toBe(false);
    expect(isOverdue(due, NOW + 1)).toBe(true);
  });
});

describe('dueInputText', () => {
  it.each([
    ['none: empty', null, ''],
    ['a whole day: the date', at(2026, 12, 1), '2026-12-01'],
    ['a time: date and minutes, a form the backend reads back', at(2026, 12, 1, 14, 30), '2026-12-01 14:30'],
    ['an end of day: its minutes', at(2026, 11, 29, 23, 59, 59), '2026-11-29 23:59'],
  ])('%s', (_n, due, want) => {
    expect(dueInputText(due)).toBe(want);
  });
});

describe('dateSegments', () => {
  it('cuts out dates and date-times; the pieces give the text back', () => {
    const text = "'soon' is not a date: use a date (2026-12-01, 2026-12-01T14:30), a day (today)";
    const segs = dateSegments(text);
    expect(segs.filter((s) => s.date).map((s) => s.text)).toEqual(['2026-12-01', '2026-12-01T14:30']);
    expect(segs.map((s) => s.text).join('')).toBe(text);
  });

  it.each([
    ['no date: one piece', 'Saved PFX-7', [{ text: 'Saved PFX-7', date: false }]],
    ['only a date', '2026-12-01 14:30', [{ text: '2026-12-01 14:30', date: true }]],
    ['empty', '', []],
  ])('%s', (_n, text, want) => {
    expect(dateSegments(text)).toEqual(want);
  });
});
