// Ctrl+K: keys first, then the best text matches. Pure: tested in tests/jump.test.ts.
//
// Keys are read as leniently as `callsign-core`'s `TaskKey::parse`: prefix 2-10 characters,
// letter first, any case; separator `-`, spaces or none (without one the prefix runs to the last
// letter: `v2x5` is V2X-5); number 1..2^53. A bare number is a key of the current project.
// A key a task had in the tracker it was imported from (`origin.key`: `ENG-42`, `#12`) finds it
// too, typed as is in any case, after its key here and its previous keys.
import type { LocalTask } from './types';
import { haystack } from './view';

export type JumpQuery =
  | { kind: 'key'; prefix: string; number: number; key: string }
  | { kind: 'uuid'; uuid: string }
  | { kind: 'uuid-prefix'; prefix: string }
  | { kind: 'error'; message: string };

/** The accepted forms, with the user's own prefix in the examples. */
export function acceptedForms(prefix: string): string {
  const up = prefix.toUpperCase();
  const low = up.toLowerCase();
  return `type a key like ${up}-42 (also ${low}-42, ${up} 42, ${low}42, or just 42), a UUID or its first 8+ hex digits, or words from a task`;
}

const PREFIX_RE = /^[A-Za-z][A-Za-z0-9]{1,9}$/;
const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** A key, leniently, as the server reads it (`SYN-42`, `syn-42`, `SYN 42`, `syn42`); or null. */
export function parseKey(input: string): { prefix: string; number: number; key: string } | null {
  const s = input.trim();
  let prefix: string;
  let digits: string;
  let sepAt = -1;
  for (let i = s.length - 1; i >= 0; i--) {
    if (/[-\s]/.test(s[i] ?? '')) {
      sepAt = i;
      break;
    }
  }
  if (sepAt >= 0) {
    prefix = s.slice(0, sepAt).replace(/[-\s]+$/, '');
    digits = s.slice(sepAt + 1);
  } else {
    // No separator: the prefix runs to the last letter, so `v2x5` is V2X-5 and `v2-5` needs one.
    let at = 0;
    for (let i = s.length - 1; i >= 0; i--) {
      if (/[A-Za-z]/.test(s[i] ?? '')) {
        at = i + 1;
        break;
      }
    }
    prefix = s.slice(0, at);
    digits = s.slice(at);
  }
  if (!/^[0-9]{1,18}$/.test(digits)) return null;
  const number = Number(digits);
  if (number === 0 || !Number.isSafeInteger(number)) return null;
  if (!PREFIX_RE.test(prefix)) return null;
  const p = prefix.toUpperCase();
  return { prefix: p, number, key: `${p}-${number}` };
}

/** A key, a UUID, a UUID prefix (8+ hex digits, a leading `~` allowed), or why none of them. */
export function parseJumpQuery(input: string, examplePrefix = 'DEV'): JumpQuery {
  const s = input.trim().replace(/^\{(.*)\}$/, '$1');
  if (s === '') return { kind: 'error', message: `Nothing to jump to: ${acceptedForms(examplePrefix)}.` };
  if (UUID_RE.test(s)) {
    const h = s.replace(/-/g, '').toLowerCase();
    const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    return { kind: 'uuid', uuid };
  }
  const key = parseKey(s);
  if (key) return { kind: 'key', ...key };
  const hex = s.replace(/^~/, '').replace(/-/g, '');
  if (/^[0-9a-f]+$/i.test(hex) && hex.length >= 8 && hex.length < 32) {
    return { kind: 'uuid-prefix', prefix: hex.toLowerCase() };
  }
  return { kind: 'error', message: `"${input.trim()}" is not a task: ${acceptedForms(examplePrefix)}.` };
}

const MAX_NUMBER = 9223372036854775807n; // callsign-core's MAX_NUMBER (i64::MAX)
const MAX_DEPTH = 8;

/**
 * An imported task's origin key as the server indexes it (callsign-core's `Origin::normal_key`):
 * a key in Callsign's grammar written as Callsign writes keys (`eng 42` and `ENG-042` are
 * `ENG-42`, `eng-4.1` is `ENG-4.1`), anything else trimmed and upper-cased (`#12`).
 */
export function normalOriginKey(text: string): string {
  const s = text.trim();
  const fallback = s.toUpperCase();
  // `TaskKey::parse`: split at the first `-` or space, else after the last letter.
  const sep = s.search(/[- ]/);
  let at = sep;
  if (sep < 0) {
    at = 0;
    for (let i = s.length - 1; i >= 0; i--) {
      if (/[A-Za-z]/.test(s[i] ?? '')) {
        at = i + 1;
        break;
      }
    }
  }
  const prefix = s.slice(0, at);
  const parts = s.slice(sep < 0 ? at : at + 1).split('.');
  if (!/^[A-Za-z][A-Za-z0-9]{1,9}$/.test(prefix) || parts.length > MAX_DEPTH) return fallback;
  const numbers: string[] = [];
  for (const part of parts) {
    if (!/^[0-9]+$/.test(part)) return fallback;
    const n = BigInt(part);
    if (n === 0n || n > MAX_NUMBER) return fallback;
    numbers.push(n.toString());
  }
  return `${prefix.toUpperCase()}-${numbers.join('.')}`;
}

/** The loaded task whose origin key is `key` (already normalised), if any. */
function byOriginKey(tasks: readonly LocalTask[], key: string): LocalTask | undefined {
  return tasks.find((t) => t.origin?.key != null && normalOriginKey(t.origin.key) === key);
}

