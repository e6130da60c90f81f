import { describe, expect, it } from 'vitest';
import { acceptedForms, normalOriginKey, parseJumpQuery, parseKey, planJump, textMatches, type JumpContext } from '../src/lib/jump';
import type { LocalTask } from '../src/lib/types';
import { many, task } from './fixtures';

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
        expect(q.message).toMatch(/DEV-42/);
        expect(q.message).toMatch(/UUID/);
      }
    },
  );

  it('parseKey and parseJumpQuery agree on keys', () => {
    for (const [input, want] of keys) expect(parseKey(input)?.key).toBe(want);
  });
});


describe('acceptedForms', () => {
  it.each([
    ['DEV', /DEV-42 \(also dev-42, DEV 42, dev42, or just 42\)/],
    ['ops', /OPS-42 \(also ops-42, OPS 42, ops42, or just 42\)/],
  ])('uses the prefix %s in every example', (p, want) => {
    expect(acceptedForms(p)).toMatch(want);
    expect(acceptedForms(p)).not.toMatch(/SYN/);
  });

  it('parseJumpQuery names the forms with the given prefix', () => {
    const q = parseJumpQuery('hello', 'OPS');
    expect(q.kind === 'error' && q.message).toMatch(/OPS-42/);
  });
});

describe('textMatches', () => {
  const tasks: LocalTask[] = [
    task({ uuid: 'a', description: 'Update the deploy notes' }),
    task({ uuid: 'b', description: 'Redeploy the server' }),
    task({ uuid: 'c', description: 'Deploy docs', status: 'completed' }),
    task({ uuid: 'd', description: 'Deploy login page' }),
    task({ uuid: 'e', description: 'Something else' }),
  ];
  const ids = (words: string[], limit = 8) => textMatches(tasks, words, limit).map((t) => t.uuid);

  it.each([
    ['word starts first, pending first, then done, then inside a word', ['deploy'], 8, ['a', 'd', 'c', 'b']],
    ['every word must match', ['deploy', 'login'], 8, ['d']],
    ['a prefix of a word counts as a word start', ['dep', 'not'], 8, ['a']],
    ['the limit', ['deploy'], 2, ['a', 'd']],
    ['no words, no results', [], 8, []],
    ['nothing matches', ['zebra'], 8, []],
  ] as const)('%s', (_n, words, limit, want) => {
    expect(ids([...words], limit)).toEqual(want);
  });

  it('stops scanning once it has enough of the best kind', () => {
    const big = many(50_000);
    let read = 0;
    const counted = new Proxy(big, {
      get(target, prop, recv) {
        if (typeof prop === 'string' && /^[0-9]+$/.test(prop)) read++;
        return Reflect.get(target, prop, recv);
      },
    });
    const out = textMatches(counted, ['task'], 8);
    expect(out).toHaveLength(8);
    expect(read).toBeLessThan(20);
  });
});

describe('planJump', () => {
  const list: LocalTask[] = [
    task({ uuid: '11111111-0000-4000-8000-000000000001', key: 'DEV-42', description: 'Fix the login page' }),
    task({ uuid: '22222222-0000-4000-8000-000000000002', key: 'OPS-42', project: 'OPS', description: 'Rotate keys 42' }),
    task({ uuid: '33333333-0000-4000-8000-000000000003', key: null, description: 'Deploy 12 servers' }),
    task({ uuid: '44444444-0000-4000-8000-000000000004', key: 'DEV-7', description: 'Write the release notes' }),
  ];
  const ctx: JumpContext = { currentProject: 'DEV', knownPrefixes: ['DEV', 'OPS'], examplePrefix: 'DEV' };
  const uuids = (ts: LocalTask[]) => ts.map((t) => t.uuid.slice(0, 1));

  it.each([
    ['empty', '', ctx, null, null, [], -1],
    ['a key in the list: first, highlighted', 'dev 42', ctx, 'DEV-42', null, ['1'], 0],
    ['a key not in the list: Enter asks the backend; words still shown', 'dev 99', ctx, 'DEV-99', null, [], -1],
    ['a bare number is the current project\'s key, then text matches', '42', ctx, 'DEV-42', 'DEV-42', ['1', '2'], 0],
    ['a bare number in another current project', '42', { ...ctx, currentProject: 'OPS' }, 'OPS-42', 'OPS-42', ['2', '1'], 0],
    ['a bare number with no current project is words', '12', { ...ctx, currentProject: null }, null, null, ['3'], 0],
    ['an unknown prefix reads as words', 'deploy 12', ctx, null, null, ['3'], 0],
    ['any prefix is a key when no project is known', 'deploy 12', { ...ctx, knownPrefixes: [] }, 'DEPLOY-12', null, ['3'], -1],
    ['words', 'release', ctx, null, null, ['4'], 0],
    ['a UUID', '33333333-0000-4000-8000-000000000003', ctx, '33333333-0000-4000-8000-000000000003', null, ['3'], 0],
    ['a short id', '~33333333', ctx, '33333333', null, ['3'], 0],
    ['nothing', 'zebra', ctx, null, null, [], -1],
  ] as const)('%s', (_n, input, c, resolve, reading, results, highlight) => {
    const p = planJump(input, list, c);
    expect(p.resolve).toBe(resolve);
    expect(p.reading).toBe(reading);
    expect(uuids(p.results)).toEqual(results);
    expect(p.highlight).toBe(highlight);
  });

  it('shows at most 8 results', () => {
    expect(planJump('task', many(100), ctx).results).toHaveLength(8);
  });

  it('an old key finds the task that moved (its current key wins over an old one)', () => {
    const moved = task({ uuid: '55555555-0000-4000-8000-000000000005', key: 'OPS-3', project: 'OPS', previous_keys: ['DEV-3', 'DEV-9'], description: 'Moved' });
    const now = task({ uuid: '66666666-0000-4000-8000-000000000006', key: 'DEV-9', description: 'Took nothing' });
    const p = planJump('dev 3', [...list, moved], ctx);
    expect([p.resolve, uuids(p.results), p.highlight, p.formerly]).toEqual(['DEV-3', ['5'], 0, 'DEV-3']);
    expect(planJump('ops-3', [...list, moved], ctx).formerly).toBeNull();
    // Keys are never reused, but a stale list could hold both: the current key wins.
    expect(uuids(planJump('DEV-9', [moved, now], ctx).results)[0]).toBe('6');
  });
});

