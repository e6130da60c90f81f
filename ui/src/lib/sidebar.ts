// The projects sidebar: its entries and their counts (from the loaded list, in one pass), the
// list's scope, and what selecting an entry does to the view. Pure: tested in
// tests/sidebar.test.ts.
//
// The scope narrows the list before the filter text and the status select, which work as they
// do without it. Failed is not a scope: it is the status select's Failed (every task with a
// `failure`), shown as selected while nothing else is scoped.
import { INBOX, serverProjects } from './projects';
import { countText } from './status';
import type { Filter, LocalTask, Project, ViewStatus } from './types';
import { matchesFilter } from './view';

/**
 * What the list is scoped to: everything, the tasks assigned to this device's member, one
 * server project (its current tasks), or the inbox.
 */
export type Scope = { kind: 'all' } | { kind: 'mine' } | { kind: 'project'; prefix: string } | { kind: 'inbox' };

export const ALL: Scope = { kind: 'all' };
export const MINE: Scope = { kind: 'mine' };
export const INBOX_SCOPE: Scope = { kind: 'inbox' };

/**
 * An entry of the sidebar: `all`, `mine`, `standup`, `inbox`, `failed`, or `project:DEV`. The
 * standup is a view of its own in the list's place, not a scope of the list.
 */
export type EntryId = 'all' | 'mine' | 'standup' | 'inbox' | 'failed' | `project:${string}`;

/** The entries that scope the list (all but the standup). */
export type ScopeEntryId = Exclude<EntryId, 'standup'>;

/** What "Assigned to me" says with no member known, instead of an empty list. */
export const NO_MEMBER =
  "This device doesn't know who you are yet: log in or join a team (Settings) to see the tasks assigned to you.";

export interface SidebarCounts {
  /** Pending tasks, the inbox's included. */
  all: number;
  /** Pending tasks assigned to this device's member (0 when none is known). */
  mine: number;
  /** Pending tasks per project (its prefix), the inbox's left out. */
  projects: Map<string, number>;
  /** Pending tasks in the inbox. */
  inbox: number;
  /** Tasks in the inbox, any status (the entry shows while there is one). */
  inboxTasks: number;
  /** Tasks with a `failure`, any status (as the Failed status counts them). */
  failed: number;
}

/** The counts, in one pass over the list (50,000 tasks: a few ms). `me`: this device's member. */
export function sidebarCounts(tasks: readonly LocalTask[], me: string | null = null): SidebarCounts {
  const projects = new Map<string, number>();
  let all = 0;
  let mine = 0;
  let inbox = 0;
  let inboxTasks = 0;
  let failed = 0;
  for (const t of tasks) {
    if (t.failure !== null) failed++;
    if (t.local) inboxTasks++;
    if (t.status !== 'pending') continue;
    all++;
    if (me !== null && t.assignee === me) mine++;
    if (t.local) inbox++;
    else {
      const n = projects.get(t.project);
      projects.set(t.project, n === undefined ? 1 : n + 1);
    }
  }
  return { all, mine, projects, inbox, inboxTasks, failed };
}

export interface SidebarEntry {
  id: EntryId;
  /** What the entry says: `All`, `Assigned to me`, `Standup`, the project's name, `Inbox`, `Failed`. */
  label: string;
  /** A project's prefix (shown before its name). */
  prefix?: string;
  /** Its tasks (null: the standup, which is no list to count). */
  count: number | null;
  /** Appears as the `sidebar-…` testid: `all`, `mine`, `standup`, `project-DEV`, `inbox`, `failed`. */
  testid: string;
}

/**
 * All, Assigned to me, Standup, every server project (in the server's order), the inbox (always
 * with no server, else while it holds a task), Failed.
 */
export function sidebarEntries(projects: readonly Project[], counts: SidebarCounts, configured: boolean): SidebarEntry[] {
  const out: SidebarEntry[] = [
    { id: 'all', label: 'All', count: counts.all, testid: 'all' },
    { id: 'mine', label: 'Assigned to me', count: counts.mine, testid: 'mine' },
    { id: 'standup', label: 'Standup', count: null, testid: 'standup' },
  ];
  for (const p of serverProjects(projects)) {
    out.push({ id: `project:${p.prefix}`, label: p.name || p.prefix, prefix: p.prefix, count: counts.projects.get(p.prefix) ?? 0, testid: `project-${p.prefix}` });
  }
  if (!configured || counts.inboxTasks > 0) out.push({ id: 'inbox', label: 'Inbox', count: counts.inbox, testid: 'inbox' });
  out.push({ id: 'failed', label: 'Failed', count: counts.failed, testid: 'failed' });
  return out;
}

