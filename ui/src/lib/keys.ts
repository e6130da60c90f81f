// Keyboard shortcuts: one table, used by the key handler and shown in the help dialog. Single
// keys (`actionFor`) and two-key sequences after `g` (`readKey`).

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

export interface Shortcut {
  keys: string;
  action: Action;
  label: string;
}

/** The shortcut table, its examples in the user's own prefix (`DEV` gives `dev 42, DEV-42`). */
export function shortcuts(prefix: string): Shortcut[] {
  const up = prefix.toUpperCase();
  return [
    { keys: 'n', action: 'capture', label: 'New task (focus quick capture; Enter saves)' },
    { keys: 'Ctrl+K or /', action: 'jump', label: `Jump to a task: ${up}-42, ${up.toLowerCase()} 42, 42, a UUID, or words` },
    { keys: 'j / ↓', action: 'down', label: 'Next task' },
    { keys: 'k / ↑', action: 'up', label: 'Previous task' },
    { keys: 'g / Home', action: 'first', label: 'First task' },
    { keys: 'G / End', action: 'last', label: 'Last task' },
    { keys: 'g p', action: 'sidebar', label: 'Projects sidebar (then j / k, Enter shows the list, Esc goes back)' },
    { keys: 'g a', action: 'show-all', label: 'All tasks, every project' },
    { keys: 'g i', action: 'show-inbox', label: "This device's inbox" },
    { keys: 'g f', action: 'show-failed', label: 'Failed tasks' },
    { keys: 'g s', action: 'show-standup', label: 'Standup: per member, done, created and open since the last working day' },
    { keys: 'Enter / o', action: 'open', label: 'Open the task' },
    { keys: 'x', action: 'complete', label: 'Complete (or reopen)' },
    { keys: 'e', action: 'edit', label: 'Edit description, notes and tags' },
    { keys: 'm', action: 'move', label: `Move to another project (a numbered task gets the next key there; ${up}-3 still finds it)` },
    { keys: 'c', action: 'copy', label: 'Copy the key' },
    { keys: 'Delete', action: 'delete', label: 'Delete' },
    { keys: 'Ctrl+Z', action: 'undo', label: 'Undo the last complete, reopen, delete, edit or discard' },
    { keys: 'r', action: 'retry', label: 'Fix a failed task: send again, or choose its project' },
    { keys: 's', action: 'sync', label: 'Sync now' },
    { keys: 'f', action: 'filter', label: 'Filter the list' },
    { keys: 'N', action: 'next', label: 'Next: what can be done now, subtasks first (again: back)' },
    { keys: ',', action: 'settings', label: 'Settings' },
    { keys: 't', action: 'theme', label: 'Light / dark theme' },
    { keys: '?', action: 'help', label: 'This help' },
    { keys: 'Esc', action: 'escape', label: 'Close / back to the list' },
  ];
}

export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
}

/**
 * The action for a key press. In a text field only Ctrl+K and Esc count (the field gets the
 * rest, Ctrl+Z included: it undoes typing there); elsewhere the single-key shortcuts apply.
 */
export function actionFor(e: KeyLike, inField: boolean): Action | null {
  const mod = e.ctrlKey || e.metaKey;
  if (mod && e.key.toLowerCase() === 'k') return 'jump';
  if (mod && e.key === 'z' && !e.altKey && !inField) return 'undo';
  if (e.key === 'Escape') return 'escape';
  if (inField || mod || e.altKey) return null;
  switch (e.key) {
    case 'n':
      return 'capture';
    case '/':
      return 'jump';
    case 'j':
    case 'ArrowDown':
      return 'down';
    case 'k':
    case 'ArrowUp':
      return 'up';
    case 'g':
    case 'Home':
      return 'first';
    case 'G':
    case 'End':
      return 'last';
    case 'Enter':
    case 'o':
      return 'open';
    case 'x':
      return 'complete';
    case 'e':
      return 'edit';
    case 'm':
      return 'move';
    case 'c':
      return 'copy';
    case 'Delete':
      return 'delete';
    case 'r':
      return 'retry';
    case 's':
      return 'sync';
    case 'f':
      return 'filter';
    case 'N':
      return 'next';
    case ',':
      return 'settings';
    case 't':
      return 'theme';
    case '?':
      return 'help';
    default:
      return null;
  }
}

/** How long after `g` a second key still makes a sequence (`g p`), ms. */
export const SEQUENCE_MS = 1000;

/** The second key after `g`, and its action. */
const AFTER_G: Readonly<Record<string, Action>> = { p: 'sidebar', a: 'show-all', i: 'show-inbox', f: 'show-failed', s: 'show-standup' };

const MODIFIER_KEYS = new Set(['Shift', 'Control', 'Alt', 'Meta', 'AltGraph', 'CapsLock']);

/** What the key reader remembers between presses: when `g` was pressed (outside a field). */
export interface KeyState {
  gAt: number | null;
}

export const NO_KEYS: KeyState = { gAt: null };

/**
 * A key press with the sequences: `g` is "first task" at once and starts a sequence; `p`, `a`,
 * `i`, `f` or `s` pressed within `SEQUENCE_MS` after it (no modifier, outside a text field) is
 * `g p`, `g a`, `g i`, `g f`, `g s` instead of its own action (`f` alone is the filter, `s`
 * sync). Any other key ends the sequence and acts as itself; a modifier pressed alone does not
 * end it. `now` in ms.
 */
export function readKey(state: KeyState, e: KeyLike, inField: boolean, now: number): { action: Action | null; state: KeyState } {
  if (MODIFIER_KEYS.has(e.key)) return { action: null, state };
  const plain = !inField && !e.ctrlKey && !e.metaKey && !e.altKey;
  const sequence = plain && state.gAt !== null && now - state.gAt <= SEQUENCE_MS ? AFTER_G[e.key] : undefined;
  if (sequence !== undefined) return { action: sequence, state: NO_KEYS };
  const action = actionFor(e, inField);
  return { action, state: plain && e.key === 'g' ? { gAt: now } : NO_KEYS };
}
