// The preview's fake backend keeps to the command contract the UI relies on.
import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../src/dev/fake-backend';
import type { DesktopPrefs, LocalTask, Project, SyncStatus, TaskPage } from '../src/lib/types';

function fake() {
  const events: [string, unknown][] = [];
  const f = new FakeBackend((e, p) => events.push([e, p]));
  return { f, events };
}

describe('FakeBackend', () => {
  it('creates provisional tasks, newest first in list_tasks', () => {
    const { f } = fake();
    f.handle('create_task', { input: { description: 'one' } });
    f.handle('create_task', { input: { description: 'two' } });
    const list = f.handle('list_tasks', { filter: { status: 'all' } }) as LocalTask[];
    expect(list.map((t) => t.description)).toEqual(['two', 'one']);
    expect(list.every((t) => t.key === null && t.sync_state === 'provisional')).toBe(true);
  });

  it('refuses an import in words; an imported task is found by its key in its tracker', () => {
    const { f } = fake();
    for (const cmd of ['import_export', 'import_progress']) {
      expect(() => f.handle(cmd, {})).toThrow(expect.objectContaining({ code: 'unsupported', message: expect.stringMatching(/cannot import/) }));
    }
    f.seed(5);
    f.seedImported(2);
    const eng2 = f.handle('resolve_task', { query: 'eng 2' }) as LocalTask;
    expect(eng2.origin).toEqual({ tracker: 'jira', key: 'ENG-2' });
    expect(eng2.key).toMatch(/^(SYN|OPS)-\d+$/);
    expect(() => f.handle('resolve_task', { query: 'ENG-3' })).toThrow(expect.objectContaining({ code: 'not_found' }));
  });

  it('resolve_task rejects {code: not_found, message: "No task SYN-99"}', () => {
    const { f } = fake();
    expect(() => f.handle('resolve_task', { query: 'syn 99' })).toThrow(
      expect.objectContaining({ code: 'not_found', message: 'No task SYN-99' }),
    );
  });

  it('numbers waiting tasks when online and sends task-changed events', async () => {
    const { f, events } = fake();
    f.latencyMs = 1;
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    const t = f.handle('create_task', { input: { description: 'x' } }) as LocalTask;
    f.setOnline(true);
    await new Promise((r) => setTimeout(r, 30));
    const changed = events.filter(([e]) => e === 'task-changed').map(([, p]) => p as LocalTask);
    expect(changed.at(-1)).toMatchObject({ uuid: t.uuid, key: 'SYN-1', sync_state: 'synced' });
    expect(f.handle('resolve_task', { query: 'syn1' })).toMatchObject({ uuid: t.uuid });
    expect(f.handle('get_settings', {})).toMatchObject({ token_set: true, token_hint: '…9f3a' });
  });

  it('list_tasks_page gives the same order as list_tasks, in pages, with the total', () => {
    const { f } = fake();
    f.seed(450, 10, 3, 2);
    const all = f.handle('list_tasks', { filter: { status: 'all' } }) as LocalTask[];
    const pages: LocalTask[] = [];
    for (let offset = 0; ; offset += 200) {
      const p = f.handle('list_tasks_page', { offset, limit: 200 }) as TaskPage;
      expect(p.total).toBe(455);
      if (p.tasks.length === 0) break;
      pages.push(...p.tasks);
    }
    expect(pages.map((t) => t.uuid)).toEqual(all.map((t) => t.uuid));
  });

  it('with no project and no default a task goes to the local inbox; send_inbox moves them all', () => {
    const { f } = fake();
    f.settings.project = null;
    const a = f.handle('create_task', { input: { description: 'a' } }) as LocalTask;
    f.handle('create_task', { input: { description: 'b #INBOX', project: 'INBOX' } });
    expect(a).toMatchObject({ project: 'INBOX', local: true, failure: null });
    expect((f.handle('sync_status', {}) as SyncStatus).local).toBe(2);
    expect((f.handle('list_projects', {}) as Project[]).map((p) => p.prefix)).toEqual(['INBOX']);
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    expect(f.handle('send_inbox', { project: 'SYN' })).toBe(2);
    const s = f.handle('sync_status', {}) as SyncStatus;
    expect([s.local, s.pending]).toEqual([0, 2]);
  });

  it('status counts tasks: pending, failed, local; a problem in words when offline', () => {
    const { f } = fake();
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    f.seed(5, 2, 1, 3);
    const s = f.handle('sync_status', {}) as SyncStatus;
    expect(s).toMatchObject({ pending: 2, failed: 3, local: 1, in_flight: 0 });
    expect(s.problem?.summary).toMatch(/^Can't reach the server/);
  });

  it('the server refuses a task for a project it lacks; set_task_project moves and sends it', async () => {
    const { f, events } = fake();
    f.latencyMs = 1;
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    const t = f.handle('create_task', { input: { description: 'x', project: 'ZZZ' } }) as LocalTask;
    f.setOnline(true);
    await new Promise((r) => setTimeout(r, 20));
    const refused = f.handle('resolve_task', { query: t.uuid }) as LocalTask;
    expect(refused.failure).toMatchObject({ fix: 'project', code: 'project_not_found' });
    f.handle('set_task_project', { id: t.uuid, project: 'OPS' });
    await new Promise((r) => setTimeout(r, 20));
    expect(f.handle('resolve_task', { query: t.uuid })).toMatchObject({ key: 'OPS-1', failure: null });
    expect(events.some(([e]) => e === 'sync-status')).toBe(true);
  });

  it('numbers a subtask under its parent once the parent has its key (SYN-1.1); a parent with open subtasks is blocked', async () => {
    const { f } = fake();
    f.latencyMs = 1;
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    const p = f.handle('create_task', { input: { description: 'Launch' } }) as LocalTask;
    const c = f.handle('create_task', { input: { description: 'Post', parent: p.uuid } }) as LocalTask;
    const cc = f.handle('create_task', { input: { description: 'Links', parent: c.uuid } }) as LocalTask;
    expect(c).toMatchObject({ parent: p.uuid, project: 'SYN', key: null });
    expect(() => f.handle('create_task', { input: { description: 'x', parent: p.uuid, project: 'OPS' } })).toThrow(
      expect.objectContaining({ code: 'invalid' }),
    );
    f.setOnline(true);
    await new Promise((r) => setTimeout(r, 400)); // the fake server answers one task every 150 ms
    const get = (t: LocalTask) => f.handle('resolve_task', { query: t.uuid }) as LocalTask;
    expect([get(p).key, get(c).key, get(cc).key]).toEqual(['SYN-1', 'SYN-1.1', 'SYN-1.1.1']);
    expect(get(p)).toMatchObject({ children: 1, open_children: 1 });
    expect(() => f.handle('complete_task', { id: p.uuid })).toThrow(
      expect.objectContaining({ code: 'task_blocked', message: 'SYN-1 has open subtasks (SYN-1.1); complete or delete them first' }),
    );
    f.handle('complete_task', { id: cc.uuid });
    f.handle('complete_task', { id: c.uuid });
    expect(f.handle('complete_task', { id: p.uuid })).toMatchObject({ status: 'completed', open_children: 0 });
  });

  it("a subtask's change sends its parent again with the counts as they are now; a discard does not", () => {
    const { f, events } = fake();
    const sent = () => events.filter(([e]) => e === 'task-changed').map(([, p]) => p as LocalTask);
    const p = f.handle('create_task', { input: { description: 'Launch' } }) as LocalTask;
    const c = f.handle('create_task', { input: { description: 'Post', parent: p.uuid } }) as LocalTask;
    expect(sent().at(-1)).toMatchObject({ uuid: p.uuid, children: 1, open_children: 1 });
    f.handle('complete_task', { id: c.uuid });
    expect(sent().slice(-2)).toMatchObject([
      { uuid: c.uuid, status: 'completed' },
      { uuid: p.uuid, children: 1, open_children: 0 },
    ]);
    const d = f.handle('create_task', { input: { description: 'Demo', parent: p.uuid } }) as LocalTask;
    const before = sent().length;
    expect(f.handle('discard_task', { id: d.uuid })).toBeNull();
    expect(sent().length).toBe(before);
    expect(events.at(-2)).toEqual(['task-removed', { uuid: d.uuid }]);
  });

  it.each([
    [0, 0],
    [2, 7],
  ])('seedSubtasks(%i) adds %i subtasks', (n, added) => {
    const { f } = fake();
    f.seed(10, 0);
    f.seedSubtasks(n);
    const all = f.handle('list_tasks', { filter: { status: 'all' } }) as LocalTask[];
    expect(all.length).toBe(10 + added);
    expect(all.filter((t) => t.parent !== null).length).toBe(added);
  });

  it('a subtask whose parent the server refused is held, and says by whom', async () => {
    const { f } = fake();
    f.latencyMs = 1;
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    const p = f.handle('create_task', { input: { description: 'Roadmap', project: 'ZZZ' } }) as LocalTask;
    const c = f.handle('create_task', { input: { description: 'Q1', parent: p.uuid } }) as LocalTask;
    f.setOnline(true);
    await new Promise((r) => setTimeout(r, 40));
    const held = f.handle('resolve_task', { query: c.uuid }) as LocalTask;
    const label = '~' + p.uuid.replace(/-/g, '').slice(0, 8);
    expect(held).toMatchObject({ key: null, held_by: label, failure: null });
    expect(held.waiting?.reason).toMatch(new RegExp(`^waiting for ${label}, a task above it that the server refused`));
  });

  it('discard_task and delete_task of a refused task remove it, with a task-removed event', () => {
    const { f, events } = fake();
    for (const cmd of ['discard_task', 'delete_task']) {
      const t = f.handle('create_task', { input: { description: cmd, project: 'ZZZ' } }) as LocalTask;
      f.refuse(t.uuid, { summary: 's', detail: 'd', code: null, fix: 'project' });
      expect(f.handle(cmd, { id: t.uuid })).toBeNull();
      expect(events.at(-2)).toEqual(['task-removed', { uuid: t.uuid }]);
      expect(() => f.handle('resolve_task', { query: t.uuid })).toThrow();
    }
  });

  it('move_task: a numbered task and its subtasks get new keys there, old keys still find them; a subtask alone is refused', async () => {
    const { f, events } = fake();
    f.latencyMs = 1;
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    f.setOnline(true);
    const p = f.handle('create_task', { input: { description: 'Launch', project: 'SYN' } }) as LocalTask;
    const c = f.handle('create_task', { input: { description: 'Post', parent: p.uuid } }) as LocalTask;
    await new Promise((r) => setTimeout(r, 400));
    const get = (q: string) => f.handle('resolve_task', { query: q }) as LocalTask;
    expect([get(p.uuid).key, get(c.uuid).key]).toEqual(['SYN-1', 'SYN-1.1']);
    expect(() => f.handle('move_task', { id: c.uuid, project: 'OPS' })).toThrow(
      expect.objectContaining({ code: 'invalid', message: 'SYN-1.1 is a subtask: it moves with its parent, not alone' }),
    );
    expect(() => f.handle('move_task', { id: p.uuid, project: 'syn' })).toThrow(expect.objectContaining({ message: 'SYN-1 is in SYN already' }));
    const moved = f.handle('move_task', { id: p.uuid, project: 'ops' }) as LocalTask;
    expect(moved).toMatchObject({ project: 'OPS', key: 'SYN-1', waiting: { state: 'pending' } });
    await new Promise((r) => setTimeout(r, 50));
    expect(get(p.uuid)).toMatchObject({ key: 'OPS-1', previous_keys: ['SYN-1'], waiting: null });
    expect(get(c.uuid)).toMatchObject({ key: 'OPS-1.1', project: 'OPS', previous_keys: ['SYN-1.1'] });
    expect(get('syn-1').uuid).toBe(p.uuid);
    const sent = events.filter(([e]) => e === 'task-changed').map(([, t]) => (t as LocalTask).key);
    expect(sent).toContain('OPS-1.1'); // the subtask's new key is sent too
    // A move to a project the server lacks is refused there; the task keeps its key.
    f.handle('move_task', { id: p.uuid, project: 'ZZZ' });
    await new Promise((r) => setTimeout(r, 50));
    expect(get(p.uuid)).toMatchObject({ key: 'OPS-1', project: 'ZZZ', failure: { code: 'project_not_found' } });
  });

  it('create_project: checked as the server checks it; a taken prefix is refused; the new project is listed and numbers tasks', async () => {
    const { f } = fake();
    f.latencyMs = 1;
    expect(() => f.handle('create_project', { name: 'Web', prefix: 'WEB' })).toThrow(expect.objectContaining({ code: 'not_logged_in' }));
    f.handle('save_settings', { settings: { server_url: 'http://127.0.0.1:1', token: 'cs_abcd9f3a' } });
    expect(() => f.handle('create_project', { name: 'Web', prefix: 'W-B' })).toThrow(
      expect.objectContaining({ code: 'invalid', message: 'invalid prefix "W-B": a prefix is 2-10 characters, a letter first, then letters or digits (e.g. SYN)' }),
    );
    expect(() => f.handle('create_project', { name: 'Mine', prefix: 'inbox' })).toThrow(
      expect.objectContaining({ code: 'invalid', message: "INBOX is this device's inbox: no server project can take its name" }),
    );
    expect(() => f.handle('create_project', { name: 'Again', prefix: 'syn' })).toThrow(
      expect.objectContaining({ code: 'prefix_taken', message: 'prefix SYN is taken by another project' }),
    );
    expect(f.handle('create_project', { name: 'Website', prefix: 'web' })).toEqual({ prefix: 'WEB', name: 'Website', local: false });
    expect(f.handle('create_project', { name: ' ', prefix: 'Dev' })).toEqual({ prefix: 'DEV', name: 'DEV', local: false });
    expect(() => f.handle('create_project', { name: 'Dev again', prefix: 'DEV' })).toThrow(
      expect.objectContaining({ code: 'prefix_taken', message: 'prefix DEV is taken by another project' }),
    );
    expect((f.handle('list_projects', {}) as Project[]).map((p) => p.prefix)).toEqual(['SYN', 'OPS', 'WEB', 'DEV']);
    const t = f.handle('create_task', { input: { description: 'Launch the site', project: 'WEB' } }) as LocalTask;
    f.setOnline(true);
    await new Promise((r) => setTimeout(r, 30));
    expect((f.handle('resolve_task', { query: t.uuid }) as LocalTask).key).toBe('WEB-1');
  });

  it('desktop prefs: read, saved together, a shortcut it cannot register refused with nothing saved', () => {
    const { f } = fake();
    const before = f.handle('get_desktop_prefs', {}) as DesktopPrefs;
    expect(before).toEqual({ close_to_tray: false, capture_shortcut: 'Ctrl+Alt+Space', notify_failures: true, notify_keyed: true });
    const next = { close_to_tray: true, capture_shortcut: ' Super+Shift+N ', notify_failures: false, notify_keyed: false };
    expect(f.handle('save_desktop_prefs', { prefs: next })).toEqual({ ...next, capture_shortcut: 'Super+Shift+N' });
    for (const bad of ['Space', 'Ctrl+', 'Ctrl+Alt', 'Ctrl+A+B']) {
      expect(() => f.handle('save_desktop_prefs', { prefs: { ...next, capture_shortcut: bad, close_to_tray: false } })).toThrow(
        expect.objectContaining({ code: 'invalid', message: expect.stringContaining(`"${bad}" is not a shortcut`) }),
      );
    }
    expect(f.handle('get_desktop_prefs', {})).toMatchObject({ close_to_tray: true, capture_shortcut: 'Super+Shift+N' });
    // An empty shortcut is none.
    expect(f.handle('save_desktop_prefs', { prefs: { ...next, capture_shortcut: '' } })).toMatchObject({ capture_shortcut: '' });
  });

  it('the capture window: open_capture and close_capture are counted; openTask sends open-task', () => {
    const { f, events } = fake();
    expect([f.handle('open_capture', {}), f.handle('close_capture', {}), f.handle('close_capture', {})]).toEqual([null, null, null]);
    expect([f.captureOpened, f.captureClosed]).toEqual([1, 2]);
    f.openTask('some-uuid');
    expect(events.at(-1)).toEqual(['open-task', { uuid: 'some-uuid' }]);
  });

  it('join_team logs in as the new member; a used code and a taken name are refused, nothing saved', () => {
    const { f } = fake();
    const join = (code: string, name: string) =>
      f.handle('join_team', { input: { server_url: 'http://127.0.0.1:7171/', code, name } });
    expect(() => join('0000-0000-0000-0000', 'bob')).toThrow(expect.objectContaining({ code: 'invite_used' }));
    expect(() => join('7KQ2-M9XD-4TRA-Z0PB', 'taken')).toThrow(
      expect.objectContaining({ code: 'member_taken', message: expect.stringMatching(/named taken/) }),
    );
    expect(() => join('7KQ2-M9XD', 'bob')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(() => join('7KQ2-M9XD-4TRA-Z0PB', '1bob')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(f.handle('get_settings', {})).toMatchObject({ server_url: null, token_set: false, member: null });
    expect(join('7kq2-m9xd-4tra-z0pb', '@Bob')).toMatchObject({
      server_url: 'http://127.0.0.1:7171',
      token_set: true,
      member: { name: 'bob', role: 'member' },
    });
    expect(() => join('7KQ2-M9XD-4TRA-Z0PC', 'bob')).toThrow(expect.objectContaining({ code: 'member_taken' }));
  });
});
