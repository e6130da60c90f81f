// The keyboard map: one table, a row for each shortcut: the keys that press it, when it acts,
// what it does and what the help says. `readKey` finds the row of a key press (with the `g`
// sequences, time passed in), `Keyboard` runs it on the app (`KeyTarget`), and the help dialog
// lists the same rows (`shortcuts`). No DOM but `keyWhere`: tested in tests/keys.test.ts and
// tests/keymap.test.ts.
import type { NoticeInput } from './notices';
import type { EntryId } from './sidebar';
import type { LocalTask } from './types';

export type Action =
  | 'capture'
  | 'jump'
  | 'down'
  | 'up'
  | 'first'
  | 'last'
  | 'open'
  | 'complete'
  | 'edit'
  | 'move'
  | 'copy'
  | 'branch'
  | 'delete'
  | 'undo'
  | 'retry'
  | 'sync'
  | 'filter'
  | 'next'
  | 'settings'
  | 'theme'
  | 'help'
  | 'escape'
  | 'sidebar'
  | 'show-all'
  | 'show-inbox'
  | 'show-failed'
  | 'show-standup';

export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
}

/**
 * One way to press a shortcut. `key` as `KeyboardEvent.key` gives it (Shift is in the key: `G`,
 * `?`). Ctrl or Cmd (`ctrl`) and Alt: held (true), not held (false, the default), or either
 * (null). Only a chord `inField` acts in a text field (the field gets the rest); a chord `after`
 * a key is the second of a sequence (`g p`), pressed within `SEQUENCE_MS` after it.
 */
export interface Chord {
  key: string;
  /** Either case (Ctrl+K and Ctrl+Shift+K). */
  anyCase?: boolean;
  ctrl?: boolean | null;
  alt?: boolean | null;
  inField?: boolean;
  after?: string;
}

/** Where a key press lands, as the rows' `when` reads it. */
export interface KeyContext {
  /** In a text field (input, textarea, select, contenteditable). */
  inField: boolean;
  /** On a button (its own Enter). */
  onButton: boolean;
  /** A dialog is open. */
  dialog: boolean;
}

/** The Standup view's lines, when it shows in the list's place (StandupView's exports). */
export interface StandupKeys {
  move(by: number): void;
  first(): void;
  last(): void;
  open(): void;
}

/** What Esc closes, innermost first. */
export const ESC_ORDER = ['dialog', 'sidebar', 'move', 'edit', 'detail'] as const;
export type Layer = (typeof ESC_ORDER)[number];

/** What the keys act on: the app (controller.ts). */
export interface KeyTarget {
  /** The Standup view's lines while it shows in the list's place, else null. */
  readonly standup: StandupKeys | null;
  /** The task keys act on (the highlighted row or standup line), and its row (-1: none). */
  current(): { task: LocalTask | null; index: number };
  /** How many rows the list shows. */
  readonly rows: number;
  readonly actions: { toggleComplete(t: LocalTask): unknown; delete(t: LocalTask): unknown; undoLast(): unknown };
  /** The row `index` current (clamped), in view. */
  move(index: number): void;
  focusMain(): void;
  focusCapture(): void;
  focusFilter(): void;
  focusSidebar(): unknown;
  openDialog(d: 'jump' | 'settings' | 'help'): void;
  open(t: LocalTask): void;
  edit(t: LocalTask): void;
  startMove(t: LocalTask): void;
  copyKey(t: LocalTask): unknown;
  copyBranch(t: LocalTask): unknown;
  fix(t: LocalTask): unknown;
  syncNow(): unknown;
  toggleNext(): void;
  toggleTheme(): void;
  /** The sidebar lists this entry. */
  hasEntry(id: EntryId): boolean;
  select(id: EntryId): unknown;
  notify(n: NoticeInput): void;
  /** The list back in the standup's place (the list's own views: the filter, Next). */
  showList(): Promise<void>;
  isOpen(l: Layer): boolean;
  close(l: Layer): void;
  /** The focus out of the text field. */
  blur(): void;
  clearNotice(): void;
}

