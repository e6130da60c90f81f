// The session's undo stack (Ctrl+Z and the notices' Undo): the last 20 completes, reopens,
// deletes, edits, assignments and discards, each with what undoing it takes. Pure: tested in tests/undo.test.ts.
import type { CreateInput, LocalTask, TaskPatch } from './types';

export type UndoKind = 'complete' | 'reopen' | 'delete' | 'discard' | 'edit' | 'assign';

export interface UndoEntry {
  id: number;
  kind: UndoKind;
  /** The task as it was before the action. */
  task: LocalTask;
  /** For `edit`: the patch that puts the previous values back. */
  patch?: TaskPatch;
}

/** What undoing an entry does: the command to run and the notice to show after it worked. */
export type UndoStep =
  | { call: 'reopen' | 'complete'; id: string; message: string }
  | { call: 'edit'; id: string; patch: TaskPatch; message: string }
  | { call: 'assign'; id: string; name: string | null; message: string }
  | { call: 'create'; input: CreateInput; message: string };

/** How a task is named in notices: its key, else its short id. */
export function taskLabel(t: Pick<LocalTask, 'key' | 'uuid'>): string {
  return t.key ?? '~' + t.uuid.replace(/-/g, '').slice(0, 8);
}

/**
 * Undoing `entry`. `label` names the task as it is now (it may have got its key since).
 * Undo a complete → reopen; a reopen → complete; a delete → reopen ("Restored"); a discard
 * (the task is gone from this device) → create it again with the same fields; an edit → edit
 * with the previous values; an assignment → the previous assignee (or nobody) again.
 */
export function undoStep(entry: UndoEntry, label = taskLabel(entry.task)): UndoStep {
  const t = entry.task;
  switch (entry.kind) {
    case 'complete':
      return { call: 'reopen', id: t.uuid, message: `Reopened ${label}` };
    case 'reopen':
      return { call: 'complete', id: t.uuid, message: `Completed ${label}` };
    case 'delete':
      return { call: 'reopen', id: t.uuid, message: `Restored ${label}` };
    case 'discard': {
      const input: CreateInput = { description: t.description, project: t.project };
      if (t.notes !== '') input.notes = t.notes;
      if (t.tags.length > 0) input.tags = [...t.tags];
      if (t.due !== null) input.due = t.due;
      if (t.priority !== null) input.priority = t.priority;
      return { call: 'create', input, message: 'Restored as a new local task' };
    }
    case 'edit':
      return { call: 'edit', id: t.uuid, patch: entry.patch ?? {}, message: `Undid the edit of ${label}` };
    case 'assign':
      return {
        call: 'assign',
        id: t.uuid,
        name: t.assignee,
        message: t.assignee ? `${label} is assigned to @${t.assignee} again` : `${label} is assigned to nobody again`,
      };
  }
}

/** The patch that puts back what `patch` changed in `before`. */
export function inversePatch(before: LocalTask, patch: TaskPatch): TaskPatch {
  const out: TaskPatch = {};
  if (patch.description !== undefined) out.description = before.description;
  if (patch.notes !== undefined) out.notes = before.notes;
  if (patch.tags !== undefined) out.tags = [...before.tags];
  // The due date back as its RFC 3339 time, which the backend takes as is; '' clears.
  if (patch.due !== undefined) out.due = before.due ?? '';
  if (patch.priority !== undefined) out.priority = before.priority ?? '';
  return out;
}

/** A bounded stack: the oldest entry falls off past `limit`. */
export class UndoStack {
  private entries: UndoEntry[] = [];
  private seq = 0;

  constructor(readonly limit = 20) {}

  get size(): number {
    return this.entries.length;
  }

  push(kind: UndoKind, task: LocalTask, patch?: TaskPatch): UndoEntry {
    const entry: UndoEntry = { id: ++this.seq, kind, task, ...(patch ? { patch } : {}) };
    this.entries.push(entry);
    if (this.entries.length > this.limit) this.entries.shift();
    return entry;
  }

  /** Takes the newest entry off the stack. */
  pop(): UndoEntry | null {
    return this.entries.pop() ?? null;
  }

  /** Takes one entry off the stack by id (a notice's Undo); null when it is gone already. */
  take(id: number): UndoEntry | null {
    const i = this.entries.findIndex((e) => e.id === id);
    return i < 0 ? null : (this.entries.splice(i, 1)[0] ?? null);
  }
}
