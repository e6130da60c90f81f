// What the row markers and the header say about sync. Pure: tested in tests/status.test.ts.
// The header counts tasks (`status.pending`, `in_flight`, `failed`, `local` are task counts),
// and a row's marker reads the same facts, so the two never disagree.
import { movingTo } from './moves';
import type { LocalTask, SyncStatus } from './types';

/** Numbers as the UI shows them (`50,000`). */
export const fmt = (n: number): string => n.toLocaleString('en-US');

/** `1 task`, `3 tasks`. */
export const plural = (n: number, word: string): string => `${fmt(n)} ${word}${n === 1 ? '' : 's'}`;

export type MarkerTone = 'failed' | 'local' | 'offline' | 'sending';
export interface Marker {
  text: string;
  tone: MarkerTone;
}

export const INBOX_MARKER = 'Inbox · this device';

function secondsUntil(iso: string | null | undefined, now: number): number | null {
  if (!iso) return null;
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return null;
  const s = Math.ceil((at - now) / 1000);
  return s > 0 ? s : null;
}

/**
 * What stands in the key's place while a task has none (or while a numbered one moves: below);
 * `null` when the key is shown (a keyed task whose edit failed keeps its key: the row says why
 * beside it).
 *
 * failed → `failed`; held by a refused ancestor → `waiting for ~1a2b3c4d` (`heldReason` says
 * why); in the local inbox → `Inbox · this device`; status not known yet → `waiting`; no server
 * → `local only`; on the wire → `sending`; kept by a server recovering from a backup (online)
 * → `server recovering`; backing off → `retrying in N s` (`offline, retrying in N s` offline);
 * offline → `offline`; otherwise (queued) → `sending`.
 *
 * A numbered task on its way to another project (`movingTo`) shows `moving to OPS` in its
 * key's place until the server's answer brings the new key (`moving to OPS · offline`, `·
 * retrying in N s` while it cannot be sent).
 */
export function markerFor(task: LocalTask, status: SyncStatus | null, now: number): Marker | null {
  const to = movingTo(task);
  if (to !== null) {
    const m = waitMarker(task, status, now);
    return { text: m.text === 'sending' ? `moving to ${to}` : `moving to ${to} · ${m.text}`, tone: m.tone };
  }
  if (task.key !== null) return null;
  if (task.failure !== null) return { text: 'failed', tone: 'failed' };
  if (task.held_by !== null) return { text: `waiting for ${task.held_by}`, tone: 'offline' };
  if (task.local) return { text: INBOX_MARKER, tone: 'local' };
  return waitMarker(task, status, now);
}

/** Where a queued request stands: not known yet, no server, on the wire, backing off, offline. */
function waitMarker(task: LocalTask, status: SyncStatus | null, now: number): Marker {
  if (status === null) return { text: 'waiting', tone: 'sending' };
  if (!status.configured) return { text: 'local only', tone: 'local' };
  if (task.waiting?.state === 'in_progress') return { text: 'sending', tone: 'sending' };
  // Kept by a server restored from a backup: no key until the team's devices have checked in.
  if (status.online && task.error_code === 'recovering') return { text: 'server recovering', tone: 'sending' };
  // The task's own retry time, else the sync loop's next attempt (which sends every waiting task).
  const wait = secondsUntil(task.waiting?.next_attempt_at ?? status.next_attempt_at, now);
  if (wait !== null) {
    return status.online
      ? { text: `retrying in ${wait} s`, tone: 'sending' }
      : { text: `offline, retrying in ${wait} s`, tone: 'offline' };
  }
  if (!status.online) return { text: 'offline', tone: 'offline' };
  return { text: 'sending', tone: 'sending' };
}

/**
 * Why a held subtask waits, in the engine's words (`waiting for ~1a2b3c4d, a task above it that
 * the server refused: fix, send again or discard that one`); null unless it is held.
 */
export function heldReason(task: LocalTask): string | null {
  if (task.held_by === null || task.key !== null) return null;
  return task.waiting?.reason ?? `waiting for ${task.held_by}, a task above it that the server refused`;
}

/**
 * The detail pane's "Sync" line: the marker, `failed` for a keyed task whose edit failed, or
 * the whole reason for a held subtask.
 */
export function syncLine(task: LocalTask, status: SyncStatus | null, now: number): string | null {
  if (task.failure !== null) return 'failed';
  // Kept by a server recovering from a backup: the engine's whole sentence says why and when.
  if (task.key === null && task.error_code === 'recovering' && task.waiting?.reason) return task.waiting.reason;
  return heldReason(task) ?? markerFor(task, status, now)?.text ?? null;
}

export interface SyncSummary {
  tone: 'local' | 'offline' | 'sending' | 'failed' | 'online';
  /** The header's words (the failed count is shown beside them as a button). */
  text: string;
  failed: number;
}

/**
 * The header's summary. Not configured: `Local only` (`· N tasks on this device` when some have
 * not reached a server). Configured: `Sending N` online / `Offline · N waiting` offline, where N
 * is pending + in flight, then `server recovering` online while a server recovering from a
 * backup keeps some unnumbered; `N on this device` for the local inbox; `All synced` only when
 * nothing is pending, in flight, failed or local.
 */
export function syncSummary(s: SyncStatus | null): SyncSummary {
  if (s === null) return { tone: 'local', text: 'Starting…', failed: 0 };
  const unsent = s.pending + s.in_flight;
  if (!s.configured) {
    const here = unsent + s.local + s.failed;
    const text = here > 0 ? `Local only · ${plural(here, 'task')} on this device` : 'Local only';
    return { tone: s.failed > 0 ? 'failed' : 'local', text, failed: s.failed };
  }
  const parts: string[] = [];
  if (unsent > 0) parts.push(s.online ? `Sending ${fmt(unsent)}` : `Offline · ${fmt(unsent)} waiting`);
  else if (!s.online) parts.push('Offline');
  if (s.online && s.recovering > 0) parts.push('server recovering');
  if (s.local > 0) parts.push(`${fmt(s.local)} on this device`);
  if (parts.length === 0) parts.push(s.failed > 0 ? 'Online' : 'All synced');
  const tone = s.failed > 0 ? 'failed' : !s.online ? 'offline' : unsent > 0 ? 'sending' : 'online';
  return { tone, text: parts.join(' · '), failed: s.failed };
}

/** The filter bar's count: `12`, `12 of 340`, or `200 of 50,000 — loading…` while pages load. */
export function countText(shown: number, loaded: number, total: number | null): string {
  if (total !== null && loaded < total) return `${fmt(shown)} of ${fmt(total)} — loading…`;
  return shown === loaded ? fmt(shown) : `${fmt(shown)} of ${fmt(loaded)}`;
}
