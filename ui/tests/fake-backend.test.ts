// The preview's fake backend keeps to the command contract the UI relies on.
import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../src/dev/fake-backend';
import type { LocalTask } from '../src/lib/types';

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
});
