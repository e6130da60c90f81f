// The contract with src-tauri: what the commands return and the events carry.

export type SyncState = 'provisional' | 'synced' | 'failed';
export type TaskStatus = 'pending' | 'completed' | 'deleted';
/** Taskwarrior's priorities: high, medium, low. */
export type Priority = 'H' | 'M' | 'L';
/** What `list_tasks` accepts. */
export type StatusFilter = TaskStatus | 'all';
/**
 * The status select of the filter bar: the backend's filters plus `failed` and `next` (both
 * client-side only; `next` is the pending tasks that are not blocked, leaf-first: next.ts).
 */
export type ViewStatus = StatusFilter | 'failed' | 'next';

/**
 * A filter as callsign-core parsed it (command `parse_filter`: the CLI's `list FILTER` reads the
 * same words with the same code). Empty lists ask nothing; see view.ts `matchesFilter`.
 */
export interface Filter {
  /** Lower-cased; each must be in the task's text. */
  words: string[];
  tags: string[];
  not_tags: string[];
  /** Upper-cased; the project must be one (when any). */
  projects: string[];
  /** The status must be one (when any); none named: the status menu decides. */
  statuses: TaskStatus[];
  /** Each must hold. */
  sync: ('failed' | 'provisional')[];
  due: { has: boolean | null; from: string | null; after: string | null; before: string | null };
  /** null: no priority. */
  priorities: (Priority | null)[];
  keys: { prefix: string; parents: number[]; from: number; to: number }[];
  /** `commits:any|none` (has), `commits:HASH` (a linked commit's hash starts with one). */
  commits: { has: boolean | null; hashes: string[] };
}

/** A git commit linked to a task by its message (docs/CLI.md "Git"). */
export interface CommitLink {
  /** The full hash. */
  hash: string;
  /** The message's first line. */
  subject: string;
  /** `Name <email>`. */
  author: string;
  /** The author date, RFC 3339. */
  at: string;
  /** `closes`: a closing word completed the task; `refs`: the commit links it. */
  action: 'closes' | 'refs';
  /** A smart commit's `#comment` text. */
  comment?: string | null;
}

/** Outbox detail for the provisional marker. `reason` is the engine's own wording (optional). */
export interface Waiting {
  state: 'pending' | 'in_progress' | 'failed';
  try_count?: number;
  next_attempt_at: string | null;
  reason?: string | null;
}

/** Why the server refused a task, in plain words, and what would make it accept it. */
export interface Failure {
  summary: string;
  /** The server's own message (technical). */
  detail: string;
  code: string | null;
  /** `project`: choose another project; `fields`: edit the task; `retry`: send again as is. */
  fix: 'project' | 'fields' | 'retry';
}

/** A field that two devices may change concurrently. */
export type ConflictField = 'description' | 'notes' | 'status' | 'tags' | 'due' | 'priority';

/** A value a later edit of the same field replaced: the task keeps it so it can be restored. */
export interface Conflict {
  field: ConflictField;
  /** The replaced value: text, a list of tags, an RFC 3339 date, a priority, or null. */
  value: string | string[] | null;
  /** When the server replaced it (RFC 3339). */
  at: string;
}