describe('normalOriginKey (callsign-core Origin::normal_key)', () => {
  it.each([
    ['ENG-42', 'ENG-42'],
    ['eng-42', 'ENG-42'],
    ['eng 42', 'ENG-42'],
    ['eng42', 'ENG-42'],
    ['  ENG-042 ', 'ENG-42'],
    ['eng-4.1', 'ENG-4.1'],
    ['v2-5.01', 'V2-5.1'],
    ['#12', '#12'],
    [' #12 ', '#12'],
    ['web-1x', 'WEB-1X'],
    ['SYN--1', 'SYN--1'],
    ['ENG-0', 'ENG-0'],
    ['ENG-9223372036854775808', 'ENG-9223372036854775808'],
    ['ENG-9223372036854775807', 'ENG-9223372036854775807'],
    ['1.2.3.4.5.6.7.8.9', '1.2.3.4.5.6.7.8.9'],
    ['abc', 'ABC'],
  ])('%j → %s', (input, want) => {
    expect(normalOriginKey(input)).toBe(want);
  });
});

describe('planJump: keys from the tracker a task was imported from', () => {
  const gh = task({ uuid: '77777777-0000-4000-8000-000000000007', key: 'OPS-7', project: 'OPS', description: 'Legend colours', origin: { tracker: 'github', key: '#12' } });
  const jira = task({ uuid: '88888888-0000-4000-8000-000000000008', key: 'OPS-8', project: 'OPS', description: 'Card payments', origin: { tracker: 'jira', key: 'ENG-4' } });
  const kept = task({ uuid: '99999999-0000-4000-8000-000000000009', key: 'ENG-8', project: 'ENG', description: 'Capture payment', origin: { tracker: 'jira', key: 'ENG-8' } });
  const noKey = task({ uuid: 'aaaaaaaa-0000-4000-8000-00000000000a', key: null, project: 'OPS', description: 'Buy a bike rack', origin: { tracker: 'taskwarrior' } });
  const list = [gh, jira, kept, noKey, task({ uuid: 'bbbbbbbb-0000-4000-8000-00000000000b', key: 'DEV-4', description: 'Issue #12 in the docs' })];
  const ctx: JumpContext = { currentProject: 'DEV', knownPrefixes: ['DEV', 'OPS', 'ENG'], examplePrefix: 'DEV' };
  const first = (input: string, c = ctx) => {
    const p = planJump(input, list, c);
    return [p.results[0]?.uuid.slice(0, 1) ?? null, p.highlight, p.resolve, p.imported];
  };

  it.each([
    ['#N, as typed', '#12', ['7', 0, '#12', '#12']],
    ['any case and spacing of a key whose prefix is no project here', 'eng 4', ['8', 0, 'ENG-4', 'ENG-4']],
    ['ENG-4 with ENG a project here: its key first, then the origin', 'ENG-4', ['8', 0, 'ENG-4', 'ENG-4']],
    ['a kept number is the key itself: no imported reading', 'eng-8', ['9', 0, 'ENG-8', null]],
    ['a bare number is still the current project (words still match)', '12', ['b', -1, 'DEV-12', null]],
  ] as const)('%s', (_n, input, want) => {
    expect(first(input)).toEqual(want);
  });

  it('a key here wins over an origin key that is the same text', () => {
    const dev4 = planJump('dev-4', [...list, task({ uuid: 'cccccccc-0000-4000-8000-00000000000c', key: 'OPS-9', origin: { tracker: 'jira', key: 'DEV-4' } })], ctx);
    expect([dev4.results[0]?.uuid.slice(0, 1), dev4.imported]).toEqual(['b', null]);
  });

  it('an origin key no loaded task has: Enter asks the backend, unless the words found something', () => {
    const unknown = { ...ctx, knownPrefixes: ['DEV', 'OPS'] };
    expect(planJump('#99', list, ctx)).toMatchObject({ resolve: '#99', highlight: -1, imported: null });
    expect(planJump('LIN-3', list, unknown)).toMatchObject({ resolve: 'LIN-3', highlight: -1, results: [] });
    // `capture 8` is key-shaped with an unknown prefix (CAPTURE-8), and its words match: they win.
    const words = planJump('capture 8', list, unknown);
    expect([words.resolve, words.highlight, words.results[0]?.uuid.slice(0, 1)]).toEqual([null, 0, '9']);
  });

  it('a task with an origin but no key there is not found by a key', () => {
    expect(planJump('#1', [noKey], ctx).results).toEqual([]);
  });
});
