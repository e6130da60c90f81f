// Pure view logic: no DOM, no Tauri. Everything here is unit-tested in tests/view.test.ts.
import type { ListFilter, LocalTask, StatusFilter, SyncStatus } from './types';

// ---------------------------------------------------------------------------------------------
// Provisional marker

/** `~` and the first 8 hex digits of the UUID: how a task without a key is named (as in the CLI). */
export function shortId(task: Pick<LocalTask, 'uuid'>): string {
  return '~' + task.uuid.replace(/-/g, '').slice(0, 8);
}

function secondsUntil(iso: string | null | undefined, now: number): number | null {
  if (!iso) return null;
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return null;
  const s = Math.ceil((at - now) / 1000);
  return s > 0 ? s : null;
}

/**
 * Why a task without a key waits, in a few words for the marker; `null` when the task has its
 * key and nothing failed (the key is shown instead).
 *
 * - failed (the server refused it): `failed: <server's message>`
 * - no server configured: `local only`
 * - status not known yet: `waiting`
 * - a request for it is on the wire: `sending`
 * - backing off (the task's own retry time, else the loop's next attempt): `retrying in N s`
 *   (`offline, retrying in N s` when offline)
 * - offline: `offline`
 * - otherwise (queued, the engine sends it now): `sending`
 */
export function markerText(task: LocalTask, status: SyncStatus | null, now: number): string | null {
  if (task.sync_state === 'failed' || task.waiting?.state === 'failed') {
    return `failed: ${task.last_error ?? 'refused by the server'}`;
  }
  if (task.key !== null) return null;
  if (status === null) return 'waiting';
  if (!status.configured) return 'local only';
  if (task.waiting?.state === 'in_progress') return 'sending';
  // The task's own retry time, else the sync loop's next attempt (which sends every waiting task).
  const wait = secondsUntil(task.waiting?.next_attempt_at ?? status.next_attempt_at, now);
  if (wait !== null) return status.online ? `retrying in ${wait} s` : `offline, retrying in ${wait} s`;
  if (!status.online) return 'offline';
  return 'sending';
}

/** The marker's colour class: `failed`, `local`, `offline` or `sending`. */
export function markerTone(text: string): 'failed' | 'local' | 'offline' | 'sending' {
  if (text.startsWith('failed')) return 'failed';
  if (text === 'local only') return 'local';
  if (text.startsWith('offline')) return 'offline';
  return 'sending';
}

/** The sync indicator's one-line summary. */
export function statusText(status: SyncStatus | null): string {
  if (status === null) return 'starting…';
  if (!status.configured) return 'local only — no server configured';
  const parts = [status.online ? 'online' : 'offline'];
  if (status.pending > 0) parts.push(`${status.pending} pending`);
  if (status.failed > 0) parts.push(`${status.failed} failed`);
  if (status.pending === 0 && status.failed === 0) parts.push('all synced');
  return parts.join(' · ');
}

// ---------------------------------------------------------------------------------------------
// Jump-to-key

export type JumpQuery =
  | { kind: 'key'; prefix: string; number: number; key: string }
  | { kind: 'uuid'; uuid: string }
  | { kind: 'uuid-prefix'; prefix: string }
  | { kind: 'error'; message: string };

export const ACCEPTED_FORMS =
  'use a key like SYN-42 (also syn-42, SYN 42, syn42), a UUID, or the first 8 or more hex digits of one';

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

/** What the jump box holds: a key, a UUID, a UUID prefix (8+ hex digits), or why none of them. */
export function parseJumpQuery(input: string): JumpQuery {
  const s = input.trim().replace(/^\{(.*)\}$/, '$1');
  if (s === '') return { kind: 'error', message: `Type a task to jump to: ${ACCEPTED_FORMS}.` };
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
  return { kind: 'error', message: `"${input.trim()}" is not a task: ${ACCEPTED_FORMS}.` };
}

