import { describe, expect, it } from 'vitest';
import type { LocalTask, SyncStatus } from '../src/lib/types';
import {
  applyTaskEvent,
  computeWindow,
  createFilter,
  filterTasks,
  markerText,
  markerTone,
  orderTasks,
  parseCapture,
  parseJumpQuery,
  parseKey,
  scrollToRow,
  shortId,
  statusText,
} from '../src/lib/view';
import { many, NOW, status, task } from './fixtures';

const inS = (s: number) => new Date(NOW + s * 1000).toISOString();

describe('markerText', () => {
  const cases: [string, LocalTask, SyncStatus | null, string | null][] = [
    ['synced task shows its key, no marker', task({ key: 'SYN-1', number: 1, sync_state: 'synced', waiting: null }), status(), null],
    ['synced task with edits waiting still shows its key', task({ key: 'SYN-1', sync_state: 'synced' }), status({ online: false }), null],
    ['status not known yet', task(), null, 'waiting'],
    ['no server configured', task(), status({ configured: false, online: false, server_url: null }), 'local only'],
    ['offline', task(), status({ online: false }), 'offline'],
    ['offline and backing off', task({ waiting: { state: 'pending', next_attempt_at: inS(12) } }), status({ online: false }), 'offline, retrying in 12 s'],
    ['online, backing off (rounds up)', task({ waiting: { state: 'pending', next_attempt_at: inS(19.001) } }), status(), 'retrying in 20 s'],
    ['offline, the loop retries in 4 s (no per-task time)', task(), status({ online: false, pending: 3, next_attempt_at: inS(3.2) }), 'offline, retrying in 4 s'],
    ['the task\'s own time wins over the loop\'s', task({ waiting: { state: 'pending', next_attempt_at: inS(9) } }), status({ online: false, next_attempt_at: inS(2) }), 'offline, retrying in 9 s'],
    ['loop retry time in the past: offline', task(), status({ online: false, next_attempt_at: inS(-1) }), 'offline'],
    ['retry due now: sending', task({ waiting: { state: 'pending', next_attempt_at: inS(0) } }), status(), 'sending'],
    ['retry time in the past: sending', task({ waiting: { state: 'pending', next_attempt_at: inS(-5) } }), status(), 'sending'],
    ['in flight', task({ waiting: { state: 'in_progress', try_count: 1, next_attempt_at: null } }), status(), 'sending'],
    ['queued, online', task(), status(), 'sending'],
    ['no outbox detail, online', task({ waiting: null }), status(), 'sending'],
    ['failed, with the server message', task({ sync_state: 'failed', last_error: 'project ZZZ does not exist', waiting: { state: 'failed', next_attempt_at: null } }), status(), 'failed: project ZZZ does not exist'],
    ['failed, no message', task({ sync_state: 'failed' }), status(), 'failed: refused by the server'],
    ['failed wins over offline', task({ sync_state: 'failed', last_error: 'too long' }), status({ online: false }), 'failed: too long'],
    ['failed edit of a keyed task', task({ key: 'SYN-3', sync_state: 'failed', last_error: 'bad tag' }), status(), 'failed: bad tag'],
    ['outbox says failed', task({ waiting: { state: 'failed', next_attempt_at: null }, last_error: 'nope' }), status(), 'failed: nope'],
  ];
  it.each(cases)('%s', (_name, t, s, want) => {
    expect(markerText(t, s, NOW)).toBe(want);
  });

  it.each([
    ['failed: x', 'failed'],
    ['local only', 'local'],
    ['offline', 'offline'],
    ['offline, retrying in 3 s', 'offline'],
    ['sending', 'sending'],
    ['retrying in 3 s', 'sending'],
  ] as const)('tone of %s is %s', (text, tone) => {
    expect(markerTone(text)).toBe(tone);
  });
});

describe('statusText', () => {
  it.each([
    [null, 'starting…'],
    [status({ configured: false }), 'local only — no server configured'],
    [status(), 'online · all synced'],
    [status({ online: false, pending: 3 }), 'offline · 3 pending'],
    [status({ pending: 2, failed: 1 }), 'online · 2 pending · 1 failed'],
  ] as const)('%j → %s', (s, want) => {
    expect(statusText(s)).toBe(want);
  });
});

