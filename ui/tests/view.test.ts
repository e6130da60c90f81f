import { describe, expect, it } from 'vitest';
import {
  applyTaskEvent,
  captureFields,
  computeWindow,
  createFilter,
  filterTasks,
  orderTasks,
  parseCapture,
  scrollToRow,
  shortId,
  tokenize,
} from '../src/lib/view';
import { vf } from '../src/dev/fake-filter';
import { failure, many, task } from './fixtures';

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

describe('tokenize', () => {
  it('keeps what was typed in raw (capture puts unknown projects back in the text)', () => {
    expect(tokenize('Ship #Zz +Tag -x')).toEqual([
      { kind: 'word', value: 'Ship', raw: 'Ship' },
      { kind: 'project', value: 'ZZ', raw: '#Zz' },
      { kind: 'tag', value: 'Tag', raw: '+Tag' },
      { kind: 'not-tag', value: 'x', raw: '-x' },
    ]);
  });
});

describe('filterTasks', () => {
  const list = [
    task({ uuid: '1', key: 'SYN-1', description: 'Fix login', status: 'pending' }),
    task({ uuid: '2', key: 'SYN-2', description: 'Write docs', notes: 'about LOGIN', status: 'completed', tags: ['Docs'] }),
    task({ uuid: '3', key: null, description: 'Deploy', tags: ['ops', 'docs'], status: 'pending' }),
    task({ uuid: '4', key: 'OPS-1', project: 'OPS', description: 'Rotate keys', status: 'deleted', previous_keys: ['SYN-3'] }),
    task({ uuid: 'abcdef12-0000-4000-8000-000000000000', description: 'Provisional one' }),
    task({ uuid: '6', key: null, project: 'ZZZ', description: 'Refused docs', status: 'pending', failure: failure() }),
    task({ uuid: '7', key: 'SYN-7', description: 'Refused edit', status: 'completed', failure: failure('fields') }),
  ];
  const ids = (f: Parameters<typeof filterTasks>[1]) => filterTasks(list, f).map((t) => t.uuid);
  const P = 'abcdef12-0000-4000-8000-000000000000';

  it.each([
    ['default is pending', {}, ['1', '3', P, '6']],
    ['all', { status: 'all' }, ['1', '2', '3', '4', P, '6', '7']],
    ['completed', { status: 'completed' }, ['2', '7']],
    ['deleted', { status: 'deleted' }, ['4']],
    ['failed: every refused task, whatever its status', { status: 'failed' }, ['6', '7']],
    ['next: the pending ones of the list nextTasks made', { status: 'next' }, ['1', '3', P, '6']],
    ['text, any case, description and notes', vf({ text: 'LOGIN', status: 'all' }), ['1', '2']],
    ['text matches the key', vf({ text: 'syn-2', status: 'all' }), ['2']],
    ['text matches an old key (the task moved)', vf({ text: 'syn-3', status: 'all' }), ['4']],
    ['text matches a tag', vf({ text: 'ops', status: 'pending' }), ['3']],
    ['text matches the provisional short id', vf({ text: '~abcdef12' }), [P]],
    ['every word must match', vf({ text: 'fix login', status: 'all' }), ['1']],
    ['words in any order', vf({ text: 'login fix', status: 'all' }), ['1']],
    ['+tag: the tag, any case', vf({ text: '+docs', status: 'all' }), ['2', '3']],
    ['+tag is exact, not a prefix', vf({ text: '+doc', status: 'all' }), []],
    ['-tag: without it', vf({ text: '-docs', status: 'pending' }), ['1', P, '6']],
    ['+tag and -tag together', vf({ text: '+docs -ops', status: 'all' }), ['2']],
    ['#PFX: the project, any case', vf({ text: '#ops', status: 'all' }), ['4']],
    ['#PFX with words', vf({ text: '#syn refused', status: 'all' }), ['7']],
    ['two projects: either', vf({ text: '#ops #zzz', status: 'all' }), ['4', '6']],
    ['words with the failed status', vf({ text: 'docs', status: 'failed' }), ['6']],
    ['blank text is no filter', vf({ text: '   ' }), ['1', '3', P, '6']],
  ] as const)('%s', (_n, f, want) => {
    expect(ids(f)).toEqual(want);
  });

  it('createFilter gives the same answers as filterTasks while typing and deleting', () => {
    const big = many(3000);
    const f = createFilter();
    const typed = ['', 't', 'ta', 'task', 'task 1', 'task 12', 'task 1', 'dep', 'deploy', 'deploy ops', 'x', '',
      // the capture syntax, typed a key at a time: +o, +op, +ops are different tags, not a narrowing
      '+', '+o', '+op', '+ops', '+ops t', '+ops task', '-', '-o', '-ops', '-ops deploy', '#', '#S', '#SY', '#SYN', '#SYN 1', ''];
    for (const text of typed) {
      for (const status of ['pending', 'all', 'failed'] as const) {
        expect(f(big, vf({ text, status })), `${status} "${text}"`).toEqual(filterTasks(big, vf({ text, status })));
      }
    }
    // a new list (an event arrived) is scanned afresh
    const more = applyTaskEvent(big, task({ uuid: 'zz', description: 'Task deploy new' }));
    expect(f(more, vf({ text: 'deploy' }))).toEqual(filterTasks(more, vf({ text: 'deploy' })));
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

describe('captureFields', () => {
  it.each([
    ['the description alone', 'Fix login', { description: 'Fix login' }],
    ['tags, due and priority as typed; the project is not among them', 'Pay rent #SYN +home due:fri pri:h', { description: 'Pay rent', tags: ['home'], due: 'fri', priority: 'h' }],
  ] as const)('%s', (_n, input, want) => {
    expect(captureFields(parseCapture(input, ['SYN']))).toEqual(want);
  });
});

describe('parseCapture', () => {
  it.each([
    ['plain', 'Fix login', [], { description: 'Fix login', tags: [] }],
    ['project and tags', 'Fix login #syn +bug +urgent', ['SYN'], { description: 'Fix login', project: 'SYN', tags: ['bug', 'urgent'] }],
    ['unknown project stays in the text', 'Ship #ZZZ now', ['SYN'], { description: 'Ship #ZZZ now', tags: [] }],
    ['any prefix when none are known', 'Ship #ops', [], { description: 'Ship', project: 'OPS', tags: [] }],
    ['#INBOX is a project when known', 'Idea #inbox', ['DEV', 'INBOX'], { description: 'Idea', project: 'INBOX', tags: [] }],
    ['-tag is not capture syntax: it stays', 'Fix -later', [], { description: 'Fix -later', tags: [] }],
    ['the last #PFX wins', 'x #ops #syn', ['OPS', 'SYN'], { description: 'x', project: 'SYN', tags: [] }],
    ['#1 is not a project', 'Fix #1 bug', [], { description: 'Fix #1 bug', tags: [] }],
    ['lone + and # stay', 'a + b # c', [], { description: 'a + b # c', tags: [] }],
    ['duplicate tags once', 'x +a +a', [], { description: 'x', tags: ['a'] }],
    ['due and priority come out', 'Pay rent due:tomorrow pri:H', [], { description: 'Pay rent', tags: [], due: 'tomorrow', priority: 'H' }],
    ['anywhere in the text', 'due:fri Pay pri:l rent', [], { description: 'Pay rent', tags: [], due: 'fri', priority: 'l' }],
    ['priority: spelled out', 'x priority:high', [], { description: 'x', tags: [], priority: 'high' }],
    ['the names in any case', 'x DUE:eow Pri:M', [], { description: 'x', tags: [], due: 'eow', priority: 'M' }],
    ['a date and a time as typed', 'x due:2026-12-01T14:30', [], { description: 'x', tags: [], due: '2026-12-01T14:30' }],
    ['a value not checked here (the backend refuses it)', 'x due:soon pri:Z', [], { description: 'x', tags: [], due: 'soon', priority: 'Z' }],
    ['the last one wins', 'x due:fri due:mon pri:H pri:L', [], { description: 'x', tags: [], due: 'mon', priority: 'L' }],
    ['with a project and tags', 'Pay rent #syn +home due:1mo pri:M', ['SYN'], { description: 'Pay rent', project: 'SYN', tags: ['home'], due: '1mo', priority: 'M' }],
    ['due: with no value stays in the text', 'Fix due: later', [], { description: 'Fix due: later', tags: [] }],
    ['a word that only contains due: stays', 'Overdue:x pri', [], { description: 'Overdue:x pri', tags: [] }],
    ['only fields: no description', 'due:today pri:H', [], { description: '', tags: [], due: 'today', priority: 'H' }],
  ] as const)('%s', (_n, input, known, want) => {
    expect(parseCapture(input, known)).toEqual(want);
  });
});

describe('parseCapture: @name assigns (a member of the team as last listed; any handle with no list)', () => {
  const TEAM = ['alice', 'bob', 'mary.jane'];
  it.each([
    ['a member', 'Review notes @bob', TEAM, { description: 'Review notes', tags: [], assignee: 'bob' }],
    ['any case, lower-cased', 'Review @BOB notes', TEAM, { description: 'Review notes', tags: [], assignee: 'bob' }],
    ['a handle with a dot', 'Call @mary.jane', TEAM, { description: 'Call', tags: [], assignee: 'mary.jane' }],
    ['not a member: stays in the text', 'Thank @carol', TEAM, { description: 'Thank @carol', tags: [] }],
    ['no list known: any handle', 'Thank @carol', null, { description: 'Thank', tags: [], assignee: 'carol' }],
    ['an empty team: nobody', 'Thank @carol', [], { description: 'Thank @carol', tags: [] }],
    ['not a handle: an address stays', 'Mail bob@example.com', null, { description: 'Mail bob@example.com', tags: [] }],
    ['not a handle: a digit first', 'Ping @9lives', null, { description: 'Ping @9lives', tags: [] }],
    ['not a handle: a dot last', 'Ask @bob.', TEAM, { description: 'Ask @bob.', tags: [] }],
    ['a lone @ stays', 'a @ b', null, { description: 'a @ b', tags: [] }],
    ['the last one wins', 'x @alice @bob', TEAM, { description: 'x', tags: [], assignee: 'bob' }],
    ['with a project, a tag and a due date', 'Review notes #syn +docs @alice due:fri', TEAM, { description: 'Review notes', project: 'SYN', tags: ['docs'], due: 'fri', assignee: 'alice' }],
    ['only a mention: no description', '@bob', TEAM, { description: '', tags: [], assignee: 'bob' }],
  ] as const)('%s', (_n, input, members, want) => {
    expect(parseCapture(input, ['SYN'], members)).toEqual(want);
  });

  it('goes to create_task as the assignee', () => {
    expect(captureFields(parseCapture('Review notes @bob', [], ['bob']))).toEqual({ description: 'Review notes', assignee: 'bob' });
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
    expect(filterTasks(list, vf({ text: 'deploy', status: 'all' })).length).toBe(list.filter((t) => t.description.includes('deploy')).length);
  });
});
