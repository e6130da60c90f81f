import { describe, expect, it } from 'vitest';
import { ESC_ORDER, KEYMAP, Keyboard, SEQUENCE_MS, shortcuts, type Chord, type KeyTarget, type Layer, type StandupKeys } from '../src/lib/keymap';
import type { EntryId } from '../src/lib/sidebar';
import type { LocalTask } from '../src/lib/types';
import { task } from './fixtures';

const T = task({ key: 'SYN-7' });
const label = (x: unknown) => (typeof x === 'object' && x !== null && 'uuid' in x ? ((x as LocalTask).key ?? 'task') : String(x));

interface Setup {
  view?: 'list' | 'standup';
  /** The current task (the highlighted row or standup line), and its row. */
  task?: LocalTask | null;
  index?: number;
  rows?: number;
  open?: Layer[];
  entries?: EntryId[];
}

/** A KeyTarget that writes down what the keys asked of it. */
function fakeApp(setup: Setup = {}) {
  const calls: string[] = [];
  const log =
    (name: string) =>
    (...args: unknown[]) =>
      void calls.push([name, ...args.map(label)].join(' '));
  const open = new Set(setup.open ?? []);
  let view = setup.view ?? 'list';
  const standup: StandupKeys = { move: log('standup.move'), first: log('standup.first'), last: log('standup.last'), open: log('standup.open') };
  const target: KeyTarget = {
    get standup() {
      return view === 'standup' ? standup : null;
    },
    current: () => ({ task: setup.task === undefined ? T : setup.task, index: setup.index ?? 3 }),
    rows: setup.rows ?? 10,
    actions: { toggleComplete: log('complete'), delete: log('delete'), undoLast: log('undo') },
    move: log('move'),
    focusMain: log('focusMain'),
    focusCapture: log('focusCapture'),
    focusFilter: log('focusFilter'),
    focusSidebar: log('focusSidebar'),
    openDialog: log('dialog'),
    open: log('open'),
    edit: log('edit'),
    startMove: log('startMove'),
    copyKey: log('copyKey'),
    copyBranch: log('copyBranch'),
    fix: log('fix'),
    syncNow: log('sync'),
    toggleNext: log('toggleNext'),
    toggleTheme: log('toggleTheme'),
    hasEntry: (id) => (setup.entries ?? ['all', 'inbox', 'failed', 'standup']).includes(id),
    select: log('select'),
    notify: (n) => void calls.push(`notify ${n.text}`),
    showList: async () => {
      calls.push('showList');
      view = 'list';
    },
    isOpen: (l) => open.has(l),
    close: (l) => {
      calls.push(`close ${l}`);
      open.delete(l);
    },
    blur: log('blur'),
    clearNotice: log('clearNotice'),
  };
  return { target, calls };
}

/** `Ctrl+k`, `Meta+k`, `Alt+x`, `Escape`, `g`: a key press as the window gets it. */
function keyEvent(chord: string, defaultPrevented = false) {
  const parts = chord.split('+');
  const key = parts.length > 1 && parts.at(-1) === '' ? '+' : (parts.pop() as string);
  const ev = {
    key,
    ctrlKey: parts.includes('Ctrl'),
    metaKey: parts.includes('Meta'),
    altKey: parts.includes('Alt'),
    defaultPrevented,
    preventDefault: () => void (ev.defaultPrevented = true),
  };
  return ev;
}

interface Where {
  inField?: boolean;
  onButton?: boolean;
  /** ms between presses */
  gap?: number;
}

/** Presses `keys` (space-separated chords) on a fresh Keyboard; what the app was asked, and which presses were taken. */
async function press(keys: string, setup: Setup = {}, where: Where = {}) {
  const { target, calls } = fakeApp(setup);
  let now = 5_000;
  const keyboard = new Keyboard(target, () => now);
  const taken: boolean[] = [];
  for (const chord of keys.split(' ')) {
    const e = keyEvent(chord);
    keyboard.handle(e, { inField: where.inField ?? false, onButton: where.onButton ?? false });
    taken.push(e.defaultPrevented);
    now += where.gap ?? 100;
  }
  await Promise.resolve(); // the standup's way to the list (`showList`) settles
  await Promise.resolve();
  return { calls, taken };
}

