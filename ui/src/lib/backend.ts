// Every call to the Rust side goes through this module, so the rest of the UI runs without Tauri.
import { invoke } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import type {
  CmdError,
  ConflictField,
  CreateInput,
  DesktopPrefs,
  Filter,
  ImportOptions,
  ImportProgress,
  ImportResult,
  JoinInput,
  ListFilter,
  LocalTask,
  Members,
  Project,
  Settings,
  SettingsInput,
  Standup,
  SyncStatus,
  TaskPage,
  TaskPatch,
} from './types';

/** Turns whatever a command rejected with into `{code, message}`. */
export function toCmdError(e: unknown): CmdError {
  if (typeof e === 'object' && e !== null && 'code' in e && 'message' in e) {
    const { code, message } = e as { code: unknown; message: unknown };
    return { code: String(code), message: String(message) };
  }
  if (e instanceof Error) return { code: 'ui', message: e.message };
  return { code: 'ui', message: String(e) };
}

async function call<T>(cmd: string, args?: Record<string, unknown> | Uint8Array, headers?: Record<string, string>): Promise<T> {
  try {
    return await invoke<T>(cmd, args, headers === undefined ? undefined : { headers });
  } catch (e) {
    throw toCmdError(e);
  }
}

/** True inside the Tauri web view (the IPC bridge is there). */
export function inTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

export const backend = {
  listTasks: (filter: ListFilter = {}) => call<LocalTask[]>('list_tasks', { filter }),
  /** The filter bar's text as callsign-core reads it (the CLI's `list FILTER` grammar). */
  parseFilter: (text: string) => call<Filter>('parse_filter', { text }),
  createTask: (input: CreateInput) => call<LocalTask>('create_task', { input }),
  editTask: (id: string, patch: TaskPatch) => call<LocalTask>('edit_task', { id, patch }),
  /** Assigns the task to a member (`null`: to nobody); `invalid` for one not in the team. */
  assignTask: (id: string, name: string | null) => call<LocalTask>('assign_task', { id, name }),
  /** The team's members (fresh when the server answers, else as last listed). */
  listMembers: () => call<Members>('list_members'),
  /**
   * The standup from the tasks on this device: since the start of `since` (`yesterday`, a date,
   * any day a due date takes; null: the last working day). `invalid` for a day it cannot read.
   */
  standup: (since: string | null) => call<Standup>('standup', { since }),
  completeTask: (id: string) => call<LocalTask>('complete_task', { id }),
  reopenTask: (id: string) => call<LocalTask>('reopen_task', { id }),
  /** A task whose create the server refused (failed, no key) is removed: null or the task, and a `task-removed` event. */
  deleteTask: (id: string) => call<LocalTask | null>('delete_task', { id }),
  /** Moves the task to `project` and sends it again. */
  setTaskProject: (id: string, project: string) => call<LocalTask>('set_task_project', { id, project }),
  /**
   * Moves any task to `project`: a numbered one takes the next key there when the server
   * answers (its old key goes to `previous_keys`); a subtask alone is refused (`invalid`).
   */
  moveTask: (id: string, project: string) => call<LocalTask>('move_task', { id, project }),
  /** null: the task was removed from this device (a `task-removed` event comes too). */
  discardTask: (id: string) => call<LocalTask | null>('discard_task', { id }),
  /** Moves every local-inbox task to `project` and queues them; answers how many. */
  sendInbox: (project: string) => call<number>('send_inbox', { project }),
  listTasksPage: (offset: number, limit: number) => call<TaskPage>('list_tasks_page', { offset, limit }),
  resolveTask: (query: string) => call<LocalTask>('resolve_task', { query }),
  retryTask: (id: string) => call<LocalTask>('retry_task', { id }),
  /** Brings back conflict number `index` of the task's `conflicts` (another device had replaced it). */
  restoreConflict: (id: string, index: number) => call<LocalTask>('restore_conflict', { id, index }),
  /** Keeps the field as it is and clears its conflicts. */
  dismissConflict: (id: string, field: ConflictField) => call<LocalTask>('dismiss_conflict', { id, field }),
  getSettings: () => call<Settings>('get_settings'),
  saveSettings: (settings: SettingsInput) => call<Settings>('save_settings', { settings }),
  /**
   * Redeems an owner's invite code as a new member and logs this device in with their token;
   * the settings then (with `member`). Refusals: `invalid` (not a URL, code or name),
   * `invite_used`, `invite_expired`, `invite_not_found`, `member_taken`, network codes.
   */
  joinTeam: (input: JoinInput) => call<Settings>('join_team', { input }),
  syncNow: () => call<void>('sync_now'),
  syncStatus: () => call<SyncStatus>('sync_status'),
  listProjects: () => call<Project[]>('list_projects'),
  /**
   * A new project on the server (`prefix` any case; refusals: `invalid`, `prefix_taken`,
   * `prefix_sounds_alike` unless `allowSimilar`, network codes).
   */
  createProject: (name: string, prefix: string, allowSimilar = false) =>
    call<Project>('create_project', { name, prefix, allowSimilar }),
  /**
   * Another tracker's export: planned only (`dry_run`) or queued for the server. The file's
   * bytes go as the raw body, the options as JSON in the `Callsign-Import` header. Refusals are
   * `invalid` in words (a file that is not the format, a plan that cannot go ahead, not an
   * owner, no server for a real import).
   */
  importExport: (bytes: Uint8Array, options: ImportOptions) =>
    call<ImportResult>('import_export', bytes, { 'Callsign-Import': JSON.stringify(options) }),
  /** How an import's tasks stand now (their UUIDs as `importExport` answered them). */
  importProgress: (uuids: string[]) => call<ImportProgress>('import_progress', { uuids }),
  getDesktopPrefs: () => call<DesktopPrefs>('get_desktop_prefs'),
  /** The prefs as saved; a shortcut that cannot be registered is refused (`invalid`). */
  saveDesktopPrefs: (prefs: DesktopPrefs) => call<DesktopPrefs>('save_desktop_prefs', { prefs }),
  /** Closes the quick-capture window (the one this is called from). */
  closeCapture: () => call<void>('close_capture'),

  onTaskChanged: (f: (t: LocalTask) => void): Promise<UnlistenFn> =>
    listen<LocalTask>('task-changed', (e) => f(e.payload)),
  onSyncStatus: (f: (s: SyncStatus) => void): Promise<UnlistenFn> =>
    listen<SyncStatus>('sync-status', (e) => f(e.payload)),
  onTaskRemoved: (f: (uuid: string) => void): Promise<UnlistenFn> =>
    listen<{ uuid: string }>('task-removed', (e) => f(e.payload.uuid)),
  /** A "task failed to sync" notification was clicked: show that task. */
  onOpenTask: (f: (uuid: string) => void): Promise<UnlistenFn> =>
    listen<{ uuid: string }>('open-task', (e) => f(e.payload.uuid)),
  /** The backend missed events (its channel lagged): reload the list. */
  onTasksReload: (f: () => void): Promise<UnlistenFn> => listen('tasks-reload', () => f()),
};

export type Backend = typeof backend;
