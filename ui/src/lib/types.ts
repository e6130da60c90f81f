// The contract with src-tauri: what the commands return and the events carry.

export type SyncState = 'provisional' | 'synced' | 'failed';
export type TaskStatus = 'pending' | 'completed' | 'deleted';
export type StatusFilter = TaskStatus | 'all';

/** Outbox detail for the provisional marker. `reason` is the engine's own wording (optional). */
export interface Waiting {
  state: 'pending' | 'in_progress' | 'failed';
  try_count?: number;
  next_attempt_at: string | null;
  reason?: string | null;
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
  created_at: string;
  modified_at: string;
  sync_state: SyncState;
  last_error: string | null;
  waiting: Waiting | null;
}

export interface SyncStatus {
  configured: boolean;
  online: boolean;
  pending: number;
  failed: number;
  in_flight: number;
  next_attempt_at: string | null;
  last_error: string | null;
  last_sync_at: string | null;
  server_url: string | null;
}

export interface Settings {
  server_url: string | null;
  device_name: string;
  token_set: boolean;
  /** e.g. "…9f3a"; the token itself never comes back. */
  token_hint: string | null;
  /** Default project prefix for new tasks, when the backend has one. */
  project?: string | null;
}

export interface SettingsInput {
  /** `null` clears the server: local-only. */
  server_url?: string | null;
  token?: string;
  device_name?: string;
  /** Default project prefix for new tasks (the backend validates it). */
  project?: string;
}

export interface Project {
  prefix: string;
  name: string;
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

export interface CreateInput {
  description: string;
  project?: string;
  notes?: string;
  tags?: string[];
}

export interface TaskPatch {
  description?: string;
  notes?: string;
  tags?: string[];
}