export interface LocalTask {
  uuid: string;
  key: string | null;
  project: string;
  number: number | null;
  description: string;
  notes: string;
  status: TaskStatus;
  tags: string[];
  /** RFC 3339, UTC. A local midnight means the whole day (see due.ts). */
  due: string | null;
  priority: Priority | null;
  /** The parent task's UUID, for a subtask (its key is the parent's key and its own number). */
  parent: string | null;
  /**
   * The keys it had before its current one, oldest first: it moved to another project (or its
   * parent did). Each still finds it (`resolve_task`, the jump box).
   */
  previous_keys: string[];
  /**
   * Values another device's later edit of the same field replaced (two devices changed one
   * field; the server kept the later value), oldest first. Absent on tasks from older servers.
   */
  conflicts?: Conflict[];
  /** How many subtasks it has (every status), as the backend counted them. */
  children: number;
  /** How many of them are pending: while any is, the task is blocked (it cannot be completed). */
  open_children: number;
  /**
   * A provisional subtask held back by an ancestor whose create the server refused: that
   * ancestor's label (`~1a2b3c4d`). `waiting.reason` then says so in words.
   */
  held_by: string | null;
  /**
   * Where an imported task came from: its tracker and the key it had there (`ENG-42`, `#12`;
   * none for Taskwarrior), which still finds it (`resolve_task`, the jump box). Null (or absent,
   * from an older backend) for a task made here.
   */
  origin?: Origin | null;
  /** The commits linked to it by git, oldest first (absent from an older backend). */
  commits?: CommitLink[];
  /** The git branch its key names (`syn-42-short-title`); null before it has a key. */
  branch?: string | null;
  /** The member who created it (the server's stamp): null until the server has answered. */
  created_by: string | null;
  /** The member it is assigned to, or null. */
  assignee: string | null;
  created_at: string;
  modified_at: string;
  sync_state: SyncState;
  last_error: string | null;
  /** The server's stable code for `last_error` (`recovering`: the server is recovering from a
   * backup and numbers nothing yet). */
  error_code?: string | null;
  waiting: Waiting | null;
  /** In the local inbox (project INBOX): stays on this device until sent to a server project. */
  local: boolean;
  /** Non-null: the task is failed (the server refused it). */
  failure: Failure | null;
}

/** An imported task's tracker and its key there. */
export interface Origin {
  tracker: ImportFormat;
  key?: string | null;
}

/** The exports the app imports. */
export type ImportFormat = 'jira' | 'linear' | 'github' | 'taskwarrior';

/** How to import a file (`import_export`'s `Callsign-Import` header). */
export interface ImportOptions {
  format: ImportFormat;
  /** Each task keeps its very number, in a project made for it (`ENG-42` stays `ENG-42`). */
  keep_numbers: boolean;
  /** The project to import into (with `keep_numbers`, the prefix for GitHub's `#N`); null: the file's own. */
  project: string | null;
  /** Plan only: nothing is made. */
  dry_run: boolean;
}

/** One project an import numbers in. */
export interface ImportProjectPlan {
  prefix: string;
  /** It does not exist yet: the import makes it. */
  new: boolean;
  tasks: number;
  /** With kept numbers: the highest kept (the project's next task takes the one after it); null otherwise. */
  highest_kept: number | null;
  /** Numbers below it the source never had, which stay unused: how many, and the first ones. */
  unused_count: number;
  unused: number[];
}

/** The plan of an import (what `callsign import --json` prints as `plan`). */
export interface ImportPlan {
  open: number;
  done: number;
  cancelled: number;
  projects: ImportProjectPlan[];
  /** Assignees in the file no member matches, with their task counts: left unassigned. */
  unmapped_assignees: Record<string, number>;
  /** Children imported on their own: their parent is not in the file (their source keys). */
  missing_parents: string[];
}

/** What `import_export` answers. */
export interface ImportResult {
  report: ImportPlan;
  /** The server answered (a preview goes on without it, from what this device last heard). */
  online: boolean;
  /** The file's tasks, in the order they were queued; empty for a preview. */
  uuids: string[];
  /** Saved here and queued for the server now. */
  queued: number;
  /** Here already from an earlier import of the same file: left as they are. */
  present: number;
  /**
   * Keys of the file that name another task here already (imported before with another issue,
   * or a kept number another task holds): the server refuses those issues. `task`: that task's key.
   */
  clashes: { key: string; task: string }[];
}

/** How an import's tasks stand (`import_progress`). */
export interface ImportProgress {
  total: number;
  keyed: number;
  waiting: number;
  /** The refused ones: `[key in the source (or label), the server's reason]`. */
  failed: [string, string][];
}

/** A sync problem in plain words (`summary`) with the technical text behind it (`detail`). */
export interface Problem {
  summary: string;
  detail: string;
}

export interface SyncStatus {
  configured: boolean;
  online: boolean;
  /** Tasks waiting to be sent (not counting those on the wire). */
  pending: number;
  /** Tasks the server refused. */
  failed: number;
  /** Tasks whose request is on the wire. */
  in_flight: number;
  /** Tasks held in the local inbox. */
  local: number;
  /** Of the pending, those a server recovering from a backup keeps unnumbered for now. */
  recovering: number;
  next_attempt_at: string | null;
  last_error: string | null;
  last_sync_at: string | null;
  server_url: string | null;
  problem: Problem | null;
}

