// An in-memory stand-in for src-tauri, for the browser preview (`npm run build:preview`) and the
// WebKit smoke test. Not part of the production bundle. It follows the command contract: same
// names, same argument shapes, `{code, message}` rejections, `task-changed` / `sync-status`
// events, `task-removed`, pages. A fake "server" numbers provisional tasks when online and refuses
// a task whose project it does not have; with no project and no default a task goes to the
// local inbox (INBOX) and stays there until `send_inbox` or `set_task_project` moves it.
// Subtasks (`create_task` with `parent`) take their parent's project, are numbered under its key
// (`SYN-3.1`) once it has one, are held while an ancestor is refused, and block its completion
// (`task_blocked`). As in the app, a task's change is also sent for its parent and its subtasks
// (their counts and holds change with it), but a task that leaves the device (`task-removed`)
// sends nothing for its parent, whose `children` and `open_children` then still count it.
// Moves (`move_task`): a numbered task changes project at once and the fake server gives it the
// next number there (its subtasks renumbered under the new key, in their old order), each old
// key kept in `previous_keys` and still found; a subtask alone is refused.
// Projects (`create_project`) are checked as the server checks them (`prefixError`, a taken
// prefix; not the server's sounds-alike rule, which lives in callsign-core); the desktop's preferences are kept, a shortcut it cannot read refused; the capture
// window's `open_capture` / `close_capture` are counted; `openTask` plays a notification's click.
// Joining (`join_team`) takes any well-formed invite code except `0000-0000-0000-0000`, which the
// fake server says was used, and refuses the handle `taken` (and any in `members`) as the server
// does; a join logs in as `save_settings` does and sets `member`. The team (`list_members`) is
// known while a server is set; `@name` and `assign_task` then take only its members (any handle
// before), and the fake server stamps `created_by` with this device's member when it numbers a
// task. `standup` follows the engine's rules (callsign_sync::standup) over the fake's tasks.
// Import (`import_export`, `import_progress`) is refused in words: reading an export is the
// engine's; a task's `origin` key (set by a test) finds it as the engine's lookup does.
import type {
  CmdError,
  CreateInput,
  DesktopPrefs,
  Failure,
  JoinInput,
  ListFilter,
  Member,
  LocalTask,
  Project,
  Settings,
  SettingsInput,
  Standup,
  StandupLine,
  SyncStatus,
  TaskPatch,
} from '../lib/types';
import { mention, memberNameError, normalizeInviteCode } from '../lib/team';
import { normalOriginKey, parseJumpQuery } from '../lib/jump';
import { keyPrefix } from '../lib/moves';
import { prefixError } from '../lib/projects';
import { filterTasks } from '../lib/view';
import { fakeParseFilter } from './fake-filter';
import { fakeParseDue, fakeParsePriority } from './fake-when';

const INBOX = 'INBOX';
const DUES = ['yesterday', 'eod', 'fri', '2w'];
const PRIORITIES = ['H', 'M', 'L'];
const UNREACHABLE = {
  summary: "Can't reach the server — your tasks are saved here and will sync when it's back",
  detail: 'cannot reach the server at http://127.0.0.1:7171: connection failed: tcp connect error: Connection refused (os error 111)',
};

type Emit = (event: string, payload: unknown) => void;

const MODIFIERS = new Set(['ctrl', 'control', 'alt', 'option', 'shift', 'super', 'meta', 'cmd', 'command', 'cmdorctrl', 'commandorcontrol']);

/**
 * Whether the fake can "register" a global shortcut: modifiers and one key, `+` between them
 * (`Ctrl+Alt+Space`), at least one modifier. The app's own rule is the global-shortcut plugin's.
 */
function shortcutError(s: string): string | null {
  const parts = s.split('+').map((p) => p.trim());
  const keys = parts.filter((p) => !MODIFIERS.has(p.toLowerCase()));
  if (parts.some((p) => p === '') || keys.length !== 1 || parts.length < 2 || !/^(\w+|Space)$/.test(keys[0] as string)) {
    return `"${s}" is not a shortcut the system can register: one or more modifiers and a key, e.g. Ctrl+Alt+Space`;
  }
  return null;
}

function err(code: string, message: string): CmdError {
  return { code, message };
}

/** A task's key, else its short id (`~1a2b3c4d`), as the backend names tasks. */
function label(t: LocalTask): string {
  return t.key ?? '~' + t.uuid.replace(/-/g, '').slice(0, 8);
}

