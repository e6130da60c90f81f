import { describe, expect, it } from 'vitest';
import { actionFor, NO_KEYS, readKey, SEQUENCE_MS, shortcuts, type Action, type KeyLike, type KeyState } from '../src/lib/keymap';

const k = (key: string, mods: Partial<KeyLike> = {}): KeyLike => ({ key, ctrlKey: false, metaKey: false, altKey: false, ...mods });

describe('actionFor', () => {
  it.each([
    ['n', 'capture'],
    ['/', 'jump'],
    ['j', 'down'],
    ['ArrowDown', 'down'],
    ['k', 'up'],
    ['ArrowUp', 'up'],
    ['Enter', 'open'],
    ['x', 'complete'],
    ['e', 'edit'],
    ['m', 'move'],
    ['c', 'copy'],
    ['Delete', 'delete'],
    ['r', 'retry'],
    ['s', 'sync'],
    ['f', 'filter'],
    ['N', 'next'],
    [',', 'settings'],
    ['t', 'theme'],
    ['?', 'help'],
    ['Escape', 'escape'],
    ['q', null],
  ] as const)('%s → %s outside a text field', (key, want) => {
    expect(actionFor(k(key), false)).toBe(want);
  });

  it.each(['n', 'N', 'j', 'x', 'Delete', '/', 'Enter', '?'])('%s is typed into a text field, not a shortcut', (key) => {
    expect(actionFor(k(key), true)).toBeNull();
  });

  it.each([
    [k('k', { ctrlKey: true }), true],
    [k('K', { ctrlKey: true }), true],
    [k('k', { metaKey: true }), true],
    [k('k', { ctrlKey: true }), false],
  ] as const)('Ctrl/Cmd+K jumps everywhere (%j, in field %s)', (e, inField) => {
    expect(actionFor(e, inField)).toBe('jump');
  });

  it('Escape works in a field', () => {
    expect(actionFor(k('Escape'), true)).toBe('escape');
  });

  it.each([
    [k('z', { ctrlKey: true }), false, 'undo'],
    [k('z', { metaKey: true }), false, 'undo'],
    [k('z', { ctrlKey: true }), true, null], // the field's own undo
    [k('Z', { ctrlKey: true }), false, null], // Ctrl+Shift+Z: redo is not ours
    [k('z', { ctrlKey: true, altKey: true }), false, null],
    [k('z'), false, null],
  ] as const)('Ctrl/Cmd+Z undoes outside text fields (%j, in field %s)', (e, inField, want) => {
    expect(actionFor(e, inField)).toBe(want);
  });

  it('modified letters are left to the system (Ctrl+C copies text, not the key)', () => {
    expect(actionFor(k('c', { ctrlKey: true }), false)).toBeNull();
    expect(actionFor(k('x', { altKey: true }), false)).toBeNull();
  });

  it('every action in the help table has the keys it lists', () => {
    // Each table entry's first form, typed: `g p` as g then p, `Ctrl+K or /` as Ctrl+K.
    const typed = (keys: string): KeyLike[] => {
      const first = (keys.split(/ or | \/ /)[0] as string).trim();
      if (first.startsWith('Ctrl+')) return [k(first.slice(5).toLowerCase(), { ctrlKey: true })];
      return first.split(' ').map((x) => k(x === 'Esc' ? 'Escape' : x));
    };
    for (const s of shortcuts('DEV')) {
      expect(press(typed(s.keys)).at(-1), s.keys).toBe(s.action);
    }
  });

  it("the help's examples use the user's prefix", () => {
    const jump = shortcuts('OPS').find((s) => s.action === 'jump');
    expect(jump?.label).toMatch(/OPS-42, ops 42, 42/);
    expect(shortcuts('OPS').some((s) => /SYN/.test(s.label))).toBe(false);
  });
});

/** The actions of key presses `ms` apart, outside a text field (unless `inField`). */
function press(events: KeyLike[], ms = 100, inField = false): (Action | null)[] {
  let state: KeyState = NO_KEYS;
  let now = 1_000;
  return events.map((e) => {
    const r = readKey(state, e, inField, now);
    state = r.state;
    now += ms;
    return r.action;
  });
}

const seq = (keys: string) => [...keys].map((key) => k(key));

describe('readKey: g sequences', () => {
  it.each([
    ['gp', ['first', 'sidebar']],
    ['ga', ['first', 'show-all']],
    ['gi', ['first', 'show-inbox']],
    ['gf', ['first', 'show-failed']],
    ['gs', ['first', 'show-standup']],
    ['s', ['sync']], // s alone still syncs
    ['gj', ['first', 'down']], // not a sequence: j acts as itself
    ['gg', ['first', 'first']],
    ['ggp', ['first', 'first', 'sidebar']], // the second g starts the sequence again
    ['gpp', ['first', 'sidebar', null]], // p alone is nothing
    ['gfx', ['first', 'show-failed', 'complete']],
    ['f', ['filter']], // f alone still filters
    ['pgf', [null, 'first', 'show-failed']],
    ['Gp', ['last', null]], // G (End) starts nothing
  ] as const)('%s → %j', (keys, want) => {
    expect(press(seq(keys))).toEqual(want);
  });

  it(`the second key counts within ${SEQUENCE_MS} ms after g, not later`, () => {
    expect(press(seq('gf'), SEQUENCE_MS)).toEqual(['first', 'show-failed']);
    expect(press(seq('gf'), SEQUENCE_MS + 1)).toEqual(['first', 'filter']);
  });

  it('Shift pressed alone between the keys does not end the sequence', () => {
    expect(press([k('g'), k('Shift'), k('p')])).toEqual(['first', null, 'sidebar']);
  });

  it('a modified second key is not part of a sequence', () => {
    expect(press([k('g'), k('p', { ctrlKey: true })])).toEqual(['first', null]);
    expect(press([k('g'), k('k', { ctrlKey: true })])).toEqual(['first', 'jump']);
  });

  it('in a text field g is typed: no action, no sequence', () => {
    expect(press(seq('gf'), 100, true)).toEqual([null, null]);
  });

  it('the help lists the sequences', () => {
    const table = shortcuts('DEV').map((s) => `${s.keys} ${s.action}`);
    expect(table).toEqual(expect.arrayContaining(['g p sidebar', 'g a show-all', 'g i show-inbox', 'g f show-failed', 'g s show-standup']));
  });
});