describe('parseJumpQuery', () => {
  const keys: [string, string][] = [
    ['SYN-42', 'SYN-42'],
    ['syn-42', 'SYN-42'],
    ['syn 42', 'SYN-42'],
    ['syn42', 'SYN-42'],
    ['  Syn7 ', 'SYN-7'],
    ['syn  -  7', 'SYN-7'],
    ['v2-5', 'V2-5'],
    ['v2x5', 'V2X-5'],
    ['SYN-007', 'SYN-7'],
    ['pfx 2', 'PFX-2'],
    ['ABCDEFGHIJ-1', 'ABCDEFGHIJ-1'],
  ];
  it.each(keys)('key %j → %s', (input, want) => {
    const q = parseJumpQuery(input);
    expect(q.kind).toBe('key');
    if (q.kind === 'key') expect(q.key).toBe(want);
  });

  it.each([
    ['67e55044-10b1-426f-9247-bb680e5fe0c8', '67e55044-10b1-426f-9247-bb680e5fe0c8'],
    ['67E5504410B1426F9247BB680E5FE0C8', '67e55044-10b1-426f-9247-bb680e5fe0c8'],
    [' {67e55044-10b1-426f-9247-bb680e5fe0c8} ', '67e55044-10b1-426f-9247-bb680e5fe0c8'],
  ])('uuid %j', (input, want) => {
    expect(parseJumpQuery(input)).toEqual({ kind: 'uuid', uuid: want });
  });

  it.each([
    ['67e55044', '67e55044'],
    ['67E55044-10b1', '67e5504410b1'],
    ['~67e55044', '67e55044'],
    ['deadbeefcafe', 'deadbeefcafe'],
  ])('uuid prefix %j', (input, want) => {
    expect(parseJumpQuery(input)).toEqual({ kind: 'uuid-prefix', prefix: want });
  });

  it('a hex string that is also a key is read as a key (the backend falls back to the prefix)', () => {
    expect(parseJumpQuery('cafe1234')).toMatchObject({ kind: 'key', key: 'CAFE-1234' });
  });

  it.each(['hello', 'SYN-', 'SYN-0', '-42', '42', 'S-42', 'SYN-+4', 'SYN-4x', 'SYN-99999999999999999999', '1abc-4', 'ABCDEFGHIJK-1', '67e5504', ''])(
    'rejects %j naming the accepted forms',
    (input) => {
      const q = parseJumpQuery(input);
      expect(q.kind).toBe('error');
      if (q.kind === 'error') {
        expect(q.message).toMatch(/SYN-42/);
        expect(q.message).toMatch(/UUID/);
      }
    },
  );

  it('parseKey and parseJumpQuery agree on keys', () => {
    for (const [input, want] of keys) expect(parseKey(input)?.key).toBe(want);
  });
});

