// What the user does to tasks: each command, its notice, and its entry on the undo stack. No
// DOM: tested against the fake backend in tests/actions.test.ts.
import type { Backend } from './backend';
import { toCmdError } from './backend';
import { movedText } from './moves';
import type { NoticeInput, Topic } from './notices';
import type { ConflictField, CreateInput, LocalTask, TaskPatch } from './types';
import { inversePatch, taskLabel, undoStep, UndoStack, type UndoEntry } from './undo';

type Commands =
  | 'createTask'
  | 'completeTask'
  | 'reopenTask'
  | 'deleteTask'
  | 'discardTask'
  | 'retryTask'
  | 'restoreConflict'
  | 'dismissConflict'
  | 'setTaskProject'
  | 'moveTask'
  | 'assignTask'
  | 'editTask';

export interface ActionHost {
  backend: Pick<Backend, Commands>;
  /** A task as a command answered it (applied like an event). */
  upsert(t: LocalTask): void;
  /** The task left this device. */
  remove(uuid: string): void;
  /** The loaded copy of a task, if any (names it as it is now: it may have its key since). */
  find(uuid: string): LocalTask | undefined;
  notify(n: NoticeInput): void;
  /** Something of this kind worked: an error notice about it can go. */
  settled(topic: Topic): void;
}

/** A task whose create the server refused has nowhere else to live: deleting it removes it. */
const onlyHere = (t: LocalTask): boolean => t.failure !== null && t.key === null;

export class TaskActions {
  readonly undo = new UndoStack(20);

  constructor(private host: ActionHost) {}

  private label(t: LocalTask): string {
    return taskLabel(this.host.find(t.uuid) ?? t);
  }

  /** Runs a command; a rejection becomes an error notice and `undefined`. */
  private async run<T>(what: string, f: () => Promise<T>, topic?: Topic): Promise<T | undefined> {
    try {
      return await f();
    } catch (e) {
      this.host.notify({ text: `${what}: ${toCmdError(e).message}`, tone: 'error', ...(topic ? { topic } : {}) });
      return undefined;
    }
  }

  private done(text: string, entry?: UndoEntry): void {
    this.host.notify({ text, tone: 'info', ...(entry ? { undoId: entry.id } : {}) });
  }

  async capture(input: CreateInput): Promise<LocalTask | null> {
    const t = await this.run('Not saved', () => this.host.backend.createTask(input), 'capture');
    if (t === undefined) return null;
    this.host.upsert(t);
    this.host.settled('capture');
    return t;
  }

  /** Adds a subtask under `parent` (it takes the parent's project); null when refused. */
  async addSubtask(parent: LocalTask, input: Omit<CreateInput, 'parent' | 'project'>): Promise<LocalTask | null> {
    const t = await this.run(
      'Subtask not saved',
      () => this.host.backend.createTask({ ...input, parent: parent.uuid }),
      'capture',
    );
    if (t === undefined) return null;
    this.host.upsert(t);
    this.host.settled('capture');
    return t;
  }

  /**
   * Completes a task. One with open subtasks is refused (`task_blocked`); the backend's message
   * names the task and its open subtasks, so it is the whole notice.
   */
  async complete(t: LocalTask): Promise<void> {
    let r: LocalTask;
    try {
      r = await this.host.backend.completeTask(t.uuid);
    } catch (e) {
      const err = toCmdError(e);
      const text = err.code === 'task_blocked' ? err.message : `Couldn't complete ${this.label(t)}: ${err.message}`;
      this.host.notify({ text, tone: 'error' });
      return;
    }
    this.host.upsert(r);
    this.done(`Completed ${taskLabel(r)}`, this.undo.push('complete', t));
  }

  /**
   * Assigns `t` to a member, or to nobody (`null`), undoably; a refusal (not in the team) is
   * the notice.
   */
  async assign(t: LocalTask, name: string | null): Promise<void> {
    const before = this.host.find(t.uuid) ?? t;
    const r = await this.run(`Couldn't assign ${this.label(t)}`, () => this.host.backend.assignTask(t.uuid, name));
    if (r === undefined) return;
    this.host.upsert(r);
    this.done(
      r.assignee ? `Assigned ${taskLabel(r)} to @${r.assignee}` : `${taskLabel(r)} is assigned to nobody`,
      this.undo.push('assign', before),
    );
  }

  async reopen(t: LocalTask): Promise<void> {
    const r = await this.run(`Couldn't reopen ${this.label(t)}`, () => this.host.backend.reopenTask(t.uuid));
    if (r === undefined) return;
    this.host.upsert(r);
    this.done(`Reopened ${taskLabel(r)}`, this.undo.push('reopen', t));
  }

  async toggleComplete(t: LocalTask): Promise<void> {
    return t.status === 'pending' ? this.complete(t) : this.reopen(t);
  }

  async delete(t: LocalTask): Promise<void> {
    const gone = onlyHere(t);
    const r = await this.run(`Couldn't delete ${this.label(t)}`, () => this.host.backend.deleteTask(t.uuid));
    if (r === undefined) return;
    if (gone || r === null) {
      this.host.remove(t.uuid);
      this.done(`Deleted ${this.label(t)} from this device`, this.undo.push('discard', t));
    } else {
      this.host.upsert(r);
      this.done(`Deleted ${taskLabel(r)}`, this.undo.push('delete', t));
    }
  }

