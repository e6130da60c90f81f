// The task actions and their undo, against the fake backend (the command contract).
import { describe, expect, it } from 'vitest';
import { TaskActions, type ActionHost } from '../src/lib/actions';
import type { NoticeInput, Topic } from '../src/lib/notices';
import type { ConflictField, CreateInput, LocalTask, TaskPatch } from '../src/lib/types';
import { FakeBackend } from '../src/dev/fake-backend';
import { failure } from './fixtures';

function setup() {
  const fake = new FakeBackend(() => {});
  const calls: string[] = [];
  const h = <T>(cmd: string, args: Record<string, unknown> = {}) => {
    calls.push(cmd);
    try {
      return Promise.resolve(fake.handle(cmd, args) as T);
    } catch (e) {
      return Promise.reject(e);
    }
  };
  const tasks = new Map<string, LocalTask>();
  const notices: NoticeInput[] = [];
  const settled: Topic[] = [];
  const removed: string[] = [];
  const host: ActionHost = {
    backend: {
      createTask: (input: CreateInput) => h<LocalTask>('create_task', { input }),
      completeTask: (id: string) => h<LocalTask>('complete_task', { id }),
      reopenTask: (id: string) => h<LocalTask>('reopen_task', { id }),
      deleteTask: (id: string) => h<LocalTask | null>('delete_task', { id }),
      discardTask: (id: string) => h<LocalTask | null>('discard_task', { id }),
      retryTask: (id: string) => h<LocalTask>('retry_task', { id }),
      restoreConflict: (id: string, index: number) => h<LocalTask>('restore_conflict', { id, index }),
      dismissConflict: (id: string, field: ConflictField) => h<LocalTask>('dismiss_conflict', { id, field }),
      setTaskProject: (id: string, project: string) => h<LocalTask>('set_task_project', { id, project }),
      moveTask: (id: string, project: string) => h<LocalTask>('move_task', { id, project }),
      editTask: (id: string, patch: TaskPatch) => h<LocalTask>('edit_task', { id, patch }),
      assignTask: (id: string, name: string | null) => h<LocalTask>('assign_task', { id, name }),
    },
    upsert: (t) => void tasks.set(t.uuid, t),
    remove: (uuid) => {
      removed.push(uuid);
      tasks.delete(uuid);
    },
    find: (uuid) => tasks.get(uuid),
    notify: (n) => void notices.push(n),
    settled: (topic) => void settled.push(topic),
  };
  const a = new TaskActions(host);
  const add = async (input: CreateInput) => (await a.capture(input)) as LocalTask;
  const last = () => notices.at(-1);
  const get = (uuid: string) => fake.handle('resolve_task', { query: uuid }) as LocalTask;
  return { fake, a, add, calls, notices, last, settled, removed, tasks, get };
}

