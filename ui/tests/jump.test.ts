import { describe, expect, it } from 'vitest';
import { acceptedForms, parseJumpQuery, parseKey, planJump, textMatches, type JumpContext } from '../src/lib/jump';
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
