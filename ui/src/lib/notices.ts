// The notice line: one notice at a time, a new one replaces the old. Info notices expire (4 s,
// 6 s when they offer Undo); error notices stay until dismissed, replaced, or until the same
// topic succeeds (the next capture, sync or save that works). Pure: AppState (state.svelte.ts)
// owns the timer.

export type NoticeTone = 'info' | 'error';
/** What an error is about, so that the next success of the same kind clears it. */
export type Topic = 'capture' | 'sync' | 'save';

export interface NoticeInput {
  text: string;
  tone: NoticeTone;
  topic?: Topic;
  /** The undo-stack entry the notice's Undo button undoes. */
  undoId?: number;
}

export interface Notice extends NoticeInput {
  id: number;
  /** ms since the epoch; null: stays until dismissed or replaced. */
  expiresAt: number | null;
}

export const INFO_MS = 4000;
export const UNDO_MS = 6000;

let seq = 0;

/** The notice to show now (it replaces whatever was shown). */
export function showNotice(input: NoticeInput, now: number): Notice {
  const life = input.tone === 'error' ? null : input.undoId !== undefined ? UNDO_MS : INFO_MS;
  return { ...input, id: ++seq, expiresAt: life === null ? null : now + life };
}

/** The notice still shown at `now` (null once it expired). */
export function expireNotice(n: Notice | null, now: number): Notice | null {
  return n !== null && n.expiresAt !== null && n.expiresAt <= now ? null : n;
}

/** After `topic` succeeded: an error notice about it is cleared; anything else stays. */
export function settleNotice(n: Notice | null, topic: Topic): Notice | null {
  return n !== null && n.tone === 'error' && n.topic === topic ? null : n;
}

/** ms until the notice expires (for the timer), or null when it does not. */
export function noticeMsLeft(n: Notice | null, now: number): number | null {
  return n === null || n.expiresAt === null ? null : Math.max(0, n.expiresAt - now);
}
