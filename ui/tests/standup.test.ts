// The Standup view's words and its lines' order (the report is the engine's).
import { describe, expect, it } from 'vitest';
import {
  followItem,
  memberEmptyText,
  NO_TEAM_LOCAL,
  NO_TEAM_MEMBERS,
  provisionalTitle,
  sinceArg,
  sinceDate,
  sinceLabel,
  standupItems,
  standupState,
  type StandupItem,
} from '../src/lib/standup';
import type { MemberReport, Standup, StandupLine } from '../src/lib/types';

// Local times, so the words do not depend on the machine's time zone.
const local = (y: number, m: number, d: number, h = 0) => new Date(y, m - 1, d, h);
const iso = (y: number, m: number, d: number) => local(y, m, d).toISOString();
/** Monday 30 November 2026, mid-morning. */
const MONDAY = local(2026, 11, 30, 9).getTime();

const line = (key: string, uuid: string, provisional = false): StandupLine => ({ key, description: `Task ${key}`, uuid, provisional });
const member = (name: string, over: Partial<MemberReport> = {}): MemberReport => ({ name, completed: [], created: [], open: [], ...over });
const report = (members: MemberReport[], since = iso(2026, 11, 27)): Standup => ({ since, members });

describe('sinceLabel', () => {
  it.each([
    ['the same day', iso(2026, 11, 30), 'today'],
    ['the day before', iso(2026, 11, 29), 'yesterday'],
    ['Friday before a Monday', iso(2026, 11, 27), 'Friday'],
    ['six days back', iso(2026, 11, 24), 'Tuesday'],
    ['a week back: the date', iso(2026, 11, 23), 'Mon 23 Nov'],
    ['the next day (a day typed)', iso(2026, 12, 1), 'tomorrow'],
    ['later: the date', iso(2026, 12, 2), 'Wed 2 Dec'],
    ['another year: with it', iso(2025, 12, 31), 'Wed 31 Dec 2025'],
  ])('%s: %s', (_n, since, want) => {
    expect(sinceLabel(since, MONDAY)).toBe(want);
  });

  it('spells the date out for the title', () => {
    expect(sinceDate(iso(2026, 11, 27))).toBe('Friday 2026-11-27');
  });
});

describe('sinceArg', () => {
  it.each([
    ['last', '', null],
    ['last', '2026-11-20', null],
    ['yesterday', '', 'yesterday'],
    ['today', 'x', 'today'],
    ['day', ' 2026-11-20 ', '2026-11-20'],
    ['day', '  ', null],
  ] as const)('%s with the day %j asks for %j', (choice, day, want) => {
    expect(sinceArg(choice, day)).toBe(want);
  });
});

describe('standupState', () => {
  it('no server: the team cannot be known, whatever the tasks name', () => {
    expect(standupState(report([member('bob', { open: [line('DEV-1', 'a')] })]), false, MONDAY)).toEqual({ kind: 'no-team', text: NO_TEAM_LOCAL });
    expect(standupState(null, false, MONDAY).kind).toBe('no-team');
    expect(NO_TEAM_LOCAL).toMatch(/log in or join a team \(Settings\)/);
  });

  it('a server but no member listed yet: says so', () => {
    expect(standupState(report([]), true, MONDAY)).toEqual({ kind: 'no-team', text: NO_TEAM_MEMBERS });
  });

  it('before the first answer: loading', () => {
    expect(standupState(null, true, MONDAY)).toEqual({ kind: 'loading' });
  });

  it('members with nothing: one line naming the day', () => {
    expect(standupState(report([member('alice'), member('bob')]), true, MONDAY)).toEqual({
      kind: 'empty',
      text: 'Nothing since Friday: no task completed or created, none open and assigned.',
    });
  });

  it.each(['completed', 'created', 'open'] as const)('one line %s by anyone: the report', (section) => {
    expect(standupState(report([member('alice'), member('bob', { [section]: [line('DEV-1', 'a')] })]), true, MONDAY)).toEqual({ kind: 'report' });
  });

  it("a member with nothing, under their name", () => {
    expect(memberEmptyText(iso(2026, 11, 29), MONDAY)).toBe('Nothing since yesterday, nothing open.');
  });
});

describe('standupItems', () => {
  const r = report([
    member('alice', { created: [line('DEV-3', 'c'), line('~1a2b3c4d', 'p', true)] }),
    member('bob', { completed: [line('DEV-1', 'a')], created: [line('DEV-2', 'b')], open: [line('DEV-2', 'b'), line('DEV-3', 'c')] }),
  ]);

  it('reads member by member: completed, created, then open', () => {
    expect(standupItems(r).map((i) => `${i.member} ${i.section} ${i.line.key}`)).toEqual([
      'alice created DEV-3',
      'alice created ~1a2b3c4d',
      'bob completed DEV-1',
      'bob created DEV-2',
      'bob open DEV-2',
      'bob open DEV-3',
    ]);
    expect(standupItems(null)).toEqual([]);
  });

  it('the highlight stays on its line when the report changes, else on its task, else in place', () => {
    const before = standupItems(r);
    const at = (i: number) => before[i] as StandupItem;
    // bob completed DEV-2: it leaves created/open for completed.
    const after = standupItems(
      report([
        member('alice', { created: [line('DEV-3', 'c'), line('~1a2b3c4d', 'p', true)] }),
        member('bob', { completed: [line('DEV-1', 'a'), line('DEV-2', 'b')], created: [line('DEV-2', 'b')], open: [line('DEV-3', 'c')] }),
      ]),
    );
    expect(followItem(after, at(5), 5)).toBe(5); // bob open DEV-3, now at 5 still
    expect(followItem(after, at(4), 4)).toBe(3); // bob open DEV-2 is gone: DEV-2's first line
    expect(followItem(after, at(2), 2)).toBe(2);
    expect(followItem(after.slice(0, 2), { member: 'x', section: 'open', line: line('X-1', 'z') }, 9)).toBe(1);
    expect(followItem([], at(0), 0)).toBe(-1);
  });

  it("a provisional line says it is not numbered, with its id", () => {
    expect(provisionalTitle(line('~1a2b3c4d', 'p', true))).toBe('Provisional (~1a2b3c4d): its key comes when the server numbers it');
  });
});