/** The entry shown as selected for this scope and status. */
export function selectedEntry(scope: Scope, status: ViewStatus): EntryId {
  if (scope.kind === 'project') return `project:${scope.prefix}`;
  if (scope.kind === 'inbox') return 'inbox';
  if (scope.kind === 'mine') return 'mine';
  return status === 'failed' ? 'failed' : 'all';
}

/**
 * Selecting an entry: its scope, and the status select. Failed sets the status to Failed; any
 * other entry leaves the status as it is, but Failed, which goes back to Pending (an entry's
 * count is of pending tasks, and All under Failed would still be Failed).
 */
export function selectEntry(id: ScopeEntryId, status: ViewStatus): { scope: Scope; status: ViewStatus } {
  if (id === 'failed') return { scope: ALL, status: 'failed' };
  const next = status === 'failed' ? 'pending' : status;
  if (id === 'all') return { scope: ALL, status: next };
  if (id === 'inbox') return { scope: INBOX_SCOPE, status: next };
  if (id === 'mine') return { scope: MINE, status: next };
  return { scope: { kind: 'project', prefix: id.slice('project:'.length) }, status: next };
}

/** Whether `t` is in the scope; `me` is this device's member (with none, nothing is mine). */
export function inScope(t: LocalTask, scope: Scope, me: string | null = null): boolean {
  if (scope.kind === 'all') return true;
  if (scope.kind === 'mine') return me !== null && t.assignee === me;
  if (scope.kind === 'inbox') return t.local;
  return !t.local && t.project === scope.prefix;
}

/** The list within the scope, order kept; the list itself when nothing is scoped. */
export function scopeTasks(list: readonly LocalTask[], scope: Scope, me: string | null = null): readonly LocalTask[] {
  if (scope.kind === 'all') return list;
  return list.filter((t) => inScope(t, scope, me));
}

/** The scope as the header names it: `DEV`, `Inbox`, `Assigned to me`; null when nothing is scoped. */
export function scopeLabel(scope: Scope): string | null {
  if (scope.kind === 'project') return scope.prefix;
  if (scope.kind === 'mine') return 'Assigned to me';
  if (scope.kind === 'inbox') return 'Inbox';
  return null;
}

/**
 * The list's count with its scope: `DEV · 12 of 340` (340 in DEV), `Inbox · 3`, and while pages
 * load `DEV · 12 of 340 — loading…`; unscoped it is `countText`.
 */
export function scopedCountText(scope: Scope, shown: number, inScopeCount: number, loaded: number, total: number | null): string {
  const label = scopeLabel(scope);
  if (label === null) return countText(shown, loaded, total);
  const loading = total !== null && loaded < total ? ' — loading…' : '';
  return `${label} · ${countText(shown, inScopeCount, null)}${loading}`;
}

/** What the list shows: the scope, the filter text, the status select. */
export interface ListView {
  scope: Scope;
  text: string;
  status: ViewStatus;
}

/**
 * The view to open `t` in (a notification's task): the same view when `t` is in it, else the
 * view with whatever hides it cleared: the scope when `t` is out of it, the text when it does
 * not match, the status when `t`'s is another (Failed for a failed task).
 */
export function viewShowing(t: LocalTask, view: ListView, visible: boolean, filter: Filter, me: string | null = null): ListView {
  if (visible) return view;
  const scope = inScope(t, view.scope, me) ? view.scope : ALL;
  const text = view.text !== '' && !matchesFilter(t, filter, 'all') ? '' : view.text;
  // Next (never a task's own status) leaves blocked tasks out: Pending shows them.
  const fits = view.status === 'all' || (view.status === 'failed' ? t.failure !== null : view.status === t.status);
  const status = fits ? view.status : t.failure !== null ? 'failed' : t.status;
  return { scope, text, status };
}

/**
 * Where the capture bar's picker points: the scoped project (a task captured while looking at
 * OPS goes to OPS, as in Linear or Things), the inbox while the inbox is shown, else the
 * default project (the inbox when there is none). The user can still pick another.
 */
export function captureTarget(scope: Scope, defaultProject: string | null): string {
  if (scope.kind === 'project') return scope.prefix;
  if (scope.kind === 'inbox') return INBOX;
  return defaultProject ?? INBOX;
}

/**
 * Who a capture is assigned to when it names nobody: this device's member while Assigned to me
 * is shown (what is captured there is theirs, and stays in view), else nobody.
 */
export function captureAssignee(scope: Scope, me: string | null): string | undefined {
  return scope.kind === 'mine' && me !== null ? me : undefined;
}