/** The text sent to `resolve_task` for a parsed query (normalised), or null for an error. */
export function jumpQueryText(q: JumpQuery): string | null {
  switch (q.kind) {
    case 'key':
      return q.key;
    case 'uuid':
      return q.uuid;
    case 'uuid-prefix':
      return q.prefix;
    case 'error':
      return null;
  }
}

// ---------------------------------------------------------------------------------------------
// The list: events, order, filter

/**
 * True when `incoming` is an older view of `current` (same uuid) that must not replace it: it
 * has no key while `current` has one (a key, once given, is forever). This happens when a
 * command's answer and the event that numbered the task arrive out of order. Timestamps are
 * not compared: device and server clocks differ, and the server's version wins.
 */
export function isStale(current: LocalTask, incoming: LocalTask): boolean {
  return current.key !== null && incoming.key === null;
}

/**
 * Applies a `task-changed` event: a known task is replaced at the same index (so its row stays
 * where it is when its key arrives); a new one goes on top. A stale copy (see `isStale`) is
 * ignored and the same array is returned. Otherwise returns a new array; `list` is kept.
 */
export function applyTaskEvent(list: readonly LocalTask[], task: LocalTask): LocalTask[] {
  const at = list.findIndex((t) => t.uuid === task.uuid);
  if (at < 0) return [task, ...list];
  const current = list[at] as LocalTask;
  if (isStale(current, task)) return list as LocalTask[];
  const next = list.slice();
  next[at] = task;
  return next;
}

/** Newest first by creation time; ties keep their given order (the sort is stable). */
export function orderTasks(list: readonly LocalTask[]): LocalTask[] {
  const ms = new Map<LocalTask, number>();
  for (const t of list) {
    const v = Date.parse(t.created_at);
    ms.set(t, Number.isNaN(v) ? 0 : v);
  }
  return list.slice().sort((a, b) => (ms.get(b) ?? 0) - (ms.get(a) ?? 0));
}

const haystacks = new WeakMap<LocalTask, string>();

/** The lower-cased text a filter matches against: description, notes, key, short id, tags. */
export function haystack(t: LocalTask): string {
  let h = haystacks.get(t);
  if (h === undefined) {
    h = `${t.description}\n${t.notes}\n${t.key ?? ''}\n${shortId(t)}\n${t.tags.join(' ')}`.toLowerCase();
    haystacks.set(t, h);
  }
  return h;
}

/**
 * Fills the filter's text cache in chunks between frames, so the first keystroke over a large
 * list does not pay for lower-casing every task. Returns a function that stops it.
 */
export function warmHaystacks(list: readonly LocalTask[], chunk = 5000): () => void {
  let i = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const step = () => {
    const end = Math.min(list.length, i + chunk);
    for (; i < end; i++) haystack(list[i] as LocalTask);
    timer = i < list.length ? setTimeout(step, 0) : null;
  };
  timer = setTimeout(step, 0);
  return () => {
    if (timer !== null) clearTimeout(timer);
  };
}

function statusMatches(t: LocalTask, s: StatusFilter): boolean {
  return s === 'all' || t.status === s;
}

/**
 * Client-side filter over the loaded list (order kept). Text matches description, notes, key,
 * the provisional short id and tags, ignoring case; every word must match (`fix login`).
 * Status defaults to `pending`.
 */