export interface Settings {
  server_url: string | null;
  device_name: string;
  token_set: boolean;
  /** e.g. "…9f3a"; the token itself never comes back. */
  token_hint: string | null;
  /** Default project prefix for new tasks, when the backend has one. */
  project?: string | null;
  /** The team member this device is signed in as (null with no server, or not yet known). */
  member?: Member | null;
}

/** A member of the team: the handle tasks name them by (`@bob`), and their role. */
export interface Member {
  name: string;
  role: 'owner' | 'member';
}

/**
 * The team as `list_members` answers it: fresh from the server when it answers, else as last
 * listed. `known`: a list was ever had (without one, `@name` takes any handle).
 */
export interface Members {
  members: Member[];
  known: boolean;
}

/** One task in the standup, as said aloud: its key first (`~1a2b3c4d` while provisional). */
export interface StandupLine {
  key: string;
  description: string;
  uuid: string;
  /** Not numbered yet: `key` is the provisional id, not a key to say. */
  provisional: boolean;
}

/** A member's part of the standup (each list in key order, provisional tasks last). */
export interface MemberReport {
  name: string;
  completed: StandupLine[];
  created: StandupLine[];
  /** Pending and assigned to them, whenever made. */
  open: StandupLine[];
}

/** The standup (`standup`, the report `callsign standup` prints). */
export interface Standup {
  /** The start of the first day it covers (a local midnight), as an ISO time. */
  since: string;
  /** By name: the team as last listed, and anyone a task names. */
  members: MemberReport[];
}

/** "Join a team": the server, an owner's invite code, and the handle to join as. */
export interface JoinInput {
  server_url: string;
  code: string;
  name: string;
  /** This device's name as the server lists it (default: the saved one). */
  device_name?: string;
}

export interface SettingsInput {
  /** `null` clears the server: local-only. */
  server_url?: string | null;
  token?: string;
  device_name?: string;
  /** Default project prefix for new tasks (the backend validates it). */
  project?: string;
}

/** `local: true` is the device's inbox (`INBOX`); the others are the server's projects. */
export interface Project {
  prefix: string;
  name: string;
  local?: boolean;
}

/**
 * This device's desktop choices (`get_desktop_prefs`, `save_desktop_prefs`): the tray, the
 * global quick-capture shortcut (`Ctrl+Alt+Space`; the backend refuses one it cannot register,
 * `invalid`), and which system notifications to show.
 */
export interface DesktopPrefs {
  /** Closing the window leaves the app syncing in the tray. */
  close_to_tray: boolean;
  capture_shortcut: string;
  /** A notification when the server refuses a task (clicking it sends `open-task`). */
  notify_failures: boolean;
  /** A notification when tasks captured offline get their keys. */
  notify_keyed: boolean;
}

export interface CmdError {
  code: string;
  message: string;
}

export interface ListFilter {
  text?: string;
  status?: StatusFilter;
  project?: string;
}

/** One page of `list_tasks_page`: newest first, every status; `total` is the whole list's size. */
export interface TaskPage {
  tasks: LocalTask[];
  total: number;
}

export interface CreateInput {
  description: string;
  project?: string;
  notes?: string;
  tags?: string[];
  /** As typed (`tomorrow`, `fri`, `2026-12-01`, `3d`): the backend parses it and may refuse it. */
  due?: string;
  /** `H`, `M`, `L` (or `high`, `medium`, `low`), any case. */
  priority?: string;
  /** Makes it a subtask of this task (UUID, key or provisional id); it takes the parent's project. */
  parent?: string;
  /** A member's handle (`bob` or `@bob`): one of the team as last listed, any while none is. */
  assignee?: string;
}

export interface TaskPatch {
  description?: string;
  notes?: string;
  tags?: string[];
  /** As typed, like `CreateInput.due`; `''` (or `none`) clears it. An RFC 3339 time is taken as is. */
  due?: string;
  /** `''` clears it. */
  priority?: string;
}