describe('Keyboard: in the list', () => {
  it.each([
    ['n', ['focusCapture']],
    ['/', ['dialog jump']],
    ['Ctrl+k', ['dialog jump']],
    ['Ctrl+K', ['dialog jump']],
    ['Meta+k', ['dialog jump']],
    ['Ctrl+Alt+k', ['dialog jump']],
    ['j', ['move 4', 'focusMain']],
    ['ArrowDown', ['move 4', 'focusMain']],
    ['k', ['move 2', 'focusMain']],
    ['ArrowUp', ['move 2', 'focusMain']],
    ['g', ['move 0']],
    ['Home', ['move 0']],
    ['G', ['move 9']],
    ['End', ['move 9']],
    ['Enter', ['open SYN-7']],
    ['o', ['open SYN-7']],
    ['x', ['complete SYN-7']],
    ['e', ['edit SYN-7']],
    ['m', ['startMove SYN-7']],
    ['c', ['copyKey SYN-7']],
    ['Delete', ['delete SYN-7']],
    ['Ctrl+z', ['undo']],
    ['Meta+z', ['undo']],
    ['r', ['fix SYN-7']],
    ['s', ['sync']],
    ['f', ['focusFilter']],
    ['N', ['toggleNext']],
    [',', ['dialog settings']],
    ['t', ['toggleTheme']],
    ['?', ['dialog help']],
    ['g p', ['move 0', 'focusSidebar']],
    ['g a', ['move 0', 'select all']],
    ['g i', ['move 0', 'select inbox']],
    ['g f', ['move 0', 'select failed']],
    ['g s', ['move 0', 'select standup']],
    ['g s x', ['move 0', 'select standup', 'complete SYN-7']],
    ['g g p', ['move 0', 'move 0', 'focusSidebar']],
    ['g Shift p', ['move 0', 'focusSidebar']],
    ['g j', ['move 0', 'move 4', 'focusMain']],
    ['Escape', ['clearNotice', 'focusMain']],
    ['Ctrl+Escape', ['clearNotice', 'focusMain']],
  ] as const)('%s → %j', async (keys, want) => {
    const { calls, taken } = await press(keys);
    expect(calls).toEqual(want);
    // Every key pressed is taken, but Shift alone.
    expect(taken).toEqual(keys.split(' ').map((k) => k !== 'Shift'));
  });

  it.each(['q', 'p', 'Ctrl+c', 'Ctrl+Z', 'Ctrl+Alt+z', 'Alt+x', 'Meta+j', 'Shift', 'F5'])('%s is not a shortcut: nothing, and the key goes on', async (keys) => {
    expect(await press(keys)).toEqual({ calls: [], taken: [false] });
  });

  it.each(['Enter', 'o', 'x', 'e', 'm', 'c', 'Delete', 'r'])('%s with no current task does nothing, yet the key is taken', async (keys) => {
    expect(await press(keys, { task: null, index: -1 })).toEqual({ calls: [], taken: [true] });
  });

  it('j and k from no row: the first row', async () => {
    expect((await press('j', { task: null, index: -1 })).calls).toEqual(['move 0', 'focusMain']);
    expect((await press('k', { task: null, index: -1 })).calls).toEqual(['move 0', 'focusMain']);
  });

  it('g i with no inbox listed says why instead', async () => {
    expect((await press('g i', { entries: ['all'] })).calls).toEqual(['move 0', "notify This device's inbox is empty: every task is in a server project."]);
  });

  it(`a sequence's second key counts within ${SEQUENCE_MS} ms, not later`, async () => {
    expect((await press('g f', {}, { gap: SEQUENCE_MS })).calls).toEqual(['move 0', 'select failed']);
    expect((await press('g f', {}, { gap: SEQUENCE_MS + 1 })).calls).toEqual(['move 0', 'focusFilter']);
  });

  it('a key another handler took is left alone, and starts no sequence', async () => {
    const { target, calls } = fakeApp();
    const keyboard = new Keyboard(target, () => 1_000);
    const g = keyEvent('g', true);
    expect(keyboard.handle(g, { inField: false, onButton: false })).toBeNull();
    const p = keyEvent('p');
    expect(keyboard.handle(p, { inField: false, onButton: false })).toBeNull();
    expect(calls).toEqual([]);
    expect(p.defaultPrevented).toBe(false);
  });
});

describe('Keyboard: in a text field', () => {
  const plain = KEYMAP.flatMap((b) => b.chords.filter((c) => !c.inField && !c.ctrl && c.after === undefined).map((c) => c.key));

  it.each(plain)('%s is typed, not a shortcut', async (key) => {
    expect(await press(key, {}, { inField: true })).toEqual({ calls: [], taken: [false] });
  });

  it.each([
    ['g p', []],
    ['g s', []],
    ['Ctrl+z', []], // the field's own undo
    ['Ctrl+k', ['dialog jump']],
    ['Escape', ['blur', 'focusMain']], // nothing open: Esc leaves the field
  ] as const)('%s → %j', async (keys, want) => {
    const { calls, taken } = await press(keys, {}, { inField: true });
    expect(calls).toEqual(want);
    expect(taken.some((x) => x)).toBe(want.length > 0);
  });
});

describe('Keyboard: a dialog open has the keys, but for Esc and Ctrl+K', () => {
  it.each([
    ['Escape', ['close dialog', 'focusMain']],
    ['Ctrl+k', ['dialog jump']],
    ['/', ['dialog jump']],
    ['j', []],
    ['x', []],
    ['Enter', []],
    ['?', []],
    ['g s', []],
    ['Ctrl+z', []],
  ] as const)('%s → %j', async (keys, want) => {
    const { calls, taken } = await press(keys, { open: ['dialog'] });
    expect(calls).toEqual(want);
    expect(taken.some((x) => x)).toBe(want.length > 0);
  });
});

