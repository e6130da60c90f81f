// The team as the settings show it, and the invite-code and handle rules of callsign-core
// (`invite::normalize`, `MemberName::parse`) for the preview's fake backend.
import type { Member } from './types';

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

/** Why `name` (a leading @ allowed) is not a member's handle, or null when it is one. */
export function memberNameError(name: string): string | null {
  const n = name.trim().replace(/^@/, '');
  if (/^[A-Za-z][A-Za-z0-9._-]{0,31}$/.test(n) && !/[.-]$/.test(n)) return null;
  return `invalid member name "${n}": a name is 1-32 characters, a letter first, then letters, digits, '.', '_' or '-' (e.g. alice)`;
}
