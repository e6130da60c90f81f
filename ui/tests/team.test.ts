// The team's words and the invite-code and handle rules the preview's backend checks with.
import { describe, expect, it } from 'vitest';
import { assigneeOptions, creatorText, initials, memberLabel, memberNameError, mentionedMember, normalizeInviteCode } from '../src/lib/team';

describe('memberLabel', () => {
  it('names the member by handle and role', () => {
    expect(memberLabel({ name: 'bob', role: 'member' })).toBe('@bob (member)');
    expect(memberLabel({ name: 'alice', role: 'owner' })).toBe('@alice (owner)');
  });
});

describe('normalizeInviteCode', () => {
  it.each([
    ['7KQ2-M9XD-4TRA-Z0PB', '7KQ2M9XD4TRAZ0PB'],
    ['  7kq2 m9xd 4tra z0pb ', '7KQ2M9XD4TRAZ0PB'],
    ['7KQ2M9XD4TRAZOPB', '7KQ2M9XD4TRAZ0PB'], // O is 0
    ['iL00-0000-0000-0000', '1100000000000000'], // I and L are 1
  ])('reads %j as %j', (typed, code) => {
    expect(normalizeInviteCode(typed)).toBe(code);
  });

  it.each(['', '7KQ2-M9XD', '7KQ2-M9XD-4TRA-Z0PB-1', '7KQ2-M9XD-4TRA-Z0PU', 'ÄKQ2-M9XD-4TRA-Z0PB'])(
    'refuses %j',
    (typed) => {
      expect(normalizeInviteCode(typed)).toBeNull();
    },
  );
});

describe('memberNameError', () => {
  it.each(['bob', '@bob', 'Bob.Smith', 'a', 'x_1-y', 'a'.repeat(32)])('takes %j', (name) => {
    expect(memberNameError(name)).toBeNull();
  });

  it.each(['', '@', '1bob', 'bob.', 'bob-', 'bo b', 'a'.repeat(33), 'bøb'])('refuses %j in words', (name) => {
    expect(memberNameError(name)).toMatch(/^invalid member name .*: a name is 1-32 characters, a letter first/);
  });
});

describe('mentionedMember', () => {
  it.each([
    ['@bob', ['bob'], 'bob'],
    ['@Bob', ['bob'], 'bob'],
    ['@bob', ['alice'], null],
    ['@bob', null, 'bob'],
    ['bob', null, null],
    ['@', null, null],
    ['@-bob', null, null],
    ['@bob-', null, null],
    ['@' + 'a'.repeat(33), null, null],
  ] as const)('%j with the team %j: %j', (word, team, want) => {
    expect(mentionedMember(word, team)).toBe(want);
  });
});

describe('initials', () => {
  it.each([
    ['bob', 'B'],
    ['mary.jane', 'MJ'],
    ['ann-lee_2', 'AL'],
    ['r2d2', 'R'],
    ['jo_3', 'J'],
  ])('%s: %s', (name, want) => {
    expect(initials(name)).toBe(want);
  });
});

describe('creatorText', () => {
  it.each([
    [{ created_by: 'alice', sync_state: 'synced' }, '@alice'],
    [{ created_by: null, sync_state: 'provisional' }, 'Created on this device, not yet synced'],
    [{ created_by: null, sync_state: 'failed' }, 'Created on this device, not yet synced'],
    [{ created_by: null, sync_state: 'synced' }, null],
  ] as const)('%j: %j', (t, want) => {
    expect(creatorText(t)).toBe(want);
  });
});

describe('assigneeOptions', () => {
  const team = [
    { name: 'bob', role: 'member' },
    { name: 'alice', role: 'owner' },
  ] as const;
  it('the members by name, and the current assignee even when the list lacks them', () => {
    expect(assigneeOptions([...team], null)).toEqual(['alice', 'bob']);
    expect(assigneeOptions([...team], 'bob')).toEqual(['alice', 'bob']);
    expect(assigneeOptions([...team], 'zed')).toEqual(['alice', 'bob', 'zed']);
    expect(assigneeOptions([], null)).toEqual([]);
  });
});