describe('applyTaskEvent', () => {
  const a = task({ uuid: 'a', description: 'A' });
  const b = task({ uuid: 'b', description: 'B' });
  const c = task({ uuid: 'c', description: 'C' });

  it('inserts a new task at the top', () => {
    expect(applyTaskEvent([a, b], c).map((t) => t.uuid)).toEqual(['c', 'a', 'b']);
  });

  it('replaces a known task in place when its key arrives (same index, same length)', () => {
    const keyed = { ...b, key: 'SYN-2', number: 2, sync_state: 'synced' as const, waiting: null };
    const list = [a, b, c];
    const out = applyTaskEvent(list, keyed);
    expect(out.map((t) => t.uuid)).toEqual(['a', 'b', 'c']);
    expect(out[1]).toBe(keyed);
    expect(out[0]).toBe(a);
    expect(list[1]).toBe(b); // the input is not mutated
  });

  it('a late command answer without the key does not undo the key that arrived first', () => {
    const keyed = { ...b, key: 'SYN-2', number: 2, sync_state: 'synced' as const, waiting: null };
    const list = applyTaskEvent([a, b, c], keyed);
    expect(applyTaskEvent(list, b)).toBe(list);
    expect(list[1]?.key).toBe('SYN-2');
  });

  it.each([
    ['an earlier modified_at (server clock behind) still replaces', '2026-11-22T10:59:00Z'],
    ['the same modified_at replaces', '2026-11-22T11:00:00Z'],
    ['a later modified_at replaces', '2026-11-22T11:00:01.5Z'],
  ])('%s', (_n, modified) => {
    const edited = { ...b, key: 'SYN-2', description: 'B from the server', modified_at: modified };
    const out = applyTaskEvent([a, b, c], edited);
    expect(out[1]?.description).toBe('B from the server');
  });

  it('a keyed task may become failed (an edit refused) and keeps its place', () => {
    const keyed = { ...b, key: 'SYN-2', sync_state: 'synced' as const };
    const failed = { ...keyed, sync_state: 'failed' as const, last_error: 'bad tag' };
    const out = applyTaskEvent(applyTaskEvent([a, b, c], keyed), failed);
    expect(out[1]).toBe(failed);
  });

  it('an empty list gets the task', () => {
    expect(applyTaskEvent([], a)).toEqual([a]);
  });

  it('the same event twice changes nothing more', () => {
    const once = applyTaskEvent([a, b], c);
    expect(applyTaskEvent(once, c).map((t) => t.uuid)).toEqual(['c', 'a', 'b']);
  });
});

describe('orderTasks', () => {
  it('newest first', () => {
    const old = task({ uuid: 'old', created_at: '2026-11-20T10:00:00Z' });
    const mid = task({ uuid: 'mid', created_at: '2026-11-21T10:00:00.5Z' });
    const newest = task({ uuid: 'new', created_at: '2026-11-22T10:00:00.123456789Z' });
    expect(orderTasks([old, newest, mid]).map((t) => t.uuid)).toEqual(['new', 'mid', 'old']);
  });

  it('fractional seconds compare as time, not text', () => {
    const x = task({ uuid: 'x', created_at: '2026-11-22T10:00:00Z' });
    const y = task({ uuid: 'y', created_at: '2026-11-22T10:00:00.5Z' });
    expect(orderTasks([x, y]).map((t) => t.uuid)).toEqual(['y', 'x']);
  });

  it('ties keep their order (stable)', () => {
    const ts = ['p', 'q', 'r'].map((u) => task({ uuid: u }));
    expect(orderTasks(ts).map((t) => t.uuid)).toEqual(['p', 'q', 'r']);
  });
});

describe('filterTasks', () => {
  const list = [
    task({ uuid: '1', key: 'SYN-1', description: 'Fix login', status: 'pending' }),
    task({ uuid: '2', key: 'SYN-2', description: 'Write docs', notes: 'about LOGIN', status: 'completed' }),
    task({ uuid: '3', key: null, description: 'Deploy', tags: ['ops'], status: 'pending' }),
    task({ uuid: '4', key: 'OPS-1', project: 'OPS', description: 'Rotate keys', status: 'deleted' }),
    task({ uuid: 'abcdef12-0000-4000-8000-000000000000', description: 'Provisional one' }),
  ];
  const ids = (f: Parameters<typeof filterTasks>[1]) => filterTasks(list, f).map((t) => t.uuid);

  it.each([
    ['default is pending', {}, ['1', '3', 'abcdef12-0000-4000-8000-000000000000']],
    ['all', { status: 'all' }, ['1', '2', '3', '4', 'abcdef12-0000-4000-8000-000000000000']],
    ['completed', { status: 'completed' }, ['2']],
    ['deleted', { status: 'deleted' }, ['4']],
    ['text, any case, description and notes', { text: 'LOGIN', status: 'all' }, ['1', '2']],
    ['text matches the key', { text: 'syn-2', status: 'all' }, ['2']],
    ['text matches a tag', { text: 'ops', status: 'pending' }, ['3']],
    ['text matches the provisional short id', { text: '~abcdef12' }, ['abcdef12-0000-4000-8000-000000000000']],
    ['every word must match', { text: 'fix login', status: 'all' }, ['1']],
    ['words in any order', { text: 'login fix', status: 'all' }, ['1']],
    ['project', { project: 'ops', status: 'all' }, ['4']],
    ['blank text is no filter', { text: '   ' }, ['1', '3', 'abcdef12-0000-4000-8000-000000000000']],
  ] as const)('%s', (_n, f, want) => {
    expect(ids(f)).toEqual(want);
  });

  it('createFilter gives the same answers as filterTasks while typing and deleting', () => {
    const big = many(3000);
    const f = createFilter();
    for (const text of ['', 't', 'ta', 'task', 'task 1', 'task 12', 'task 1', 'dep', 'deploy', 'deploy ops', 'x', '']) {
      for (const status of ['pending', 'all'] as const) {
        expect(f(big, { text, status })).toEqual(filterTasks(big, { text, status }));
      }
    }
    // a new list (an event arrived) is scanned afresh
    const more = applyTaskEvent(big, task({ uuid: 'zz', description: 'Task deploy new' }));
    expect(f(more, { text: 'deploy' })).toEqual(filterTasks(more, { text: 'deploy' }));
  });
});

