// Pure view logic: no DOM, no Tauri. Everything here is unit-tested in tests/view.test.ts.
import { sortByKey } from './sort';
import type { CreateInput, LocalTask, ViewStatus } from './types';

/** `~` and the first 8 hex digits of the UUID: how a task without a key is named (as in the CLI). */
export function shortId(task: Pick<LocalTask, 'uuid'>): string {
  return '~' + task.uuid.replace(/-/g, '').slice(0, 8);
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

/** When the task was captured, in ms (0 when `created_at` does not parse): capture order. */
export function createdMs(t: Pick<LocalTask, 'created_at'>): number {
  const v = Date.parse(t.created_at);
  return Number.isNaN(v) ? 0 : v;
}

/** Newest first by creation time; ties keep their given order (the sort is stable). */
export function orderTasks(list: readonly LocalTask[]): LocalTask[] {
  return sortByKey(list, (t) => -createdMs(t));
}

const haystacks = new WeakMap<LocalTask, string>();

/** The lower-cased text a filter matches against: description, notes, key (and old keys), short id, tags. */
export function haystack(t: LocalTask): string {
  let h = haystacks.get(t);
  if (h === undefined) {
    const keys = t.previous_keys?.length ? `${t.key ?? ''} ${t.previous_keys.join(' ')}` : (t.key ?? '');
    h = `${t.description}\n${t.notes}\n${keys}\n${shortId(t)}\n${t.tags.join(' ')}`.toLowerCase();
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

// ---------------------------------------------------------------------------------------------
// The capture syntax: one tokenizer for quick capture and the filter box

const PREFIX_RE = /^[A-Za-z][A-Za-z0-9]{1,9}$/;
const TAG_RE = /^[\p{L}\p{N}_.:-]+$/u;

/** A word of capture / filter text. `value`: the prefix upper-cased, the tag as typed. */
export interface Token {
  kind: 'project' | 'tag' | 'not-tag' | 'word';
  value: string;
  /** The word as typed. */
  raw: string;
}

/** `#PFX` (a valid prefix) is a project, `+tag` a tag, `-tag` a tag's absence; the rest are words. */
export function tokenize(input: string): Token[] {
  const out: Token[] = [];
  for (const raw of input.trim().split(/\s+/)) {
    if (raw === '') continue;
    const rest = raw.slice(1);
    if (raw.startsWith('#') && PREFIX_RE.test(rest)) out.push({ kind: 'project', value: rest.toUpperCase(), raw });
    else if (raw.startsWith('+') && TAG_RE.test(rest)) out.push({ kind: 'tag', value: rest, raw });
    else if (raw.startsWith('-') && TAG_RE.test(rest)) out.push({ kind: 'not-tag', value: rest, raw });
    else out.push({ kind: 'word', value: raw, raw });
  }
  return out;
}

/** The filter box read: lower-cased words and tags, upper-cased projects. */
export interface FilterQuery {
  words: string[];
  /** Each must be one of the task's tags (any case). */
  tags: string[];
  /** None may be one of the task's tags. */
  notTags: string[];
  /** The task's project must be one of them (when any). */
  projects: string[];
}

/** `fix login +bug -wontfix #DEV`: words, `+tag` (tag present), `-tag` (absent), `#PFX` (project). */
export function parseFilterQuery(text: string): FilterQuery {
  const q: FilterQuery = { words: [], tags: [], notTags: [], projects: [] };
  for (const t of tokenize(text)) {
    if (t.kind === 'project') q.projects.push(t.value);
    else if (t.kind === 'tag') q.tags.push(t.value.toLowerCase());
    else if (t.kind === 'not-tag') q.notTags.push(t.value.toLowerCase());
    else q.words.push(t.value.toLowerCase());
  }
  return q;
}

// ---------------------------------------------------------------------------------------------
// The filter

export interface ViewFilter {
  text?: string;
  /**
   * Default `pending`; `failed` is every task the server refused, whatever its status; `next`
   * keeps the pending tasks of a list `nextTasks` made.
   */
  status?: ViewStatus;
}

function statusMatches(t: LocalTask, s: ViewStatus): boolean {
  if (s === 'failed') return t.failure !== null;
  // Next's list comes from `nextTasks` (pending, not blocked, its own order); the words narrow it.
  if (s === 'next') return t.status === 'pending';
  return s === 'all' || t.status === s;
}

function hasTag(t: LocalTask, tag: string): boolean {
  for (const x of t.tags) if (x.toLowerCase() === tag) return true;
  return false;
}

/**
 * Client-side filter over the loaded list (order kept). Words match description, notes, key,
 * the provisional short id and tags, ignoring case; every word must match (`fix login`).
 * `+tag`, `-tag` and `#PFX` as in `parseFilterQuery`. Status defaults to `pending`.
 */
export function filterTasks(list: readonly LocalTask[], filter: ViewFilter): LocalTask[] {
  const status = filter.status ?? 'pending';
  const q = parseFilterQuery(filter.text ?? '');
  const out: LocalTask[] = [];
  outer: for (const t of list) {
    if (!statusMatches(t, status)) continue;
    if (q.projects.length > 0 && !q.projects.includes(t.project.toUpperCase())) continue;
    for (const tag of q.tags) if (!hasTag(t, tag)) continue outer;
    for (const tag of q.notTags) if (hasTag(t, tag)) continue outer;
    if (q.words.length > 0) {
      const h = haystack(t);
      for (const w of q.words) if (!h.includes(w)) continue outer;
    }
    out.push(t);
  }
  return out;
}

/**
 * A filter that remembers its last answer: when only the words grew (another keystroke) and
 * nothing else changed, it narrows the previous result instead of scanning the whole list.
 * `+tag`, `-tag` and `#PFX` are exact matches, so any change to them scans afresh.
 */
export function createFilter(): (list: readonly LocalTask[], filter: ViewFilter) => LocalTask[] {
  let lastList: readonly LocalTask[] | null = null;
  let last: { status: ViewStatus; exact: string; words: string } | null = null;
  let lastOut: LocalTask[] = [];
  return (list, filter) => {
    const q = parseFilterQuery(filter.text ?? '');
    const now = {
      status: filter.status ?? 'pending',
      exact: [q.tags.join(' '), q.notTags.join(' '), q.projects.join(' ')].join('|'),
      words: q.words.join(' '),
    };
    const narrowing =
      list === lastList &&
      last !== null &&
      now.status === last.status &&
      now.exact === last.exact &&
      // every old word is inside a new word, so the new answer is a subset of the old one
      now.words.startsWith(last.words);
    const out = filterTasks(narrowing ? lastOut : list, filter);
    lastList = list;
    last = now;
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
  /** The `due:` value as typed (`tomorrow`, `fri`, `2026-12-01`, `3d`): the backend parses it. */
  due?: string;
  /** The `pri:` / `priority:` value as typed (`H`, `m`, `low`): the backend checks it. */
  priority?: string;
}

/** What a capture with nothing but fields gets (quick capture, the capture window). */
export const EMPTY_CAPTURE = 'A task needs a description (#project, +tags, due: and pri: alone are not one).';

/** `due:<when>`, `pri:<H|M|L>`, `priority:<…>` (any case), with a value after the colon. */
const FIELD_RE = /^(due|pri|priority):(.+)$/i;

/**
 * `Fix login #SYN +bug +urgent due:fri pri:H` → description `Fix login`, project `SYN`, tags
 * `bug`, `urgent`, due `fri`, priority `H`. `#PFX` counts only when it names a known project
 * (any valid prefix when none are known); otherwise the word stays in the description. The
 * values of `due:` and `pri:` are not checked here: the backend reads them (Taskwarrior's forms)
 * and refuses what it cannot. The last `#PFX`, `due:` and `pri:` win.
 */
export function parseCapture(input: string, knownPrefixes: readonly string[]): ParsedCapture {
  const known = new Set(knownPrefixes.map((p) => p.toUpperCase()));
  const words: string[] = [];
  const tags: string[] = [];
  let project: string | undefined;
  let due: string | undefined;
  let priority: string | undefined;
  for (const t of tokenize(input)) {
    const field = t.kind === 'word' ? FIELD_RE.exec(t.raw) : null;
    if (t.kind === 'project' && (known.size === 0 || known.has(t.value))) project = t.value;
    else if (t.kind === 'tag') {
      if (!tags.includes(t.value)) tags.push(t.value);
    } else if (field) {
      if ((field[1] as string).toLowerCase() === 'due') due = field[2];
      else priority = field[2];
    } else words.push(t.raw);
  }
  const out: ParsedCapture = { description: words.join(' '), tags };
  if (project !== undefined) out.project = project;
  if (due !== undefined) out.due = due;
  if (priority !== undefined) out.priority = priority;
  return out;
}

/**
 * What a capture asks `create_task` for, but its project (quick capture picks one, a subtask
 * takes its parent's): the description, and the tags, due date and priority when typed. The
 * due date and priority go as typed: the backend reads them and refuses what it cannot.
 */
export function captureFields(p: ParsedCapture): Omit<CreateInput, 'project' | 'parent'> {
  return {
    description: p.description,
    ...(p.tags.length ? { tags: p.tags } : {}),
    ...(p.due !== undefined ? { due: p.due } : {}),
    ...(p.priority !== undefined ? { priority: p.priority } : {}),
  };
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
