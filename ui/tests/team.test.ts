// The team's words and the invite-code and handle rules the preview's backend checks with.
import { describe, expect, it } from 'vitest';
import { memberLabel, memberNameError, normalizeInviteCode } from '../src/lib/team';

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
