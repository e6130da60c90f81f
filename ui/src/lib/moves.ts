// Moving a task to another project: what the row and the detail say while the move is on its
// way, where a task can go, and why a subtask cannot go alone. Pure: tested in
// tests/moves.test.ts.
//
// A numbered task that moves keeps its key here until the server answers with the next number
// of the new project (`move_task`); meanwhile its `project` is already the new one, so a key
// whose prefix is not the task's project is a move on its way. Every key it had stays in
// `previous_keys` and still finds it.
import type { LocalTask, Project } from './types';
import { taskLabel } from './undo';

/** The prefix of a key: `SYN` for `SYN-42` and `SYN-42.1`. */
export function keyPrefix(key: string): string {
  const at = key.indexOf('-');
  return at < 0 ? key : key.slice(0, at);
}

/**
 * The project a numbered task is on its way to (its key is still the old project's, the server
 * has not answered yet); null when it is not moving. A move the server refused is not on its
 * way: the task keeps its key and says why (`failure`).
 */
export function movingTo(t: Pick<LocalTask, 'key' | 'project' | 'failure'>): string | null {
  if (t.key === null || t.failure !== null) return null;
  return keyPrefix(t.key) === t.project ? null : t.project;
}

/**
 * Why this task cannot be moved from here, or null when it can: a subtask goes with its parent
 * (the backend refuses it alone too, `invalid`).
 */
export function moveRefusal(t: LocalTask, parent: LocalTask | null): string | null {
  if (t.parent === null) return null;
  const up = parent ?? { key: null, uuid: t.parent };
  return `${taskLabel(t)} is a subtask: it moves with its parent (move ${taskLabel(up)})`;
}

/** One entry of the Move to… menu: a server project, the task's own one disabled. */
export interface MoveTarget {
  project: Project;
  /** The task is there already. */
  here: boolean;
}

/** The Move to… menu: the server's projects, the one the task is in marked `here`. */
export function moveTargets(projects: readonly Project[], t: Pick<LocalTask, 'project'>): MoveTarget[] {
  return projects.map((project) => ({ project, here: project.prefix === t.project }));
}

/** The old keys the detail lists after `Previously`: `DEV-3`, `DEV-3, OPS-1` (oldest first); null when none. */
export function previouslyText(t: Pick<LocalTask, 'previous_keys'>): string | null {
  const keys = t.previous_keys ?? [];
  return keys.length === 0 ? null : keys.join(', ');
}

/** The notice after a move: a numbered task gets its key when the server answers. */
export function movedText(before: LocalTask, after: LocalTask, project: string): string {
  if (before.key === null) return `Moved ${taskLabel(after)} to ${project}`;
  return `Moving ${before.key} to ${project}: its new key comes when the server answers`;
}
