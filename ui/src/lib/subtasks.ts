// Subtasks as the UI sees them: who is whose parent, and how many of a task's subtasks are open.
// Pure: tested in tests/subtasks.test.ts.
//
// The counts are read from the loaded list, not from the task's own `children` and
// `open_children`, though the backend sends a parent again when one of its subtasks changes:
// the progress leaves deleted subtasks out (`children` counts them, and no completed count is
// sent); a subtask that leaves the device (discarded) comes as `task-removed` alone, so its
// parent's copy still counts it; and a parent's own event comes after its new subtask's, where
// the list's count blocks it in the same update. Once every page is in the list holds every
// subtask (every status), so the list's counts are the backend's. While pages load, a parent's
// subtasks may not be loaded yet: the task's own counts are used until then.
import type { CreateInput, LocalTask } from './types';
import { captureFields, createdMs, parseCapture } from './view';
import { sortByKey } from './sort';
import { plural } from './status';
import { taskLabel } from './undo';

export interface SubtaskFacts {
  /** Every subtask, deleted ones too (the backend's `children`: what Next orders by). */
  children: number;
  /** Pending subtasks: while any is, the task is blocked. */
  open: number;
  /** Completed subtasks. */
  done: number;
}

export const NO_SUBTASKS: SubtaskFacts = { children: 0, open: 0, done: 0 };

/** The subtasks of each loaded task, and each subtask's parent. Built once per list. */
export class Subtasks {
  private kids = new Map<string, LocalTask[]>();
  /** Subtask UUID → parent UUID, for every loaded subtask. */
  readonly parentOf = new Map<string, string>();

  /**
   * `list`: the loaded tasks in any order. `complete`: every page is in, so a task with no
   * subtask in `list` has none.
   */
  constructor(
    list: readonly LocalTask[],
    readonly complete: boolean,
  ) {
    for (const t of list) {
      if (t.parent === null) continue;
      this.parentOf.set(t.uuid, t.parent);
      const k = this.kids.get(t.parent);
      if (k === undefined) this.kids.set(t.parent, [t]);
      else k.push(t);
    }
    // Capture order (oldest first), as the backend lists them and names them when blocked.
    for (const [uuid, k] of this.kids) if (k.length > 1) this.kids.set(uuid, sortByKey(k, createdMs));
  }

  /** The loaded subtasks of `uuid` (every status), oldest first. */
  of(uuid: string): readonly LocalTask[] {
    return this.kids.get(uuid) ?? [];
  }

  /** How many subtasks `t` has, and how many are open or done (see the module comment). */
  facts(t: LocalTask): SubtaskFacts {
    const k = this.kids.get(t.uuid);
    if (!this.complete && (k === undefined || k.length < t.children)) {
      if (t.children === 0) return NO_SUBTASKS;
      return { children: t.children, open: t.open_children, done: t.children - t.open_children };
    }
    if (k === undefined) return NO_SUBTASKS;
    let open = 0;
    let done = 0;
    for (const c of k) {
      if (c.status === 'pending') open++;
      else if (c.status === 'completed') done++;
    }
    return { children: k.length, open, done };
  }

  /** The subtasks the detail pane lists: every one but the deleted, oldest first. */
  shown(uuid: string): LocalTask[] {
    return this.of(uuid).filter((c) => c.status !== 'deleted');
  }

  /** Its open subtasks' labels (keys, else `~short ids`), oldest first. */
  openLabels(uuid: string): string[] {
    return this.of(uuid)
      .filter((c) => c.status === 'pending')
      .map(taskLabel);
  }

  /**
   * `t` cannot be completed yet: it is pending and has open subtasks (a completed or deleted
   * task has nothing left to complete). What a row, the detail and its subtask list mark.
   */
  blocked(t: LocalTask): boolean {
    return t.status === 'pending' && isBlocked(this.facts(t));
  }

  /** Why `t` cannot be completed, naming its open subtasks (`blockedReason`). */
  reason(t: LocalTask): string {
    return blockedReason(taskLabel(t), this.facts(t), this.openLabels(t.uuid));
  }
}

/** Has open subtasks, so it cannot be completed yet (the backend's `is_blocked`). */
export const isBlocked = (f: SubtaskFacts): boolean => f.open > 0;

/** A row's progress, done of not deleted (`1/3`), or null for a task without subtasks. */
export function progressText(f: SubtaskFacts): string | null {
  const shown = f.done + f.open;
  return shown === 0 ? null : `${f.done}/${shown}`;
}

/** The row's marker for a blocked task: `blocked · 2 open`. */
export function blockedText(f: SubtaskFacts): string {
  return `blocked · ${f.open} open`;
}

/**
 * Why a task cannot be completed, in the backend's words: `DEV-3 has open subtasks (DEV-3.1,
 * ~ab12cd34); complete or delete them first`. Without the labels (not loaded yet) it counts.
 */
export function blockedReason(label: string, f: SubtaskFacts, openLabels: readonly string[]): string {
  const which = openLabels.length > 0 ? `open subtasks (${openLabels.join(', ')})` : plural(f.open, 'open subtask');
  return `${label} has ${which}; complete or delete them first`;
}

/**
 * The detail's "Add subtask" text read like quick capture: `+tag`, `due:` and `pri:` as there;
 * a `#PFX` stays in the description unless it is the parent's own project (a subtask is in its
 * parent's project, so there is nothing to choose). Null when no description is left.
 */
export function parseSubtask(text: string, parentProject: string): Omit<CreateInput, 'parent' | 'project'> | null {
  const p = parseCapture(text, [parentProject]);
  return p.description === '' ? null : captureFields(p);
}