describe('TaskActions', () => {
  it('restores a value another device replaced, or keeps the current one', async () => {
    const s = setup();
    s.fake.seed(3);
    s.fake.seedConflicts(2);
    const [a, b] = (s.fake.handle('list_tasks', {}) as LocalTask[]).filter((t) => t.conflicts?.length);
    if (!a || !b) throw new Error('two tasks with a conflict');
    const other = a.conflicts?.[0]?.value;
    await s.a.restoreConflict(a, 0);
    expect(s.get(a.uuid).description).toBe(other);
    expect(s.get(a.uuid).conflicts).toEqual([]);
    expect(s.last()).toMatchObject({ tone: 'info', text: `Restored the other description of ${a.key}` });
    const kept = b.description;
    await s.a.dismissConflict(b, 'description');
    expect(s.get(b.uuid)).toMatchObject({ description: kept, conflicts: [] });
    await s.a.dismissConflict(b, 'description');
    expect(s.last()).toMatchObject({ tone: 'error', text: `Couldn't settle the description of ${b.key}: ${b.key} has no conflict on its description` });
  });

  it('capture saves and settles an earlier capture error', async () => {
    const s = setup();
    const t = await s.add({ description: 'One', project: 'SYN' });
    expect(t.project).toBe('SYN');
    expect(s.settled).toEqual(['capture']);
  });

  it('a capture assigns; assign changes it, clears it, and refuses someone not in the team', async () => {
    const s = setup();
    s.fake.handle('join_team', { input: { server_url: 'http://x', code: '7KQ2-M9XD-4TRA-Z0PB', name: 'bob' } });
    const t = await s.add({ description: 'Review notes', project: 'SYN', assignee: 'bob' });
    expect(t.assignee).toBe('bob');
    await s.a.assign(t, 'taken');
    expect(s.get(t.uuid).assignee).toBe('taken');
    expect(s.last()?.text).toMatch(/^Assigned (SYN-\d+|~[0-9a-f]{8}) to @taken$/);
    await s.a.assign(t, null);
    expect(s.get(t.uuid).assignee).toBeNull();
    await s.a.assign(t, 'carol');
    expect(s.get(t.uuid).assignee).toBeNull();
    expect(s.last()?.tone).toBe('error');
    expect(s.last()?.text).toMatch(/@carol is not a member of the team \(@taken, @bob\)/);
  });

  it('an assignment is undone to the assignee before it, or to nobody', async () => {
    const s = setup();
    s.fake.handle('join_team', { input: { server_url: 'http://x', code: '7KQ2-M9XD-4TRA-Z0PB', name: 'bob' } });
    const t = await s.add({ description: 'Review notes', project: 'SYN' });
    await s.a.assign(t, 'bob');
    expect(s.last()?.undoId).toBeDefined();
    await s.a.assign(s.get(t.uuid), 'taken');
    await s.a.undoLast();
    expect(s.get(t.uuid).assignee).toBe('bob');
    expect(s.last()?.text).toMatch(/ is assigned to @bob again$/);
    await s.a.undoLast();
    expect(s.get(t.uuid).assignee).toBeNull();
    expect(s.last()?.text).toMatch(/ is assigned to nobody again$/);
    // A refused assignment is not on the stack.
    await s.a.assign(s.get(t.uuid), 'carol');
    expect(s.a.undo.size).toBe(0);
  });

  it('a capture the backend refuses is an error notice about capture', async () => {
    const s = setup();
    expect(await s.a.capture({ description: '  ' })).toBeNull();
    expect(s.last()).toMatchObject({ tone: 'error', topic: 'capture', text: 'Not saved: the description is empty' });
  });

  it('a due date the backend cannot read is refused in its own words; nothing is saved', async () => {
    const s = setup();
    expect(await s.a.capture({ description: 'Pay rent', project: 'SYN', due: 'soon' })).toBeNull();
    expect(s.last()).toMatchObject({ tone: 'error', topic: 'capture' });
    expect(s.last()?.text).toMatch(/^Not saved: 'soon' is not a date: use a date \(2026-12-01/);
    expect(s.fake.handle('list_tasks', { filter: { status: 'all' } })).toEqual([]);
  });

  it('saveField sets a due date and priority; Ctrl+Z puts the old ones back', async () => {
    const s = setup();
    const t = await s.add({ description: 'Pay rent', project: 'SYN', due: '2026-12-01', priority: 'h' });
    expect(t.priority).toBe('H');
    expect(await s.a.saveField(t, { priority: 'L' })).toBeNull();
    expect(s.get(t.uuid).priority).toBe('L');
    expect(s.last()).toMatchObject({ tone: 'info', text: expect.stringMatching(/^Saved ~/) });
    expect(await s.a.saveField(s.get(t.uuid), { due: '' })).toBeNull();
    expect(s.get(t.uuid).due).toBeNull();
    await s.a.undoLast();
    expect(s.get(t.uuid).due).toBe(t.due);
    await s.a.undoLast();
    expect(s.get(t.uuid).priority).toBe('H');
  });

  it('saveField answers a refusal with the message and no notice; the task is unchanged', async () => {
    const s = setup();
    const t = await s.add({ description: 'Pay rent', project: 'SYN', due: 'tomorrow' });
    const before = s.notices.length;
    expect(await s.a.saveField(t, { due: 'soon' })).toMatch(/^'soon' is not a date/);
    expect(s.notices.length).toBe(before);
    expect(s.get(t.uuid).due).toBe(t.due);
    expect(s.a.undo.size).toBe(0);
  });

  it.each([
    ['complete, then Ctrl+Z reopens', 'pending', 'complete', 'completed', 'pending', /^Reopened ~/],
    ['reopen, then Ctrl+Z completes again', 'completed', 'reopen', 'pending', 'completed', /^Completed ~/],
    ['delete, then Ctrl+Z restores', 'pending', 'delete', 'deleted', 'pending', /^Restored ~/],
  ] as const)('%s', async (_n, from, action, after, undone, message) => {
    const s = setup();
    let t = await s.add({ description: 'x', project: 'SYN' });
    if (from === 'completed') t = await s.fake.handle('complete_task', { id: t.uuid }) as LocalTask;
    await s.a[action](t);
    expect(s.get(t.uuid).status).toBe(after);
    expect(s.last()?.undoId).toBeDefined();
    await s.a.undoLast();
    expect(s.get(t.uuid).status).toBe(undone);
    expect(s.last()?.text).toMatch(message);
  });

  it('the notice Undo undoes its own action even after another one', async () => {
    const s = setup();
    const one = await s.add({ description: 'one', project: 'SYN' });
    const two = await s.add({ description: 'two', project: 'SYN' });
    await s.a.complete(one);
    const undoOne = s.last()?.undoId as number;
    await s.a.complete(two);
    await s.a.undoEntry(undoOne);
    expect(s.get(one.uuid).status).toBe('pending');
    expect(s.get(two.uuid).status).toBe('completed');
    await s.a.undoEntry(undoOne); // gone from the stack: nothing happens
    await s.a.undoLast();
    expect(s.get(two.uuid).status).toBe('pending');
  });

  it('an edit, then Ctrl+Z puts the previous values back', async () => {
    const s = setup();
    const t = await s.add({ description: 'Old', project: 'SYN', tags: ['a'] });
    expect(await s.a.save(t, { description: 'New', tags: ['b'] })).toBe(true);
    expect(s.last()?.text).toMatch(/^Saved ~/);
    expect(s.settled).toContain('save');
    await s.a.undoLast();
    expect(s.get(t.uuid)).toMatchObject({ description: 'Old', tags: ['a'] });
    expect(s.last()?.text).toMatch(/^Undid the edit of ~/);
  });

  it.each([
    ['an edit', (a: TaskActions, t: LocalTask) => a.save(t, { description: 'Short' })],
    ['a due date in the detail', (a: TaskActions, t: LocalTask) => a.saveField(t, { due: '2026-12-01' })],
  ])('saving a failed task sends it again: %s', async (_n, save) => {
    const s = setup();
    const t = await s.add({ description: 'Too long', project: 'SYN' });
    s.fake.refuse(t.uuid, failure('fields'));
    await save(s.a, s.get(t.uuid));
    expect(s.last()?.text).toBe('Saved and sent again');
    expect(s.get(t.uuid).failure).toBeNull();
  });

  it('deleting a task the server refused removes it; Ctrl+Z creates it again', async () => {
    const s = setup();
    const t = await s.add({ description: 'Roadmap', project: 'ZZZ', notes: 'n', tags: ['plan'] });
    s.fake.refuse(t.uuid, failure('project'));
    await s.a.delete(s.get(t.uuid));
    expect(s.removed).toEqual([t.uuid]);
    expect(() => s.get(t.uuid)).toThrow();
    await s.a.undoLast();
    expect(s.calls.at(-1)).toBe('create_task');
    expect(s.last()?.text).toBe('Restored as a new local task');
    const back = [...s.tasks.values()].find((x) => x.description === 'Roadmap' && x.uuid !== t.uuid);
    expect(back).toMatchObject({ project: 'ZZZ', notes: 'n', tags: ['plan'], failure: null });
  });

  it('discarding an inbox task removes it; Ctrl+Z brings it back to the inbox', async () => {
    const s = setup();
    s.fake.settings.project = null;
    const t = await s.add({ description: 'Idea' });
    expect(t).toMatchObject({ project: 'INBOX', local: true });
    await s.a.discard(t);
    expect(s.removed).toEqual([t.uuid]);
    expect(s.last()?.undoId).toBeDefined();
    await s.a.undoLast();
    expect([...s.tasks.values()].find((x) => x.description === 'Idea' && x.uuid !== t.uuid)).toMatchObject({ local: true });
  });

  it('discarding the refused change of a keyed task keeps the task, with nothing to undo', async () => {
    const s = setup();
    s.fake.seed(1, 0);
    const t = s.fake.handle('list_tasks', { filter: { status: 'all' } }) as LocalTask[];
    const keyed = t[0] as LocalTask;
    s.fake.refuse(keyed.uuid, failure('fields'));
    await s.a.discard(s.get(keyed.uuid));
    expect(s.removed).toEqual([]);
    expect(s.get(keyed.uuid).failure).toBeNull();
    await s.a.undoLast();
    expect(s.last()?.text).toBe('Nothing to undo');
  });

  it.each([
    ['wrong project: moved to the chosen one', 'project', 'OPS', 'set_task_project', 'OPS', /to OPS$/],
    ['server trouble, same project: sent again as is', 'retry', 'SYN', 'retry_task', 'SYN', /again$/],
    ['server trouble, another project: moved', 'retry', 'OPS', 'set_task_project', 'OPS', /to OPS$/],
  ] as const)('sendTo, %s', async (_n, fix, project, command, want, message) => {
    const s = setup();
    const t = await s.add({ description: 'x', project: 'SYN' });
    s.fake.refuse(t.uuid, failure(fix));
    await s.a.sendTo(s.get(t.uuid), project);
    expect(s.calls.at(-1)).toBe(command);
    expect(s.get(t.uuid)).toMatchObject({ project: want, failure: null, local: false });
    expect(s.last()?.text).toMatch(message);
  });

  it('sendTo on an inbox task moves it out of the inbox', async () => {
    const s = setup();
    s.fake.settings.project = null;
    const t = await s.add({ description: 'Idea' });
    await s.a.sendTo(t, 'SYN');
    expect(s.get(t.uuid)).toMatchObject({ project: 'SYN', local: false });
  });

  it('a subtask is added under its parent, in its project; the parent cannot be completed until it is done', async () => {
    const s = setup();
    const launch = await s.add({ description: 'Launch', project: 'OPS' });
    const post = (await s.a.addSubtask(launch, { description: 'Write the post', tags: ['blog'] })) as LocalTask;
    expect(post).toMatchObject({ parent: launch.uuid, project: 'OPS', tags: ['blog'] });
    expect(s.tasks.get(post.uuid)).toEqual(post); // in the list at once
    expect(s.settled).toContain('capture');
    await s.a.complete(s.get(launch.uuid));
    // The backend's words are the whole notice: they name the task and what holds it.
    const short = '~' + post.uuid.replace(/-/g, '').slice(0, 8);
    const label = '~' + launch.uuid.replace(/-/g, '').slice(0, 8);
    expect(s.last()).toEqual({ tone: 'error', text: `${label} has open subtasks (${short}); complete or delete them first` });
    expect(s.get(launch.uuid).status).toBe('pending');
    expect(s.a.undo.size).toBe(0);
    await s.a.complete(post);
    await s.a.complete(s.get(launch.uuid));
    expect(s.get(launch.uuid).status).toBe('completed');
  });

  it('a subtask the backend refuses is an error notice about capture', async () => {
    const s = setup();
    const done = await s.add({ description: 'Done already', project: 'SYN' });
    await s.a.complete(done);
    expect(await s.a.addSubtask(s.get(done.uuid), { description: 'too late' })).toBeNull();
    expect(s.last()).toMatchObject({ tone: 'error', topic: 'capture', text: expect.stringMatching(/^Subtask not saved: parent: ~\w+ is completed/) });
  });

  it('a rejection is an error notice with the backend message; nothing goes on the undo stack', async () => {
    const s = setup();
    const t = await s.add({ description: 'x', project: 'SYN' });
    await s.a.complete({ ...t, uuid: 'no-such-task' });
    expect(s.last()).toMatchObject({ tone: 'error', text: "Couldn't complete ~nosuchta: No task no-such-task" });
    expect(s.a.undo.size).toBe(0);
  });
});

describe('TaskActions: moves', () => {
  /** Online with a server, the fake server answering at once. */
  async function online() {
    const s = setup();
    s.fake.latencyMs = 1;
    s.fake.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    s.fake.seed(3); // OPS-1 (done), SYN-1, SYN-2
    s.fake.setOnline(true);
    await settle();
    return s;
  }
  const settle = () => new Promise((r) => setTimeout(r, 40));

  it('a numbered task moves at once and gets the next key there when the server answers; no undo', async () => {
    const s = await online();
    const t = s.get('SYN-2');
    const r = (await s.a.move(t, 'OPS')) as LocalTask;
    expect(r).toMatchObject({ uuid: t.uuid, project: 'OPS', key: 'SYN-2' });
    expect(s.tasks.get(t.uuid)).toEqual(r); // the row shows the project change at once
    expect(s.last()).toEqual({ tone: 'info', text: 'Moving SYN-2 to OPS: its new key comes when the server answers' });
    expect(s.a.undo.size).toBe(0);
    await settle();
    expect(s.get(t.uuid)).toMatchObject({ key: 'OPS-2', project: 'OPS', previous_keys: ['SYN-2'] });
    expect(s.get('syn 2').uuid).toBe(t.uuid); // the old key still finds it
  });

  it('a subtask alone is refused in words; a provisional task just changes project', async () => {
    const s = await online();
    const parent = s.get('SYN-2');
    const sub = (await s.a.addSubtask(parent, { description: 'Its subtask' })) as LocalTask;
    await s.a.move(sub, 'OPS');
    expect(s.last()).toEqual({ tone: 'error', text: `Couldn't move ${'~' + sub.uuid.replace(/-/g, '').slice(0, 8)} to OPS: a subtask is in its parent's project: change the parent's project and its subtasks go with it` });
    s.fake.setOnline(false);
    const draft = await s.add({ description: 'Draft', project: 'SYN' });
    const moved = (await s.a.move(draft, 'OPS')) as LocalTask;
    expect(moved).toMatchObject({ project: 'OPS', key: null });
    expect(s.last()?.text).toMatch(/^Moved ~\w{8} to OPS$/);
  });
});
