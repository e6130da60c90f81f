import { describe, expect, it } from 'vitest';
import { actionFor, SHORTCUTS, type KeyLike } from '../src/lib/keys';

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
    ['c', 'copy'],
    ['Delete', 'delete'],
    ['r', 'retry'],
    ['s', 'sync'],
    ['f', 'filter'],
    [',', 'settings'],
    ['t', 'theme'],
    ['?', 'help'],
    ['Escape', 'escape'],
    ['q', null],
  ] as const)('%s → %s outside a text field', (key, want) => {
    expect(actionFor(k(key), false)).toBe(want);
  });

  it.each(['n', 'j', 'x', 'Delete', '/', 'Enter', '?'])('%s is typed into a text field, not a shortcut', (key) => {
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

  it('modified letters are left to the system (Ctrl+C copies text, not the key)', () => {
    expect(actionFor(k('c', { ctrlKey: true }), false)).toBeNull();
    expect(actionFor(k('x', { altKey: true }), false)).toBeNull();
  });

  it('every action in the help table has a key that triggers it', () => {
    const reachable = new Set(
      ['n', '/', 'j', 'k', 'g', 'G', 'Enter', 'x', 'e', 'c', 'Delete', 'r', 's', 'f', ',', 't', '?', 'Escape'].map((key) =>
        actionFor(k(key), false),
      ),
    );
    for (const s of SHORTCUTS) expect(reachable.has(s.action), s.action).toBe(true);
  });
});