export interface Binding {
  action: Action;
  /** The keys as the help shows them. */
  keys: string;
  chords: Chord[];
  /** The help's words; `up` is the user's prefix in capitals, for the examples. */
  label: (up: string) => string;
  /** When the key is this row's (else it goes on as typed, not prevented); default: no dialog open. */
  when?: (c: KeyContext) => boolean;
  /** What it does. */
  run: (a: KeyTarget, c: KeyContext) => void;
  /** What it does while the Standup shows instead; 'list': the list first, then `run`. */
  standup?: ((v: StandupKeys) => void) | 'list';
}

const noDialog = (c: KeyContext) => !c.dialog;
const always = () => true;
/** A key alone (Shift aside), outside text fields. */
const k = (key: string, more: Partial<Chord> = {}): Chord => ({ key, ...more });
/** With the current task, if there is one (the key is taken either way). */
const withTask = (f: (a: KeyTarget, t: LocalTask) => void) => (a: KeyTarget) => {
  const t = a.current().task;
  if (t) f(a, t);
};

/** The shortcuts, in the help's order. */
export const KEYMAP: readonly Binding[] = [
  { action: 'capture', keys: 'n', chords: [k('n')], label: () => 'New task (focus quick capture; Enter saves)', run: (a) => a.focusCapture() },
  {
    action: 'jump',
    keys: 'Ctrl+K or /',
    chords: [k('k', { anyCase: true, ctrl: true, alt: null, inField: true }), k('/')],
    label: (up) => `Jump to a task: ${up}-42, ${up.toLowerCase()} 42, 42, a UUID, or words`,
    when: always,
    run: (a) => a.openDialog('jump'),
  },
  {
    action: 'down',
    keys: 'j / ↓',
    chords: [k('j'), k('ArrowDown')],
    label: () => 'Next task',
    run: (a) => {
      a.move(a.current().index + 1);
      a.focusMain();
    },
    standup: (v) => v.move(1),
  },
  {
    action: 'up',
    keys: 'k / ↑',
    chords: [k('k'), k('ArrowUp')],
    label: () => 'Previous task',
    run: (a) => {
      const { index } = a.current();
      a.move(index < 0 ? 0 : index - 1);
      a.focusMain();
    },
    standup: (v) => v.move(-1),
  },
  { action: 'first', keys: 'g / Home', chords: [k('g'), k('Home')], label: () => 'First task', run: (a) => a.move(0), standup: (v) => v.first() },
  { action: 'last', keys: 'G / End', chords: [k('G'), k('End')], label: () => 'Last task', run: (a) => a.move(a.rows - 1), standup: (v) => v.last() },
  {
    action: 'sidebar',
    keys: 'g p',
    chords: [k('p', { after: 'g' })],
    label: () => 'Projects sidebar (then j / k, Enter shows the list, Esc goes back)',
    run: (a) => void a.focusSidebar(),
  },
  { action: 'show-all', keys: 'g a', chords: [k('a', { after: 'g' })], label: () => 'All tasks, every project', run: (a) => void a.select('all') },
  {
    action: 'show-inbox',
    keys: 'g i',
    chords: [k('i', { after: 'g' })],
    label: () => "This device's inbox",
    run: (a) => {
      if (a.hasEntry('inbox')) void a.select('inbox');
      else a.notify({ text: "This device's inbox is empty: every task is in a server project.", tone: 'info' });
    },
  },
  { action: 'show-failed', keys: 'g f', chords: [k('f', { after: 'g' })], label: () => 'Failed tasks', run: (a) => void a.select('failed') },
  {
    action: 'show-standup',
    keys: 'g s',
    chords: [k('s', { after: 'g' })],
    label: () => 'Standup: per member, done, created and open since the last working day',
    run: (a) => void a.select('standup'),
  },
  {
    action: 'open',
    keys: 'Enter / o',
    chords: [k('Enter'), k('o')],
    label: () => 'Open the task',
    // Enter on a focused button or link is the button's, not "open".
    when: (c) => !c.dialog && !c.onButton,
    run: withTask((a, t) => a.open(t)),
    standup: (v) => v.open(),
  },
  { action: 'complete', keys: 'x', chords: [k('x')], label: () => 'Complete (or reopen)', run: withTask((a, t) => void a.actions.toggleComplete(t)) },
  { action: 'edit', keys: 'e', chords: [k('e')], label: () => 'Edit description, notes and tags', run: withTask((a, t) => a.edit(t)) },
  {
    action: 'move',
    keys: 'm',
    chords: [k('m')],
    label: (up) => `Move to another project (a numbered task gets the next key there; ${up}-3 still finds it)`,
    run: withTask((a, t) => a.startMove(t)),
  },
  { action: 'copy', keys: 'c', chords: [k('c')], label: () => 'Copy the key', run: withTask((a, t) => void a.copyKey(t)) },
  {
    action: 'branch',
    keys: 'b',
    chords: [k('b')],
    label: () => 'Copy the git branch name (the key and the description: syn-42-short-title)',
    run: withTask((a, t) => void a.copyBranch(t)),
  },
  { action: 'delete', keys: 'Delete', chords: [k('Delete')], label: () => 'Delete', run: withTask((a, t) => void a.actions.delete(t)) },
  {
    action: 'undo',
    keys: 'Ctrl+Z',
    // In a text field Ctrl+Z is the field's (it undoes typing there); Ctrl+Shift+Z (`Z`) is not ours.
    chords: [k('z', { ctrl: true })],
    label: () => 'Undo the last complete, reopen, delete, edit or discard',
    run: (a) => void a.actions.undoLast(),
  },
  { action: 'retry', keys: 'r', chords: [k('r')], label: () => 'Fix a failed task: send again, or choose its project', run: withTask((a, t) => void a.fix(t)) },
  { action: 'sync', keys: 's', chords: [k('s')], label: () => 'Sync now', run: (a) => void a.syncNow() },
  { action: 'filter', keys: 'f', chords: [k('f')], label: () => 'Filter the list', run: (a) => a.focusFilter(), standup: 'list' },
  {
    action: 'next',
    keys: 'N',
    chords: [k('N')],
    label: () => 'Next: what can be done now, subtasks first (again: back)',
    run: (a) => a.toggleNext(),
    standup: 'list',
  },
  { action: 'settings', keys: ',', chords: [k(',')], label: () => 'Settings', run: (a) => a.openDialog('settings') },
  { action: 'theme', keys: 't', chords: [k('t')], label: () => 'Light / dark theme', run: (a) => a.toggleTheme() },
  { action: 'help', keys: '?', chords: [k('?')], label: () => 'This help', run: (a) => a.openDialog('help') },
  {
    action: 'escape',
    keys: 'Esc',
    chords: [k('Escape', { ctrl: null, alt: null, inField: true })],
    label: () => 'Close / back to the list',
    when: always,
    // The innermost thing open closes; with none, Esc leaves a text field, else clears the notice.
    run: (a, c) => {
      const layer = ESC_ORDER.find((l) => a.isOpen(l));
      if (layer !== undefined) a.close(layer);
      else if (c.inField) a.blur();
      else a.clearNotice();
      a.focusMain();
    },
  },
];

