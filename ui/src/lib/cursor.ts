// One current task: the highlighted row and the detail pane always name the same task, the one
// the keyboard acts on. Pure: tested in tests/cursor.test.ts.

export interface Cursor {
  uuid: string | null;
  /** Its index in the filtered list: where the task that takes its place is looked for. */
  index: number;
  /**
   * Opened by a jump while outside the filtered list (a completed task, say): it stays current
   * until the selection moves, as long as it exists.
   */
  pinned: boolean;
}

export const NO_CURSOR: Cursor = { uuid: null, index: 0, pinned: false };

/**
 * The cursor after the filtered list changed. A task still in the list stays current (its index
 * follows it); a pinned task that still exists stays current; otherwise the task that took its
 * place (same index, or the last row) becomes current, or nothing when the list is empty.
 * Returns `c` itself when nothing changed.
 */
export function reconcileCursor(
  c: Cursor,
  list: readonly { uuid: string }[],
  exists: (uuid: string) => boolean,
): Cursor {
  if (c.uuid !== null) {
    const at = list[c.index]?.uuid === c.uuid ? c.index : list.findIndex((t) => t.uuid === c.uuid);
    if (at >= 0) return at === c.index && !c.pinned ? c : { uuid: c.uuid, index: at, pinned: false };
    if (c.pinned && exists(c.uuid)) return c;
  }
  if (list.length === 0) return c.uuid === null && !c.pinned ? c : NO_CURSOR;
  const i = Math.min(Math.max(c.index, 0), list.length - 1);
  return { uuid: (list[i] as { uuid: string }).uuid, index: i, pinned: false };
}

/** The cursor on row `to` (clamped), e.g. after j / k / g / G or a click. */
export function cursorAt(list: readonly { uuid: string }[], to: number): Cursor {
  if (list.length === 0) return NO_CURSOR;
  const i = Math.min(Math.max(to, 0), list.length - 1);
  return { uuid: (list[i] as { uuid: string }).uuid, index: i, pinned: false };
}

/** The cursor on a task opened by uuid (a jump): pinned when the filtered list lacks it. */
export function cursorOn(list: readonly { uuid: string }[], uuid: string, hint: number): Cursor {
  const at = list.findIndex((t) => t.uuid === uuid);
  return at >= 0 ? { uuid, index: at, pinned: false } : { uuid, index: hint, pinned: true };
}
