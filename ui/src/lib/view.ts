// Pure view logic: no DOM, no Tauri. Everything here is unit-tested in tests/view.test.ts.
import { sortByKey } from './sort';
import { mentionedMember } from './team';
import type { CreateInput, Filter, LocalTask, ViewStatus } from './types';

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
// The capture syntax (the filter's is callsign-core's; the preview's stand-in uses this too)

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

// ---------------------------------------------------------------------------------------------
// The filter: callsign-core parses the text (command `parse_filter`, the CLI's grammar); this
// applies the parsed filter to the loaded list with the same rules as `Filter::matches`. The
// fixture crates/callsign-core/src/filter/cases.json keeps the two in step (tests/filter.test.ts).

/** A filter that asks nothing (the empty text). */
export const EMPTY_FILTER: Filter = {
  words: [],
  tags: [],
  not_tags: [],
  projects: [],
  statuses: [],
  sync: [],
  due: { has: null, from: null, after: null, before: null },
  priorities: [],
  keys: [],
  commits: { has: null, hashes: [] },
};

export interface ViewFilter {
  /** The parsed filter text (none: every task). */
  filter?: Filter;
  /**
   * The status menu: default `pending`; `failed` is every task the server refused, whatever
   * its status; `next` keeps the pending tasks of a list `nextTasks` made. A `status:` in the
   * filter text replaces it.
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

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

/** `PFX-1.2.3` → prefix and numbers (keys come canonical from the backend). */
function splitKey(key: string): { prefix: string; numbers: number[] } | null {
  const at = key.indexOf('-');
  if (at < 0) return null;
  return { prefix: key.slice(0, at).toUpperCase(), numbers: key.slice(at + 1).split('.').map(Number) };
}

/** A filter made ready for many tasks (dates read once). */
function compile(f: Filter, status: ViewStatus): (t: LocalTask) => boolean {
  const from = ms(f.due.from);
  const after = ms(f.due.after);
  const before = ms(f.due.before);
  const bounded = from !== null || after !== null || before !== null;
  // Dates are read only when the filter asks about them: a keystroke of words pays for words.
  const dueAsked = bounded || f.due.has !== null;
  const ownStatus = f.statuses.length > 0 || f.sync.length > 0;
  const commitsHas = f.commits?.has ?? null;
  const hashes = f.commits?.hashes ?? [];
  const inRange = (key: string) => {
    const k = splitKey(key);
    if (k === null) return false;
    const n = k.numbers[k.numbers.length - 1] as number;
    const parents = k.numbers.slice(0, -1).join('.');
    return f.keys.some((r) => r.prefix === k.prefix && r.parents.join('.') === parents && n >= r.from && n <= r.to);
  };
  return (t) => {
    if (ownStatus) {
      if (f.statuses.length > 0 && !f.statuses.includes(t.status)) return false;
      for (const s of f.sync) if (s === 'failed' ? t.failure === null : t.key !== null) return false;
    } else if (!statusMatches(t, status)) return false;
    if (f.projects.length > 0 && !f.projects.includes(t.project.toUpperCase())) return false;
    for (const tag of f.tags) if (!hasTag(t, tag)) return false;
    for (const tag of f.not_tags) if (hasTag(t, tag)) return false;
    if (f.priorities.length > 0 && !f.priorities.includes(t.priority)) return false;
    if (dueAsked) {
      if (t.due == null) {
        if (f.due.has === true || bounded) return false;
      } else {
        const d = Date.parse(t.due);
        if (f.due.has === false) return false;
        if ((from !== null && d < from) || (after !== null && d <= after) || (before !== null && d >= before)) return false;
      }
    }
    if (commitsHas !== null && commitsHas === ((t.commits ?? []).length === 0)) return false;
    if (hashes.length > 0 && !(t.commits ?? []).some((c) => hashes.some((h) => c.hash.startsWith(h))))
      return false;
    if (f.keys.length > 0 && !((t.key !== null && inRange(t.key)) || (t.previous_keys ?? []).some(inRange))) return false;
    if (f.words.length > 0) {
      const h = haystack(t);
      for (const w of f.words) if (!h.includes(w)) return false;
    }
    return true;
  };
}

/** Whether `t` passes the filter, with the status menu at `status` (default `pending`). */
export function matchesFilter(t: LocalTask, f: Filter, status: ViewStatus = 'pending'): boolean {
  return compile(f, status)(t);
}

/** The filtered list, order kept. Status defaults to `pending`. */
export function filterTasks(list: readonly LocalTask[], filter: ViewFilter): LocalTask[] {
  const keep = compile(filter.filter ?? EMPTY_FILTER, filter.status ?? 'pending');
  return list.filter(keep);
}

/**
 * A filter that remembers its last answer: when only the words grew (another keystroke) and
 * nothing else changed, it narrows the previous result instead of scanning the whole list.
 * Every other term is exact, so any change to one scans afresh.
 */
export function createFilter(): (list: readonly LocalTask[], filter: ViewFilter) => LocalTask[] {
  let lastList: readonly LocalTask[] | null = null;
  let last: { status: ViewStatus; exact: string; words: string } | null = null;
  let lastOut: LocalTask[] = [];
  return (list, filter) => {
    const f = filter.filter ?? EMPTY_FILTER;
    const now = {
      status: filter.status ?? 'pending',
      exact: JSON.stringify({ ...f, words: [] }),
      words: f.words.join(' '),
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
  /** The member `@name` assigns it to (lower-cased). */
  assignee?: string;
}

/** What a capture with nothing but fields gets (quick capture, the capture window). */
export const EMPTY_CAPTURE = 'A task needs a description (#project, +tags, @member, due: and pri: alone are not one).';

/** `due:<when>`, `pri:<H|M|L>`, `priority:<…>` (any case), with a value after the colon. */
const FIELD_RE = /^(due|pri|priority):(.+)$/i;

/**
 * `Fix login #SYN +bug +urgent due:fri pri:H` → description `Fix login`, project `SYN`, tags
 * `bug`, `urgent`, due `fri`, priority `H`. `#PFX` counts only when it names a known project
 * (any valid prefix when none are known); otherwise the word stays in the description. `@bob`
 * assigns the task the same way: to a member of the team as last listed (`knownMembers`; any
 * handle while it is null, no list known). The values of `due:` and `pri:` are not checked
 * here: the backend reads them (Taskwarrior's forms) and refuses what it cannot. The last
 * `#PFX`, `@name`, `due:` and `pri:` win.
 */
export function parseCapture(input: string, knownPrefixes: readonly string[], knownMembers: readonly string[] | null = null): ParsedCapture {
  const known = new Set(knownPrefixes.map((p) => p.toUpperCase()));
  const words: string[] = [];
  const tags: string[] = [];
  let project: string | undefined;
  let due: string | undefined;
  let priority: string | undefined;
  let assignee: string | undefined;
  for (const t of tokenize(input)) {
    const field = t.kind === 'word' ? FIELD_RE.exec(t.raw) : null;
    const member = t.kind === 'word' ? mentionedMember(t.raw, knownMembers) : null;
    if (t.kind === 'project' && (known.size === 0 || known.has(t.value))) project = t.value;
    else if (member !== null) assignee = member;
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
  if (assignee !== undefined) out.assignee = assignee;
  return out;
}

/**
 * What a capture asks `create_task` for, but its project (quick capture picks one, a subtask
 * takes its parent's): the description, and the tags, due date, priority and assignee when typed. The
 * due date and priority go as typed: the backend reads them and refuses what it cannot.
 */
export function captureFields(p: ParsedCapture): Omit<CreateInput, 'project' | 'parent'> {
  return {
    description: p.description,
    ...(p.tags.length ? { tags: p.tags } : {}),
    ...(p.due !== undefined ? { due: p.due } : {}),
    ...(p.priority !== undefined ? { priority: p.priority } : {}),
    ...(p.assignee !== undefined ? { assignee: p.assignee } : {}),
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