export function filterTasks(list: readonly LocalTask[], filter: ListFilter): LocalTask[] {
  const status = filter.status ?? 'pending';
  const project = filter.project?.trim().toUpperCase() || null;
  const words = (filter.text ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const out: LocalTask[] = [];
  for (const t of list) {
    if (!statusMatches(t, status)) continue;
    if (project !== null && t.project !== project) continue;
    if (words.length > 0) {
      const h = haystack(t);
      let ok = true;
      for (const w of words) {
        if (!h.includes(w)) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
    }
    out.push(t);
  }
  return out;
}

/**
 * A filter that remembers its last answer: when the text only grew (another keystroke) and
 * nothing else changed, it narrows the previous result instead of scanning the whole list.
 */
export function createFilter(): (list: readonly LocalTask[], filter: ListFilter) => LocalTask[] {
  let lastList: readonly LocalTask[] | null = null;
  let lastFilter: ListFilter = {};
  let lastOut: LocalTask[] = [];
  return (list, filter) => {
    const text = (filter.text ?? '').toLowerCase();
    const prevText = (lastFilter.text ?? '').toLowerCase();
    const narrowing =
      list === lastList &&
      (filter.status ?? 'pending') === (lastFilter.status ?? 'pending') &&
      (filter.project ?? '') === (lastFilter.project ?? '') &&
      // every old word is inside a new word, so the new answer is a subset of the old one
      text.startsWith(prevText);
    const out = narrowing ? filterTasks(lastOut, filter) : filterTasks(list, filter);
    lastList = list;
    lastFilter = { ...filter };
    lastOut = out;
    return out;
  };
}

// ---------------------------------------------------------------------------------------------
// Windowing (fixed row height)

export interface ListWindow {
  /** First row index rendered. */
  start: number;
  /** One past the last row index rendered. */
  end: number;
  /** Translate of the first rendered row, px. */
  offsetY: number;
  /** Height of the whole scroll content, px. */
  totalHeight: number;
}

export function computeWindow(
  scrollTop: number,
  viewportHeight: number,
  rowHeight: number,
  count: number,
  overscan = 8,
): ListWindow {
  const totalHeight = count * rowHeight;
  const top = Math.max(0, Math.min(scrollTop, Math.max(0, totalHeight - viewportHeight)));
  const first = Math.floor(top / rowHeight);
  const visible = Math.ceil(viewportHeight / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, first + visible + overscan);
  return { start, end, offsetY: start * rowHeight, totalHeight };
}

/** The scrollTop that brings row `index` fully into view, or `scrollTop` when it already is. */
export function scrollToRow(
  index: number,
  scrollTop: number,
  viewportHeight: number,
  rowHeight: number,
): number {
  const top = index * rowHeight;
  if (top < scrollTop) return top;
  if (top + rowHeight > scrollTop + viewportHeight) return top + rowHeight - viewportHeight;
  return scrollTop;
}

// ---------------------------------------------------------------------------------------------
// Quick capture

export interface ParsedCapture {
  description: string;
  project?: string;
  tags: string[];
}

/**
 * `Fix login #SYN +bug +urgent` → description `Fix login`, project `SYN`, tags `bug`, `urgent`.
 * `#PFX` counts only when it names a known project (any valid prefix when none are known);
 * otherwise the word stays in the description. The last `#PFX` wins.
 */
export function parseCapture(input: string, knownPrefixes: readonly string[]): ParsedCapture {
  const known = new Set(knownPrefixes.map((p) => p.toUpperCase()));
  const words: string[] = [];
  const tags: string[] = [];
  let project: string | undefined;
  for (const w of input.trim().split(/\s+/).filter(Boolean)) {
    if (w.length > 1 && w.startsWith('#') && PREFIX_RE.test(w.slice(1))) {
      const p = w.slice(1).toUpperCase();
      if (known.size === 0 || known.has(p)) {
        project = p;
        continue;
      }
    }
    if (w.length > 1 && w.startsWith('+') && /^[\p{L}\p{N}_.:-]+$/u.test(w.slice(1))) {
      if (!tags.includes(w.slice(1))) tags.push(w.slice(1));
      continue;
    }
    words.push(w);
  }
  const out: ParsedCapture = { description: words.join(' '), tags };
  if (project !== undefined) out.project = project;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Small formatting helpers

export function relativeTime(iso: string | null, now: number): string {
  if (!iso) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const s = Math.round((now - t) / 1000);
  if (s < 5) return 'just now'; // (also a few seconds ahead: clocks differ)
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString();
}