describe('Keyboard: on a button', () => {
  it.each([
    ['Enter', []], // the button's own
    ['o', []],
    ['x', ['complete SYN-7']],
    ['j', ['move 4', 'focusMain']],
  ] as const)('%s → %j', async (keys, want) => {
    const { calls, taken } = await press(keys, {}, { onButton: true });
    expect(calls).toEqual(want);
    expect(taken).toEqual([want.length > 0]);
  });
});

describe('Keyboard: in the Standup', () => {
  it.each([
    ['j', ['standup.move 1']],
    ['ArrowDown', ['standup.move 1']],
    ['k', ['standup.move -1']],
    ['g', ['standup.first']],
    ['Home', ['standup.first']],
    ['G', ['standup.last']],
    ['Enter', ['standup.open']],
    ['o', ['standup.open']],
    ['x', ['complete SYN-7']],
    ['c', ['copyKey SYN-7']],
    ['n', ['focusCapture']],
    ['f', ['showList', 'focusFilter']], // the list's own views bring the list back
    ['N', ['showList', 'toggleNext']],
    ['g a', ['standup.first', 'select all']],
    ['g f', ['standup.first', 'select failed']],
    ['Escape', ['clearNotice', 'focusMain']],
  ] as const)('%s → %j', async (keys, want) => {
    expect((await press(keys, { view: 'standup' })).calls).toEqual(want);
  });

  it('with no line highlighted, the task keys do nothing', async () => {
    expect((await press('x', { view: 'standup', task: null, index: -1 })).calls).toEqual([]);
  });
});

describe('Esc closes the innermost thing open', () => {
  it.each([
    [['dialog', 'sidebar', 'detail'], false, 'close dialog'],
    [['sidebar', 'move', 'detail'], false, 'close sidebar'],
    [['move', 'edit', 'detail'], false, 'close move'],
    [['edit', 'detail'], true, 'close edit'],
    [['detail'], true, 'close detail'],
    [[], true, 'blur'],
    [[], false, 'clearNotice'],
  ] as const)('open %j (in a field: %s) → %s, then the focus back', async (open, inField, want) => {
    expect((await press('Escape', { open: [...open] }, { inField })).calls).toEqual([want, 'focusMain']);
  });

  it('names every layer once', () => {
    expect([...ESC_ORDER].sort()).toEqual(['detail', 'dialog', 'edit', 'move', 'sidebar']);
  });
});

describe('the help is the key map', () => {
  it('one row per action', () => {
    const actions = KEYMAP.map((b) => b.action);
    expect(new Set(actions).size).toBe(actions.length);
  });

  // How the help writes a chord.
  const shown = (c: Chord) => {
    const key = ({ ArrowDown: '↓', ArrowUp: '↑', Escape: 'Esc' } as Record<string, string>)[c.key] ?? c.key;
    return `${c.after ? `${c.after} ` : ''}${c.ctrl ? `Ctrl+${key.toUpperCase()}` : key}`;
  };

  it.each(KEYMAP.map((b) => [b.keys, b] as const))('%s: the help lists exactly the keys that press it', (_, b) => {
    expect(b.keys.split(/ or | \/ /).sort()).toEqual(b.chords.map(shown).sort());
  });

  it('shows what it showed before the table', () => {
    expect(shortcuts('DEV').map((s) => [s.keys, s.label])).toEqual([
      ['n', 'New task (focus quick capture; Enter saves)'],
      ['Ctrl+K or /', 'Jump to a task: DEV-42, dev 42, 42, a UUID, or words'],
      ['j / ↓', 'Next task'],
      ['k / ↑', 'Previous task'],
      ['g / Home', 'First task'],
      ['G / End', 'Last task'],
      ['g p', 'Projects sidebar (then j / k, Enter shows the list, Esc goes back)'],
      ['g a', 'All tasks, every project'],
      ['g i', "This device's inbox"],
      ['g f', 'Failed tasks'],
      ['g s', 'Standup: per member, done, created and open since the last working day'],
      ['Enter / o', 'Open the task'],
      ['x', 'Complete (or reopen)'],
      ['e', 'Edit description, notes and tags'],
      ['m', 'Move to another project (a numbered task gets the next key there; DEV-3 still finds it)'],
      ['c', 'Copy the key'],
      ['b', 'Copy the git branch name (the key and the description: syn-42-short-title)'],
      ['Delete', 'Delete'],
      ['Ctrl+Z', 'Undo the last complete, reopen, delete, edit or discard'],
      ['r', 'Fix a failed task: send again, or choose its project'],
      ['s', 'Sync now'],
      ['f', 'Filter the list'],
      ['N', 'Next: what can be done now, subtasks first (again: back)'],
      [',', 'Settings'],
      ['t', 'Light / dark theme'],
      ['?', 'This help'],
      ['Esc', 'Close / back to the list'],
    ]);
  });
});