export interface JumpContext {
  /** The project a bare number belongs to (null: a bare number is just text). */
  currentProject: string | null;
  /** Known project prefixes, upper case; a key-shaped input with another prefix is read as words. Empty: any. */
  knownPrefixes: readonly string[];
  examplePrefix: string;
}

export interface JumpPlan {
  /** The normalised key / UUID / UUID prefix Enter sends to `resolve_task` when no result is highlighted. */
  resolve: string | null;
  /** How a bare number was read (`DEV-42`), to show. */
  reading: string | null;
  /** Up to `limit` tasks: the one the input names (when loaded) first, then text matches. */
  results: LocalTask[];
  /** The result Enter opens: 0, or -1 when Enter asks the backend (`resolve`) or nothing matches. */
  highlight: number;
  /** The key typed, when it is an old key of the first result (the task moved since). */
  formerly: string | null;
  /**
   * The key typed, when it is the first result's key in the tracker it was imported from
   * (`origin.key`) and not its key here.
   */
  imported: string | null;
}

function atWordStart(h: string, w: string): boolean {
  for (let i = h.indexOf(w); i >= 0; i = h.indexOf(w, i + 1)) {
    if (i === 0 || !/[\p{L}\p{N}]/u.test(h[i - 1] ?? '')) return true;
  }
  return false;
}

/**
 * Tasks whose text holds every word, best first: every word at the start of a word ranks above
 * a match inside a word, pending above done; ties keep list order (newest first). Stops as soon
 * as `limit` tasks of the best kind are found.
 */
export function textMatches(
  tasks: readonly LocalTask[],
  words: readonly string[],
  limit: number,
  skip: ReadonlySet<string> = new Set(),
): LocalTask[] {
  if (words.length === 0 || limit <= 0) return [];
  const tiers: LocalTask[][] = [[], [], [], []];
  for (const t of tasks) {
    const h = haystack(t);
    if (!words.every((w) => h.includes(w)) || skip.has(t.uuid)) continue;
    const tier = (words.every((w) => atWordStart(h, w)) ? 0 : 2) + (t.status === 'pending' ? 0 : 1);
    const bucket = tiers[tier] as LocalTask[];
    if (bucket.length < limit) bucket.push(t);
    if (tier === 0 && bucket.length >= limit) break;
  }
  return tiers.flat().slice(0, limit);
}

/** What the jump box shows and what Enter does, as the user types. */
export function planJump(input: string, tasks: readonly LocalTask[], ctx: JumpContext, limit = 8): JumpPlan {
  const s = input.trim();
  const none: JumpPlan = { resolve: null, reading: null, results: [], highlight: -1, formerly: null, imported: null };
  if (s === '') return none;
  let resolve: string | null = null;
  let reading: string | null = null;
  let exact: LocalTask[] = [];
  let formerly: string | null = null;
  let imported: string | null = null;
  const bare = /^[0-9]{1,15}$/.test(s) ? Number(s) : null;
  const q = parseJumpQuery(s, ctx.examplePrefix);
  if (bare !== null && bare > 0 && ctx.currentProject !== null) {
    resolve = reading = `${ctx.currentProject}-${bare}`;
  } else if (q.kind === 'key' && (ctx.knownPrefixes.length === 0 || ctx.knownPrefixes.includes(q.prefix))) {
    resolve = q.key;
  } else if (q.kind === 'uuid') {
    resolve = q.uuid;
  } else if (q.kind === 'uuid-prefix') {
    resolve = q.prefix;
  }
  if (resolve !== null) {
    const r = resolve;
    if (q.kind === 'uuid') exact = tasks.filter((t) => t.uuid === r);
    else if (q.kind === 'uuid-prefix' && bare === null) {
      exact = tasks.filter((t) => t.uuid.replace(/-/g, '').startsWith(r)).slice(0, limit);
    } else {
      // A key names its task forever: the current key first, else a task that had it (it moved).
      let hit = tasks.find((t) => t.key === r);
      if (hit === undefined) {
        hit = tasks.find((t) => t.previous_keys?.includes(r));
        if (hit !== undefined) formerly = r;
      }
      exact = hit === undefined ? [] : [hit];
    }
  }
  // Not a key or UUID here (or none loaded has it): a key from the tracker a task came from.
  const origin = bare === null && exact.length === 0 && (q.kind === 'key' || /^#[0-9]+$/.test(s)) ? normalOriginKey(s) : null;
  if (origin !== null) {
    const hit = byOriginKey(tasks, origin);
    if (hit !== undefined) {
      exact = [hit];
      resolve = origin;
      imported = origin;
    }
  }
  const words = s.toLowerCase().split(/\s+/).filter(Boolean);
  const more = textMatches(tasks, words, limit - exact.length, new Set(exact.map((t) => t.uuid)));
  const results = [...exact, ...more];
  // An origin key no loaded task has: Enter asks the backend (which also looks up origin keys),
  // unless the words found something (an unknown prefix may just be words).
  if (resolve === null && origin !== null && (q.kind !== 'key' || results.length === 0)) resolve = origin;
  // Enter opens what the input names; when that is not in the loaded list the backend is asked.
  const highlight = exact.length > 0 ? 0 : resolve !== null ? -1 : results.length > 0 ? 0 : -1;
  return { resolve, reading, results, highlight, formerly, imported };
}