const BY_ACTION = new Map(KEYMAP.map((b) => [b.action, b]));

/** The row of an action. */
export function binding(action: Action): Binding {
  return BY_ACTION.get(action) as Binding;
}

export interface Shortcut {
  keys: string;
  action: Action;
  label: string;
}

/** The help's table, its examples in the user's own prefix (`DEV` gives `dev 42, DEV-42`). */
export function shortcuts(prefix: string): Shortcut[] {
  const up = prefix.toUpperCase();
  return KEYMAP.map((b) => ({ keys: b.keys, action: b.action, label: b.label(up) }));
}

const held = (want: boolean | null | undefined, is: boolean) => want === null || (want ?? false) === is;

function pressed(c: Chord, e: KeyLike, inField: boolean): boolean {
  return (
    (c.anyCase ? e.key.toLowerCase() : e.key) === c.key &&
    (!inField || c.inField === true) &&
    held(c.ctrl, e.ctrlKey || e.metaKey) &&
    held(c.alt, e.altKey)
  );
}

/** The first row with a chord for this key press (`after`: the key before it, for a sequence). */
function find(e: KeyLike, inField: boolean, after?: string): Action | null {
  return KEYMAP.find((b) => b.chords.some((c) => c.after === after && pressed(c, e, inField)))?.action ?? null;
}