describe('windowing', () => {
  it.each([
    ['top', 0, 400, 40, 1000, { start: 0, end: 19, offsetY: 0, totalHeight: 40000 }],
    ['middle', 4000, 400, 40, 1000, { start: 92, end: 119, offsetY: 3680, totalHeight: 40000 }],
    ['bottom (clamped)', 999999, 400, 40, 1000, { start: 982, end: 1000, offsetY: 39280, totalHeight: 40000 }],
    ['fewer rows than fit', 0, 400, 40, 3, { start: 0, end: 3, offsetY: 0, totalHeight: 120 }],
    ['empty', 0, 400, 40, 0, { start: 0, end: 0, offsetY: 0, totalHeight: 0 }],
  ] as const)('%s', (_n, top, h, rh, n, want) => {
    expect(computeWindow(top, h, rh, n)).toEqual(want);
  });

  it('50,000 rows render a few dozen', () => {
    const w = computeWindow(1_000_000, 800, 40, 50_000);
    expect(w.end - w.start).toBeLessThanOrEqual(40);
  });

  it.each([
    ['already visible', 5, 0, 400, 0],
    ['above: scroll up to it', 2, 200, 400, 80],
    ['below: scroll down just enough', 20, 0, 400, 440],
  ] as const)('scrollToRow %s', (_n, i, top, h, want) => {
    expect(scrollToRow(i, top, h, 40)).toBe(want);
  });
});

describe('parseCapture', () => {
  it.each([
    ['plain', 'Fix login', [], { description: 'Fix login', tags: [] }],
    ['project and tags', 'Fix login #syn +bug +urgent', ['SYN'], { description: 'Fix login', project: 'SYN', tags: ['bug', 'urgent'] }],
    ['unknown project stays in the text', 'Ship #ZZZ now', ['SYN'], { description: 'Ship #ZZZ now', tags: [] }],
    ['any prefix when none are known', 'Ship #ops', [], { description: 'Ship', project: 'OPS', tags: [] }],
    ['#1 is not a project', 'Fix #1 bug', [], { description: 'Fix #1 bug', tags: [] }],
    ['lone + and # stay', 'a + b # c', [], { description: 'a + b # c', tags: [] }],
    ['duplicate tags once', 'x +a +a', [], { description: 'x', tags: ['a'] }],
  ] as const)('%s', (_n, input, known, want) => {
    expect(parseCapture(input, known)).toEqual(want);
  });
});

describe('shortId', () => {
  it('is ~ and 8 hex digits', () => {
    expect(shortId(task())).toBe('~67e55044');
  });
});

describe('warmHaystacks', () => {
  it('fills the cache in chunks and filtering gives the same answer', async () => {
    const { warmHaystacks } = await import('../src/lib/view');
    const list = many(1200);
    const stop = warmHaystacks(list, 500);
    await new Promise((r) => setTimeout(r, 20));
    stop();
    expect(filterTasks(list, { text: 'deploy', status: 'all' }).length).toBe(list.filter((t) => t.description.includes('deploy')).length);
  });
});
