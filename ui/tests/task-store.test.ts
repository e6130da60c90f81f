import { describe, expect, it } from 'vitest';
import { TaskStore, type PageSource } from '../src/lib/task-store';
import type { LocalTask } from '../src/lib/types';
import { many, NOW, task } from './fixtures';

/** A backend list (newest first) with pages; `before` runs before each page is answered. */
function source(rows: LocalTask[], before?: (call: number, offset: number) => void) {
  const calls: [number, number][] = [];
  const src: PageSource & { calls: [number, number][]; rows: LocalTask[]; allCalls: number } = {
    calls,
    rows,
    allCalls: 0,
    async page(offset, limit) {
      before?.(calls.length, offset);
      calls.push([offset, limit]);
      await Promise.resolve();
      return { tasks: src.rows.slice(offset, offset + limit), total: src.rows.length };
    },
    async all() {
      src.allCalls++;
      return src.rows.slice();
    },
  };
  return src;
}

function store(src: PageSource) {
  const seen: { count: number; total: number | null }[] = [];
  const s: TaskStore = new TaskStore(src, () => seen.push({ count: s.list.length, total: s.total }));
  return { s, seen };
}

const uuids = (ts: readonly LocalTask[]) => ts.map((t) => t.uuid);

describe('TaskStore.load', () => {
  it('paints 200 first, then pages of 5,000 in order, every task once', async () => {
    const rows = many(12_345);
    const src = source(rows);
    const { s, seen } = store(src);
    await s.load();
    expect(src.calls).toEqual([
      [0, 200],
      [200, 5000],
      [5200, 5000],
      [10200, 5000],
    ]);
    expect(uuids(s.list)).toEqual(uuids(rows));
    expect(seen[0]).toEqual({ count: 200, total: 12_345 });
    expect(seen.at(-1)).toEqual({ count: 12_345, total: null });
    expect(s.total).toBeNull();
  });

  it('a small list is one call', async () => {
    const src = source(many(50));
    const { s } = store(src);
    await s.load();
    expect(src.calls).toEqual([[0, 200]]);
    expect(s.list).toHaveLength(50);
  });

  it('falls back to list_tasks (one call) when pages are not there', async () => {
    const rows = many(300);
    const src = source(rows);
    src.page = async () => {
      throw { code: 'ui', message: 'command list_tasks_page not found' };
    };
    const { s } = store(src);
    await s.load();
    expect(src.allCalls).toBe(1);
    expect(uuids(s.list)).toEqual(uuids(rows));
    expect(s.total).toBeNull();
  });

  it('a task created while pages load goes on top at once', async () => {
    const rows = many(6000);
    const fresh = task({ uuid: 'fresh', created_at: new Date(NOW + 60_000).toISOString() });
    let s!: TaskStore;
    const src = source(rows, (call) => {
      if (call === 1) s.upsert(fresh); // after the first page is in
    });
    s = store(src).s;
    await s.load();
    expect(s.list[0]?.uuid).toBe('fresh');
    expect(s.list).toHaveLength(6001);
  });

  it('a change to a task not loaded yet waits for its page and takes its place there', async () => {
    const rows = many(6000);
    const old = rows[3000] as LocalTask;
    const changed = { ...old, description: 'changed while loading' };
    let s!: TaskStore;
    const src = source(rows, (call) => {
      if (call === 1) s.upsert(changed);
    });
    s = store(src).s;
    await s.load();
    expect(s.list.findIndex((t) => t.uuid === old.uuid)).toBe(3000);
    expect(s.list[3000]?.description).toBe('changed while loading');
    expect(s.list).toHaveLength(6000);
  });

  it('events before the first page: new ones on top, known ones in place', async () => {
    const rows = many(10);
    const known = { ...(rows[4] as LocalTask), description: 'edited early' };
    const fresh = task({ uuid: 'fresh', created_at: new Date(NOW + 1000).toISOString() });
    const src = source(rows);
    const { s } = store(src);
    s.upsert(known);
    s.upsert(fresh);
    expect(s.list).toHaveLength(0);
    await s.load();
    expect(s.list[0]?.uuid).toBe('fresh');
    expect(s.list[5]?.description).toBe('edited early');
    expect(s.list).toHaveLength(11);
  });

  it('a keyless copy does not undo a key the page has', async () => {
    const rows = many(10);
    const keyed = rows[1] as LocalTask;
    const src = source(rows);
    const { s } = store(src);
    s.upsert({ ...keyed, key: null, number: null, description: 'old copy' });
    await s.load();
    expect(s.list[1]).toBe(keyed);
  });

  it('a loaded task removed between pages: the next page starts one earlier, nothing skipped', async () => {
    const rows = many(10_000);
    const victim = rows[10] as LocalTask;
    const src = source(rows);
    let removed = false;
    const s: TaskStore = new TaskStore(src, () => {
      if (!removed && s.list.length === 5200) {
        removed = true;
        src.rows = src.rows.filter((t) => t !== victim); // the backend removed it
        s.remove(victim.uuid); // and said so
      }
    });
    await s.load();
    expect(src.calls.slice(1)).toEqual([
      [200, 5000],
      [5199, 5000],
    ]);
    expect(uuids(s.list)).toEqual(uuids(rows.filter((t) => t !== victim)));
  });

  it('a removed task never comes back (late page, late answer); removing twice is fine', async () => {
    const rows = many(300);
    const gone = rows[250] as LocalTask;
    const src = source(rows);
    const { s } = store(src);
    s.remove(gone.uuid);
    await s.load();
    s.remove(gone.uuid);
    s.upsert(gone);
    expect(s.has(gone.uuid)).toBe(false);
    expect(s.list).toHaveLength(299);
  });

  it('a reload replaces the list; an older load still running is dropped', async () => {
    const src = source(many(6000));
    const { s } = store(src);
    const first = s.load();
    src.rows = many(20);
    await Promise.all([first, s.load()]);
    expect(s.list).toHaveLength(20);
    expect(s.total).toBeNull();
  });
});