/**
 * The action for a single key press. In a text field only Ctrl+K and Esc count (the field gets
 * the rest, Ctrl+Z included: it undoes typing there); elsewhere the single-key shortcuts apply.
 */
export function actionFor(e: KeyLike, inField: boolean): Action | null {
  return find(e, inField);
}

/** How long after `g` a second key still makes a sequence (`g p`), ms. */
export const SEQUENCE_MS = 1000;

/** The keys that start a sequence (`g`). */
const LEADS = new Set(KEYMAP.flatMap((b) => b.chords.flatMap((c) => (c.after === undefined ? [] : [c.after]))));

const MODIFIER_KEYS = new Set(['Shift', 'Control', 'Alt', 'Meta', 'AltGraph', 'CapsLock']);

/** What the key reader remembers between presses: a sequence's first key (outside a field), and when. */
export interface KeyState {
  lead: string | null;
  at: number;
}

export const NO_KEYS: KeyState = { lead: null, at: 0 };

/**
 * A key press with the sequences: `g` is "first task" at once and starts a sequence; `p`, `a`,
 * `i`, `f` or `s` pressed within `SEQUENCE_MS` after it (no modifier, outside a text field) is
 * `g p`, `g a`, `g i`, `g f`, `g s` instead of its own action (`f` alone is the filter, `s`
 * sync). Any other key ends the sequence and acts as itself; a modifier pressed alone does not
 * end it. `now` in ms.
 */
export function readKey(state: KeyState, e: KeyLike, inField: boolean, now: number): { action: Action | null; state: KeyState } {
  if (MODIFIER_KEYS.has(e.key)) return { action: null, state };
  const sequence = state.lead !== null && now - state.at <= SEQUENCE_MS ? find(e, inField, state.lead) : null;
  if (sequence !== null) return { action: sequence, state: NO_KEYS };
  const plain = !inField && !e.ctrlKey && !e.metaKey && !e.altKey;
  return { action: actionFor(e, inField), state: plain && LEADS.has(e.key) ? { lead: e.key, at: now } : NO_KEYS };
}

/** A key event as `Keyboard` reads it. */
export interface KeyPress extends KeyLike {
  readonly defaultPrevented: boolean;
  preventDefault(): void;
}

/** Where a key event lands (the DOM's side of `KeyContext`). */
export function keyWhere(target: EventTarget | null): { inField: boolean; onButton: boolean } {
  const inField = target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
  return { inField, onButton: target instanceof HTMLButtonElement };
}

/** Runs a row: in the Standup its own way, if it has one. */
function run(b: Binding, a: KeyTarget, c: KeyContext): void {
  const standup = a.standup;
  if (standup !== null && b.standup !== undefined) {
    if (b.standup === 'list') void a.showList().then(() => run(b, a, c));
    else b.standup(standup);
    return;
  }
  b.run(a, c);
}

/** The window's key handler: reads each key press, and runs its row when it applies. */
export class Keyboard {
  private state: KeyState = NO_KEYS;

  constructor(
    private target: KeyTarget,
    private clock: () => number = () => performance.now(),
  ) {}

  /** A key press: the action it ran (its event prevented), or null (left as it was). */
  handle(e: KeyPress, where: { inField: boolean; onButton: boolean }): Action | null {
    if (e.defaultPrevented) return null;
    const read = readKey(this.state, e, where.inField, this.clock());
    this.state = read.state;
    if (read.action === null) return null;
    const b = binding(read.action);
    const c: KeyContext = { ...where, dialog: this.target.isOpen('dialog') };
    if (!(b.when ?? noDialog)(c)) return null;
    e.preventDefault();
    run(b, this.target, c);
    return b.action;
  }
}
