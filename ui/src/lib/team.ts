// The team as the settings show it, and the invite-code and handle rules of callsign-core
// (`invite::normalize`, `MemberName::parse`) for the preview's fake backend.
import type { LocalTask, Member } from './types';

/** "@bob (member)": how the app names the member this device is. */
export function memberLabel(m: Member): string {
  return `@${m.name} (${m.role})`;
}

/** Crockford's base 32: no I, L, O or U. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A typed invite code in its canonical form (16 upper-case characters, no dashes), or null
 * when it cannot be one. Case, spaces and dashes are forgiven; O reads as 0, I and L as 1.
 */
export function normalizeInviteCode(input: string): string | null {
  let out = '';
  for (const ch of input.trim()) {
    if (ch === '-' || ch === ' ') continue;
    let c = ch.toUpperCase();
    if (c === 'O') c = '0';
    else if (c === 'I' || c === 'L') c = '1';
    if (!ALPHABET.includes(c)) return null;
    out += c;
  }
  return out.length === 16 ? out : null;
}

/** Whether `n` is a handle as it stands (callsign-core's `MemberName::parse`, any case). */
function isHandle(n: string): boolean {
  return /^[A-Za-z][A-Za-z0-9._-]{0,31}$/.test(n) && !/[.-]$/.test(n);
}

/** Why `name` (a leading @ allowed) is not a member's handle, or null when it is one. */
export function memberNameError(name: string): string | null {
  const n = name.trim().replace(/^@/, '');
  if (isHandle(n)) return null;
  return `invalid member name "${n}": a name is 1-32 characters, a letter first, then letters, digits, '.', '_' or '-' (e.g. alice)`;
}

/**
 * The handle a capture word `@name` mentions (lower-cased), or null when it is not one: the
 * rule of callsign-core's `mention` (`@` and a handle as it stands: `@@bob` and `@ bob` are words).
 */
export function mention(word: string): string | null {
  if (!word.startsWith('@')) return null;
  const name = word.slice(1);
  return isHandle(name) ? name.toLowerCase() : null;
}

/**
 * The member an `@name` word assigns to, or null when it stays a word: a handle, and, when the
 * team is known (`members` not null), one of its members (as `#PFX` counts only for a known
 * project). The engine's `take_assignee` reads the CLI's words by the same rule.
 */
export function mentionedMember(word: string, members: readonly string[] | null): string | null {
  const name = mention(word);
  if (name === null) return null;
  return members === null || members.some((m) => m.toLowerCase() === name) ? name : null;
}

/** The row's badge: `bob` → `B`, `mary.jane` → `MJ`, `ann-lee_2` → `AL` (at most two letters). */
export function initials(name: string): string {
  const parts = name.split(/[._-]+/).filter((p) => /^[A-Za-z]/.test(p));
  const letters = parts.length > 1 ? parts.slice(0, 2).map((p) => p[0]) : [name[0] ?? '?'];
  return letters.join('').toUpperCase();
}

/**
 * Who created the task, as the detail says it: `@bob`; while the server has not answered, that
 * it was created here and not yet synced; for a task from before members were stamped, null.
 */
export function creatorText(t: Pick<LocalTask, 'created_by' | 'sync_state'>): string | null {
  if (t.created_by) return `@${t.created_by}`;
  if (t.sync_state !== 'synced') return 'Created on this device, not yet synced';
  return null;
}

/**
 * The detail's assignee select: Nobody, then the known members by name, and the current
 * assignee even when the last list does not have them (left the team, or no list yet).
 */
export function assigneeOptions(members: readonly Member[], current: string | null): string[] {
  const names = members.map((m) => m.name);
  if (current !== null && !names.includes(current)) names.push(current);
  return names.sort();
}