  async discard(t: LocalTask): Promise<void> {
    const r = await this.run(`Couldn't discard ${this.label(t)}`, () => this.host.backend.discardTask(t.uuid));
    if (r === undefined) return;
    if (r === null) {
      this.host.remove(t.uuid);
      this.done(`Discarded ${this.label(t)}`, this.undo.push('discard', t));
    } else {
      // A keyed task: the refused change was dropped, the task stays as the server has it.
      this.host.upsert(r);
      this.done(`Discarded the refused change to ${taskLabel(r)}`);
    }
  }

  /** Sends a failed task again as it is. */
  async retry(t: LocalTask): Promise<void> {
    const r = await this.run(`Couldn't send ${this.label(t)} again`, () => this.host.backend.retryTask(t.uuid));
    if (r === undefined) return;
    this.host.upsert(r);
    this.done(`Sending ${taskLabel(r)} again`);
  }

  /**
   * Sends a failed or local task to `project`: moved there (`set_task_project`), unless the
   * project stays and the server's objection was not the project, when it is sent again as is.
   */
  async sendTo(t: LocalTask, project: string): Promise<void> {
    const asIs = !t.local && t.failure !== null && t.failure.fix !== 'project' && project === t.project;
    if (asIs) return this.retry(t);
    const r = await this.run(`Couldn't send ${this.label(t)} to ${project}`, () =>
      this.host.backend.setTaskProject(t.uuid, project),
    );
    if (r === undefined) return;
    this.host.upsert(r);
    this.done(project === t.project ? `Sending ${taskLabel(r)} again` : `Sending ${taskLabel(r)} to ${project}`);
  }

  /** Brings back the value another device's edit replaced (conflict `index` of the task). */
  async restoreConflict(t: LocalTask, index: number): Promise<void> {
    const c = t.conflicts?.[index];
    if (!c) return;
    const r = await this.run(`Couldn't restore the ${c.field} of ${this.label(t)}`, () =>
      this.host.backend.restoreConflict(t.uuid, index),
    );
    if (r === undefined) return;
    this.host.upsert(r);
    this.done(`Restored the other ${c.field} of ${taskLabel(r)}`);
  }

  /** Keeps the field as it is: its conflicts go. */
  async dismissConflict(t: LocalTask, field: ConflictField): Promise<void> {
    const r = await this.run(`Couldn't settle the ${field} of ${this.label(t)}`, () =>
      this.host.backend.dismissConflict(t.uuid, field),
    );
    if (r === undefined) return;
    this.host.upsert(r);
    this.done(`Kept the ${field} of ${taskLabel(r)}`);
  }

  /**
   * Moves a task to another project (`move_task`): the row shows the new project at once and a
   * numbered task's new key when the server answers. Not undoable: moving back would take yet
   * another number there (keys are never reused). A refusal (a subtask alone) is the notice.
   */
  async move(t: LocalTask, project: string): Promise<LocalTask | null> {
    const before = this.host.find(t.uuid) ?? t;
    const r = await this.run(`Couldn't move ${taskLabel(before)} to ${project}`, () => this.host.backend.moveTask(t.uuid, project));
    if (r === undefined) return null;
    this.host.upsert(r);
    this.done(movedText(before, r, project));
    return r;
  }

  /** Saves an edit; a failed task is sent again with it (the backend does that). */
  async save(t: LocalTask, patch: TaskPatch): Promise<boolean> {
    const r = await this.run(`Couldn't save ${this.label(t)}`, () => this.host.backend.editTask(t.uuid, patch), 'save');
    if (r === undefined) return false;
    this.saved(t, patch, r);
    return true;
  }

  /**
   * Saves one field of the detail pane (due date, priority). A refusal comes back as the
   * backend's message for the field to show beside itself, with no notice; success is saved
   * like `save` (a notice with Undo).
   */
  async saveField(t: LocalTask, patch: TaskPatch): Promise<string | null> {
    let r: LocalTask;
    try {
      r = await this.host.backend.editTask(t.uuid, patch);
    } catch (e) {
      return toCmdError(e).message;
    }
    this.saved(t, patch, r);
    return null;
  }

  /** `patch` applied to `t` gave `r`: shown, an earlier save error settled, undoable. */
  private saved(t: LocalTask, patch: TaskPatch, r: LocalTask): void {
    this.host.upsert(r);
    this.host.settled('save');
    const entry = this.undo.push('edit', t, inversePatch(t, patch));
    this.done(t.failure !== null ? 'Saved and sent again' : `Saved ${taskLabel(r)}`, entry);
  }

  /** Ctrl+Z: undoes the newest entry. */
  async undoLast(): Promise<void> {
    const e = this.undo.pop();
    if (e === null) this.done('Nothing to undo');
    else await this.apply(e);
  }

  /** A notice's Undo: that entry, if it is still on the stack. */
  async undoEntry(id: number): Promise<void> {
    const e = this.undo.take(id);
    if (e !== null) await this.apply(e);
  }

  private async apply(e: UndoEntry): Promise<void> {
    const step = undoStep(e, this.label(e.task));
    const b = this.host.backend;
    const r = await this.run("Couldn't undo", () => {
      switch (step.call) {
        case 'reopen':
          return b.reopenTask(step.id);
        case 'complete':
          return b.completeTask(step.id);
        case 'edit':
          return b.editTask(step.id, step.patch);
        case 'assign':
          return b.assignTask(step.id, step.name);
        case 'create':
          return b.createTask(step.input);
      }
    });
    if (r === undefined) return;
    this.host.upsert(r);
    this.done(step.message);
  }
}
