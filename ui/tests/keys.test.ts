import { describe, expect, it } from 'vitest';
import { actionFor, shortcuts, type KeyLike } from '../src/lib/keys';

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

  it('every action in the help table has a key that triggers it', () => {
    const reachable = new Set(
      ['n', '/', 'j', 'k', 'g', 'G', 'Enter', 'x', 'e', 'm', 'c', 'Delete', 'r', 's', 'f', 'N', ',', 't', '?', 'Escape'].map((key) =>
        actionFor(k(key), false),
      ),
    );
    reachable.add(actionFor(k('z', { ctrlKey: true }), false));
    for (const s of shortcuts('DEV')) expect(reachable.has(s.action), s.action).toBe(true);
  });

  it("the help's examples use the user's prefix", () => {
    const jump = shortcuts('OPS').find((s) => s.action === 'jump');
    expect(jump?.label).toMatch(/OPS-42, ops 42, 42/);
    expect(shortcuts('OPS').some((s) => /SYN/.test(s.label))).toBe(false);
  });
});