function uuid4(n: number): string {
  const head = ((Math.random() * 0x100000000) >>> 0).toString(16).padStart(8, '0');
  return `${head}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

export class FakeBackend {
  private tasks: LocalTask[] = []; // oldest first
  private byUuid = new Map<string, LocalTask>();
  /** The last number given per scope: a project (`SYN`) or a parent's key (`SYN-3`). */
  private next = new Map<string, number>();
  private seq = 0;
  online = false;
  settings: Settings = { server_url: null, device_name: 'preview', token_set: false, token_hint: null, project: 'SYN', member: null };
  projects: Project[] = [
    { prefix: 'SYN', name: 'Syncing' },
    { prefix: 'OPS', name: 'Operations' },
  ];
  lastError: string | null = null;
  /** The fake team's handles (lower case); a join as one of them is refused. */
  members: Member[] = [{ name: 'taken', role: 'owner' }];
  /** The app's defaults (src-tauri `prefs.rs`); an empty shortcut is none. */
  desktop: DesktopPrefs = { close_to_tray: false, capture_shortcut: 'Ctrl+Alt+Space', notify_failures: true, notify_keyed: true };
  /** How many times the capture window was opened / closed. */
  captureOpened = 0;
  captureClosed = 0;
  /** The projects the fake server has (a task for another one is refused). */
  get serverPrefixes(): string[] {
    return this.projects.map((p) => p.prefix);
  }
  /** Delay before the fake server numbers a task, ms. */
  latencyMs = 400;

  constructor(private emit: Emit) {}

  get configured(): boolean {
    return this.settings.server_url !== null && this.settings.token_set;
  }

  /**
   * Fills the store with `n` tasks; the first `provisional` of the newest have no key. Then
   * `local` tasks in the inbox and `failed` ones the server refused (no key, wrong project).
   */
  seed(n: number, provisional = 0, local = 0, failed = 0): void {
    const start = Date.now() - n * 60_000;
    const words = ['Fix', 'Write', 'Review', 'Deploy', 'Plan', 'Rotate', 'Update', 'Check'];
    const things = ['login page', 'release notes', 'sync engine', 'backups', 'keys', 'docs', 'CI', 'metrics'];
    for (let i = 0; i < n; i++) {
      const k = n - 1 - i;
      const project = i % 4 === 0 ? 'OPS' : 'SYN';
      const t = this.make({
        description: `${words[i % words.length]} ${things[(i * 7) % things.length]} ${i + 1}`,
        project,
        tags: i % 5 === 0 ? ['ops'] : [],
        // A few of the newest (k = 0 is the newest) with a due date (one overdue) or a priority.
        ...(k < 8 && k % 2 === 1 ? { due: DUES[(k - 1) / 2] as string } : {}),
        ...(k < 9 && k % 3 === 1 ? { priority: PRIORITIES[(k - 1) / 3] as string } : {}),
      }, new Date(start + i * 60_000).toISOString());
      if (i < n - provisional) this.number(t, false);
      if (i % 11 === 0) t.status = 'completed';
    }
    const at = (i: number) => new Date(Date.now() - (local + failed - i) * 1000).toISOString();
    for (let i = 0; i < failed; i++) {
      const t = this.make({ description: `Draft the ZZZ roadmap ${i + 1}`, project: 'ZZZ', tags: ['plan'] }, at(i));
      t.failure = this.noProject('ZZZ');
      t.sync_state = 'failed';
      t.waiting = { state: 'failed', next_attempt_at: null };
    }
    for (let i = 0; i < local; i++) {
      this.make({ description: `Captured on the train ${i + 1}`, project: INBOX, tags: i === 0 ? ['idea', 'train', 'later'] : [] }, at(failed + i));
    }
  }

  /**
   * Gives the `n` newest pending tasks three subtasks each (the first one done; numbered when
   * the parent is), and the first parent's second subtask one of its own.
   */
  seedSubtasks(n: number): void {
    if (n <= 0) return; // (slice(-0) would be every task)
    const parents = this.tasks.filter((t) => t.status === 'pending' && t.parent === null && !t.local && t.failure === null).slice(-n).reverse();
    const at = Date.now() - 500;
    parents.forEach((p, i) => {
      const kids = ['Draft the outline', 'Review it with the team', 'Publish it'].map((d, j) => {
        const c = this.make({ description: `${d} (${label(p)})`, parent: p.uuid }, new Date(at + i * 10 + j).toISOString());
        this.number(c, false);
        return c;
      });
      (kids[0] as LocalTask).status = 'completed';
      if (i === 0) {
        const c = this.make({ description: 'Check the links', parent: (kids[1] as LocalTask).uuid }, new Date(at + 9).toISOString());
        this.number(c, false);
      }
    });
  }

  /**
   * Gives the newest numbered pending task a conflict, as two devices editing its description
   * leave one: the server kept the later text, and the other is kept to restore.
   */
  seedConflicts(n: number): void {
    if (n <= 0) return; // (slice(-0) would be every task)
    const tasks = this.tasks.filter((t) => t.key !== null && t.status === 'pending' && t.parent === null).slice(-n);
    for (const t of tasks) {
      const other = `${t.description} (as typed on the laptop)`;
      t.conflicts = [{ field: 'description', value: other, at: new Date(Date.now() - 60_000).toISOString() }];
    }
  }

  /**
   * The `n` newest numbered tasks came from Jira (as an import without kept numbers leaves them):
   * origin keys `ENG-1`, `ENG-2`, … (oldest first), which find them.
   */
  seedImported(n: number): void {
    if (n <= 0) return;
    const tasks = this.tasks.filter((t) => t.key !== null && t.parent === null).slice(-n);
    tasks.forEach((t, i) => (t.origin = { tracker: 'jira', key: `ENG-${i + 1}` }));
  }

  private noProject(prefix: string): Failure {
    return {
      summary: `The server has no project ${prefix} — choose another project`,
      detail: `422 project_not_found: project "${prefix}" does not exist in this account`,
      code: 'project_not_found',
      fix: 'project',
    };
  }

  private make(input: CreateInput, at = new Date().toISOString()): LocalTask {
    const parent = input.parent === undefined ? null : this.parentFor(input.parent);
    if (parent !== null && input.project !== undefined && input.project.toUpperCase() !== parent.project) {
      throw err('invalid', `a subtask is in its parent's project: ${label(parent)} is in ${parent.project}, not ${input.project}`);
    }
    const project = (parent?.project ?? input.project ?? this.settings.project ?? INBOX).toUpperCase();
    const t: LocalTask = {
      uuid: uuid4(this.seq++),
      key: null,
      project,
      number: null,
      description: input.description,
      notes: input.notes ?? '',
      status: 'pending',
      tags: input.tags ?? [],
      due: input.due === undefined ? null : fakeParseDue(input.due),
      priority: input.priority === undefined ? null : fakeParsePriority(input.priority),
      parent: parent?.uuid ?? null,
      previous_keys: [],
      origin: null,
      children: 0,
      open_children: 0,
      held_by: null,
      created_by: null,
      assignee: input.assignee === undefined ? null : this.assignee(input.assignee),
      created_at: at,
      modified_at: at,
      sync_state: 'provisional',
      last_error: null,
      waiting: project === INBOX ? null : { state: 'pending', next_attempt_at: null },
      local: project === INBOX,
      failure: null,
    };
    this.tasks.push(t);
    this.byUuid.set(t.uuid, t);
    return t;
  }

  /**
   * `name` as an assignee (the engine's `assignee`): a handle, and one of the team's members
   * while the team is known.
   */
  private assignee(name: string): string {
    const n = mention('@' + name.trim().replace(/^@/, ''));
    if (n === null) throw err('invalid', memberNameError(name) ?? `invalid member name "${name}"`);
    if (this.configured && !this.members.some((m) => m.name === n)) {
      throw err('invalid', `@${n} is not a member of the team (${this.members.map((m) => '@' + m.name).join(', ')})`);
    }
    return n;
  }

  /** The task a new subtask goes under: an open task (by UUID, key or short id). */
  private parentFor(ref: string): LocalTask {
    const p = this.find(ref);
    if (!p) throw err('invalid', `parent: no task matches "${ref}"`);
    if (p.status !== 'pending') throw err('invalid', `parent: ${label(p)} is ${p.status}; a subtask goes under an open task`);
    return p;
  }

  /** A task by UUID, key, or 8+ hex digits of its UUID (`~` allowed); undefined when none. */
  private find(query: string): LocalTask | undefined {
    const q = parseJumpQuery(query);
    let found: LocalTask | undefined;
    if (q.kind === 'key') {
      // A key names its task forever: an old key (the task moved) finds it too.
      found = this.tasks.find((t) => t.key === q.key) ?? this.tasks.find((t) => t.previous_keys.includes(q.key));
    }
    if (q.kind === 'uuid') found = this.byUuid.get(q.uuid);
    const hex = query.trim().replace(/^~/, '').replace(/-/g, '').toLowerCase();
    if (!found && /^[0-9a-f]{8,}$/.test(hex)) {
      const hits = this.tasks.filter((t) => t.uuid.replace(/-/g, '').startsWith(hex));
      if (hits.length > 1) throw err('ambiguous', `${query} matches more than one task`);
      found = hits[0];
    }
    // The key an imported task had in its tracker (`ENG-42`, `#12`), as the engine looks it up.
    const origin = normalOriginKey(query);
    found ??= this.tasks.find((t) => t.origin?.key != null && normalOriginKey(t.origin.key) === origin);
    return found;
  }

  private parentOf(t: LocalTask): LocalTask | null {
    return t.parent === null ? null : (this.byUuid.get(t.parent) ?? null);
  }

  /** The nearest ancestor the server refused (it holds a provisional subtask back). */
  private refusedAbove(t: LocalTask): LocalTask | null {
    for (let p = this.parentOf(t); p !== null; p = this.parentOf(p)) if (p.failure !== null && p.key === null) return p;
    return null;
  }

  /** Subtask counts per parent: [all, pending]. */
  private subtaskCounts(): Map<string, [number, number]> {
    const m = new Map<string, [number, number]>();
    for (const c of this.tasks) {
      if (c.parent === null) continue;
      const n = m.get(c.parent) ?? [0, 0];
      m.set(c.parent, [n[0] + 1, n[1] + (c.status === 'pending' ? 1 : 0)]);
    }
    return m;
  }

  /**
   * A copy as the backend sends it: the subtask counts and the hold read now. `counts`: the
   * whole list's (`subtaskCounts`), when many tasks go out at once.
   */
  private out(t: LocalTask, counts?: Map<string, [number, number]>): LocalTask {
    let n = counts?.get(t.uuid);
    if (counts === undefined) {
      const kids = this.tasks.filter((c) => c.parent === t.uuid);
      n = [kids.length, kids.filter((c) => c.status === 'pending').length];
    }
    const held = t.key === null && t.failure === null ? this.refusedAbove(t) : null;
    return {
      ...t,
      tags: [...t.tags],
      children: n?.[0] ?? 0,
      open_children: n?.[1] ?? 0,
      held_by: held === null ? null : label(held),
      waiting:
        held === null || t.waiting === null
          ? t.waiting
          : {
              ...t.waiting,
              reason: `waiting for ${label(held)}, a task above it that the server refused: fix, send again or discard that one`,
            },
    };
  }

  private number(t: LocalTask, emit = true): void {
    if (t.key !== null) return;
    const parent = this.parentOf(t);
    if (parent !== null && parent.key === null) return; // numbered under its parent's key, later
    const scope = parent?.key ?? t.project;
    const n = (this.next.get(scope) ?? 0) + 1;
    this.next.set(scope, n);
    t.number = n;
    t.key = parent === null ? `${t.project}-${n}` : `${parent.key}.${n}`;
    t.sync_state = 'synced';
    t.waiting = null;
    t.failure = null;
    t.created_by ??= this.settings.member?.name ?? null;
    if (emit) this.changed(t);
  }

  /**
   * The server's side of a move: `t` gets the next number of its (new) project, or under its
   * parent's new key; its numbered subtasks follow in their old order. Old keys are kept.
   */
  private renumber(t: LocalTask, parent: LocalTask | null): void {
    if (t.key === null) return;
    const scope = parent?.key ?? t.project;
    const n = (this.next.get(scope) ?? 0) + 1;
    this.next.set(scope, n);
    t.previous_keys = [...t.previous_keys, t.key];
    t.number = n;
    t.key = parent === null ? `${t.project}-${n}` : `${parent.key}.${n}`;
    t.modified_at = new Date().toISOString();
    for (const c of this.tasks.filter((x) => x.parent === t.uuid)) {
      c.project = t.project;
      this.renumber(c, t);
      this.emit('task-changed', this.out(c));
    }
  }

  /**
   * `move_task` (and `set_task_project`, the same in the app): a numbered task is queued as a
   * move, one with no key just changes project (its provisional subtasks with it).
   */
  private moveTo(t: LocalTask, project: string): LocalTask {
    if (project === INBOX) throw err('invalid', 'Choose a server project: the inbox is where tasks wait for one');
    if (!/^[A-Z][A-Z0-9]{1,9}$/.test(project)) throw err('invalid', `"${project}" is not a project prefix`);
    if (t.parent !== null) {
      throw err(
        'invalid',
        t.key !== null
          ? `${t.key} is a subtask: it moves with its parent, not alone`
          : "a subtask is in its parent's project: change the parent's project and its subtasks go with it",
      );
    }
    if (t.key !== null && t.project === project) throw err('invalid', `${t.key} is in ${project} already`);
    t.project = project;
    t.local = false;
    if (t.key === null) {
      for (const c of this.tasks.filter((x) => x.parent === t.uuid && x.key === null)) {
        c.project = project;
        c.local = false;
      }
    }
    this.requeue(t);
    const out = this.touch(t);
    this.statusChanged();
    this.pump();
    return out;
  }

  /** `t` changed: it, then its parent and subtasks, as the engine tells subscribers. */
  private changed(t: LocalTask): void {
    this.emit('task-changed', this.out(t));
    this.relatedChanged(t);
  }

  /** The parent and subtasks of `t` (the engine's `Store::related`), sent again. */
  private relatedChanged(t: LocalTask): void {
    const up = this.parentOf(t);
    if (up !== null) this.emit('task-changed', this.out(up));
    for (const c of this.tasks) if (c.parent === t.uuid) this.emit('task-changed', this.out(c));
  }

  /** Counts of tasks, as the engine gives them. */
  status(): SyncStatus {
    const count = (f: (t: LocalTask) => boolean) => this.tasks.reduce((n, t) => (f(t) ? n + 1 : n), 0);
    const online = this.configured && this.online;
    return {
      configured: this.configured,
      online,
      pending: count((t) => t.failure === null && t.waiting?.state === 'pending'),
      failed: count((t) => t.failure !== null),
      in_flight: count((t) => t.failure === null && t.waiting?.state === 'in_progress'),
      local: count((t) => t.local),
      recovering: count((t) => t.failure === null && t.waiting?.state === 'pending' && t.error_code === 'recovering'),
      next_attempt_at: null,
      last_error: this.lastError,
      last_sync_at: online ? new Date().toISOString() : null,
      server_url: this.settings.server_url,
      problem: this.configured && !this.online ? UNREACHABLE : null,
    };
  }

  private statusChanged(): void {
    this.emit('sync-status', this.status());
  }

  /** The fake server numbers what waits, oldest first, one by one; an unknown project is refused. */
  private pump(): void {
    if (!this.configured || !this.online) return;
    const waiting = this.tasks.filter((t) => !t.local && t.failure === null && t.waiting?.state === 'pending');
    for (const t of waiting) t.waiting = { state: 'in_progress', next_attempt_at: null };
    waiting.forEach((t, i) =>
      setTimeout(() => {
        if (!this.byUuid.has(t.uuid)) return;
        if (!this.online) {
          t.waiting = { state: 'pending', next_attempt_at: null };
        } else if (t.key === null && this.parentOf(t) !== null && this.parentOf(t)?.key === null) {
          // Its parent has no key yet: it waits (held while the parent is refused), and goes
          // again after the parent's turn.
          t.waiting = { state: 'pending', next_attempt_at: null };
          if (this.refusedAbove(t) === null) setTimeout(() => this.pump(), this.latencyMs);
          else this.changed(t);
        } else if (t.key === null && !this.serverPrefixes.includes(t.project)) {
          t.failure = this.noProject(t.project);
          t.sync_state = 'failed';
          t.waiting = { state: 'failed', next_attempt_at: null };
          this.changed(t);
        } else if (t.key !== null && keyPrefix(t.key) !== t.project && !this.serverPrefixes.includes(t.project)) {
          // A move to a project the server lacks: refused, the task keeps its key.
          t.failure = this.noProject(t.project);
          t.sync_state = 'failed';
          t.waiting = { state: 'failed', next_attempt_at: null };
          this.changed(t);
        } else if (t.key !== null) {
          t.waiting = null; // an edit of a numbered task, accepted
          if (keyPrefix(t.key) !== t.project) this.renumber(t, null);
          this.changed(t);
        } else {
          this.number(t);
        }
        this.statusChanged();
      }, this.latencyMs + i * 150),
    );
  }

  setOnline(online: boolean): void {
    this.online = online;
    this.lastError = online ? null : 'connection refused';
    this.statusChanged();
    this.pump();
  }

  /** The user clicked a "task failed to sync" notification: the app is told which task. */
  openTask(uuid: string): void {
    this.emit('open-task', { uuid });
  }

  /** A task added by "another program" on the same data dir. */
  addExternal(description: string): LocalTask {
    const t = this.make({ description });
    this.changed(t);
    this.statusChanged();
    this.pump();
    return t;
  }

  /** The server refuses this task (its create when it has no key, else its last edit). */
  refuse(id: string, failure: Failure): void {
    const t = this.get(id);
    t.sync_state = 'failed';
    t.last_error = failure.detail;
    t.failure = failure;
    t.waiting = { state: 'failed', next_attempt_at: null };
    this.changed(t);
    this.statusChanged();
  }

  /** Gone from this device: no longer listed, a `task-removed` event. */
  private drop(t: LocalTask): void {
    this.byUuid.delete(t.uuid);
    this.tasks = this.tasks.filter((x) => x !== t);
    this.emit('task-removed', { uuid: t.uuid });
    this.statusChanged();
  }

  /** Queued again for the server (after a move or a fix). */
  private requeue(t: LocalTask): void {
    t.failure = null;
    t.last_error = null;
    t.sync_state = t.key ? 'synced' : 'provisional';
    t.waiting = { state: 'pending', next_attempt_at: null };
  }

  private get(id: string): LocalTask {
    const t = this.byUuid.get(id);
    if (!t) throw err('not_found', `No task ${id}`);
    return t;
  }

  private touch(t: LocalTask): LocalTask {
    t.modified_at = new Date().toISOString();
    this.changed(t);
    return this.out(t);
  }

  /**
   * The engine's standup over the fake's tasks: since the start of `since` (as a due date reads
   * it; null: the last working day), per member, completed (by assignee, else creator), created,
   * open and assigned; a provisional task's creator is this device's member.
   */
  private standup(since: string | null): Standup {
    const now = new Date();
    const back = [2, 3, 1, 1, 1, 1, 1][now.getDay()] as number; // Sun → Fri, Mon → Fri
    const from = since === null ? new Date(now.getFullYear(), now.getMonth(), now.getDate() - back) : new Date(fakeParseDue(since) ?? '');
    if (Number.isNaN(from.getTime())) throw err('invalid', 'a standup needs a day to start from, such as yesterday');
    const start = new Date(from.getFullYear(), from.getMonth(), from.getDate()).getTime();
    const me = this.settings.member?.name ?? null;
    const creator = (t: LocalTask) => t.created_by ?? (t.key === null ? me : null);
    const names = new Set(this.configured ? this.members.map((m) => m.name) : []);
    for (const t of this.tasks) {
      const c = creator(t);
      if (c !== null) names.add(c);
      if (t.assignee !== null) names.add(t.assignee);
    }
    const order = this.tasks
      .slice()
      .sort((a, b) => Number(a.key === null) - Number(b.key === null) || a.project.localeCompare(b.project) || (a.number ?? 0) - (b.number ?? 0));
    const line = (t: LocalTask): StandupLine => ({ key: t.key ?? `~${t.uuid.replace(/-/g, '').slice(0, 8)}`, description: t.description, uuid: t.uuid, provisional: t.key === null });
    const since_ = (at: string) => Date.parse(at) >= start;
    return {
      since: new Date(start).toISOString(),
      members: [...names].sort().map((name) => ({
        name,
        completed: order.filter((t) => t.status === 'completed' && since_(t.modified_at) && (t.assignee ?? creator(t)) === name).map(line),
        created: order.filter((t) => t.status !== 'deleted' && since_(t.created_at) && creator(t) === name).map(line),
        open: order.filter((t) => t.status === 'pending' && t.assignee === name).map(line),
      })),
    };
  }

  handle(cmd: string, args: Record<string, unknown>): unknown {
    switch (cmd) {
      case 'list_tasks': {
        const f = (args.filter ?? {}) as ListFilter;
        const counts = this.subtaskCounts();
        const status = f.status ?? 'pending';
        return filterTasks(this.tasks.slice().reverse(), { filter: fakeParseFilter(f.text ?? ''), status })
          .filter((t) => f.project === undefined || t.project === f.project.toUpperCase())
          .map((t) => this.out(t, counts));
      }
      case 'parse_filter':
        return fakeParseFilter(String(args.text ?? ''));
      case 'list_tasks_page': {
        const offset = Number(args.offset ?? 0);
        const limit = Number(args.limit ?? 200);
        if (!(offset >= 0 && limit > 0)) throw err('invalid', 'offset and limit must be positive');
        const n = this.tasks.length;
        // newest first: index i from the top is tasks[n - 1 - i]
        const out: LocalTask[] = [];
        const counts = this.subtaskCounts();
        for (let i = offset; i < Math.min(n, offset + limit); i++) out.push(this.out(this.tasks[n - 1 - i] as LocalTask, counts));
        return { tasks: out, total: n };
      }
      case 'create_task': {
        const input = args.input as CreateInput;
        if (!input.description.trim()) throw err('invalid', 'the description is empty');
        const t = this.make(input);
        this.relatedChanged(t); // the new task itself is the answer
        this.statusChanged();
        this.pump();
        return this.out(t);
      }
      case 'edit_task': {
        const t = this.get(args.id as string);
        const p = args.patch as TaskPatch;
        // Parsed first: a refused value changes nothing.
        const due = p.due === undefined ? undefined : fakeParseDue(p.due);
        const priority = p.priority === undefined ? undefined : fakeParsePriority(p.priority);
        if (due !== undefined) t.due = due;
        if (priority !== undefined) t.priority = priority;
        if (p.description !== undefined) t.description = p.description;
        if (p.notes !== undefined) t.notes = p.notes;
        if (p.tags !== undefined) t.tags = p.tags;
        if (t.failure !== null) {
          this.requeue(t);
          this.pump();
        }
        this.statusChanged();
        return this.touch(t);
      }
      case 'assign_task': {
        const t = this.get(args.id as string);
        const name = args.name as string | null;
        t.assignee = name === null ? null : this.assignee(name);
        return this.touch(t);
      }
      case 'standup':
        return this.standup((args.since as string | null | undefined) ?? null);
      case 'list_members':
        return this.configured ? { members: this.members.map((m) => ({ ...m })), known: true } : { members: [], known: false };
      case 'complete_task': {
        const t = this.get(args.id as string);
        const open = this.tasks.filter((c) => c.parent === t.uuid && c.status === 'pending');
        if (open.length > 0) {
          throw err('task_blocked', `${label(t)} has open subtasks (${open.map(label).join(', ')}); complete or delete them first`);
        }
        t.status = 'completed';
        return this.touch(t);
      }
      case 'reopen_task': {
        const t = this.get(args.id as string);
        t.status = 'pending';
        return this.touch(t);
      }
      case 'delete_task': {
        const t = this.get(args.id as string);
        if (t.failure !== null && t.key === null) {
          this.drop(t);
          return null;
        }
        t.status = 'deleted';
        return this.touch(t);
      }
      case 'discard_task': {
        const t = this.get(args.id as string);
        if (t.key === null) {
          this.drop(t);
          return null;
        }
        // a keyed task: the refused edit is dropped
        t.failure = null;
        t.sync_state = 'synced';
        t.waiting = null;
        this.statusChanged();
        return this.touch(t);
      }
      case 'retry_task': {
        const t = this.get(args.id as string);
        this.requeue(t);
        this.statusChanged();
        this.pump();
        return this.touch(t);
      }
      case 'restore_conflict': {
        const t = this.get(args.id as string);
        const i = Number(args.index);
        const c = t.conflicts?.[i];
        if (!c) throw err('invalid', `${label(t)} has no conflict #${i + 1}`);
        const field = c.field as 'description' | 'notes' | 'tags' | 'due' | 'priority';
        (t as unknown as Record<string, unknown>)[field] = c.value;
        t.conflicts = (t.conflicts ?? []).filter((x) => !(x.field === c.field && JSON.stringify(x.value) === JSON.stringify(c.value)));
        this.statusChanged();
        return this.touch(t);
      }
      case 'dismiss_conflict': {
        const t = this.get(args.id as string);
        const field = String(args.field);
        if (!(t.conflicts ?? []).some((c) => c.field === field)) throw err('invalid', `${label(t)} has no conflict on its ${field}`);
        t.conflicts = (t.conflicts ?? []).filter((c) => c.field !== field);
        return this.touch(t);
      }
      case 'set_task_project':
      case 'move_task':
        return this.moveTo(this.get(args.id as string), String(args.project ?? '').trim().toUpperCase());
      case 'send_inbox': {
        const project = String(args.project ?? '').toUpperCase();
        if (project === INBOX || project === '') throw err('invalid', 'Choose a server project to send the inbox to');
        const moved = this.tasks.filter((t) => t.local);
        for (const t of moved) {
          t.project = project;
          t.local = false;
          this.requeue(t);
          this.touch(t);
        }
        this.statusChanged();
        this.pump();
        return moved.length;
      }
      case 'resolve_task': {
        const query = args.query as string;
        const found = this.find(query);
        if (!found) {
          const q = parseJumpQuery(query);
          throw err('not_found', `No task ${q.kind === 'key' ? q.key : query.trim()}`);
        }
        return this.out(found);
      }
      case 'get_settings':
        return { ...this.settings };
      case 'save_settings': {
        const s = args.settings as SettingsInput;
        if (s.server_url !== undefined) {
          if (s.server_url !== null && !/^https?:\/\/\S+$/.test(s.server_url)) {
            throw err('invalid', `"${s.server_url}" is not a server URL: use http://host:port or https://host`);
          }
          this.settings.server_url = s.server_url;
        }
        if (s.device_name !== undefined) this.settings.device_name = s.device_name;
        if (s.project !== undefined) {
          if (!/^[A-Za-z][A-Za-z0-9]{1,9}$/.test(s.project)) throw err('invalid', `"${s.project}" is not a project prefix`);
          this.settings.project = s.project.toUpperCase();
        }
        if (s.token !== undefined) {
          this.settings.token_set = true;
          this.settings.token_hint = `…${s.token.slice(-4)}`;
        }
        this.statusChanged();
        this.pump();
        return { ...this.settings };
      }
      case 'join_team': {
        const j = args.input as JoinInput;
        const url = j.server_url.trim().replace(/\/+$/, '');
        if (!/^https?:\/\/\S+$/.test(url)) throw err('invalid', `"${url}" is not a server URL: use http://host:port or https://host`);
        const code = normalizeInviteCode(j.code);
        if (code === null) {
          throw err('invalid', `"${j.code.trim()}" is not an invite code: a code is 16 letters and digits, such as 7KQ2-M9XD-4TRA-Z0PB`);
        }
        const bad = memberNameError(j.name);
        if (bad !== null) throw err('invalid', bad);
        const name = j.name.trim().replace(/^@/, '').toLowerCase();
        if (code === '0'.repeat(16)) {
          throw err('invite_used', 'Invite code already used: this invite code was used already (each works once): ask an owner for a new one');
        }
        if (this.members.some((m) => m.name === name)) {
          throw err('member_taken', `Member name already in use: the team has or had a member named ${name}: choose another name (the code is still good)`);
        }
        const member: Member = { name, role: 'member' };
        this.members = [...this.members, member];
        this.settings.server_url = url;
        this.settings.token_set = true;
        this.settings.token_hint = `…${((Math.random() * 0x10000) >>> 0).toString(16).padStart(4, '0')}`;
        this.settings.member = member;
        if (j.device_name?.trim()) this.settings.device_name = j.device_name.trim();
        this.statusChanged();
        this.pump();
        return { ...this.settings };
      }
      case 'sync_now':
        if (!this.configured) throw err('not_logged_in', 'no server configured');
        if (!this.online) throw err('unreachable', `Can't reach the server at ${this.settings.server_url} — is it running?`);
        this.pump();
        return null;
      case 'sync_status':
        return this.status();
      case 'list_projects': {
        const inbox = !this.configured || this.tasks.some((t) => t.local);
        return [
          ...(this.configured ? this.projects : []),
          ...(inbox ? [{ prefix: INBOX, name: 'Inbox (this device)', local: true }] : []),
        ];
      }
      case 'create_project': {
        if (!this.configured) throw err('not_logged_in', 'Creating a project needs a server: set one in Settings');
        const input = String(args.prefix ?? '');
        const refused = prefixError(input);
        if (refused !== null) throw err('invalid', refused);
        const prefix = input.trim().toUpperCase();
        if (this.projects.some((p) => p.prefix === prefix)) throw err('prefix_taken', `prefix ${prefix} is taken by another project`);
        const name = String(args.name ?? '').trim() || prefix;
        const project: Project = { prefix, name, local: false };
        this.projects = [...this.projects, project];
        return { ...project };
      }
      case 'import_export':
      case 'import_progress':
        // Importing reads a real export with the engine (callsign-import): the preview has none.
        throw err('unsupported', 'The preview cannot import files: import in the Callsign app, or with `callsign import --from`');
      case 'get_desktop_prefs':
        return { ...this.desktop };
      case 'save_desktop_prefs': {
        const prefs = args.prefs as DesktopPrefs;
        const shortcut = prefs.capture_shortcut.trim();
        const refused = shortcut === '' ? null : shortcutError(shortcut);
        if (refused !== null) throw err('invalid', refused);
        this.desktop = { ...prefs, capture_shortcut: shortcut };
        return { ...this.desktop };
      }
      case 'open_capture':
        this.captureOpened++;
        return null;
      case 'close_capture':
        this.captureClosed++;
        return null;
      default:
        throw err('unknown', `unknown command ${cmd}`);
    }
  }
}
