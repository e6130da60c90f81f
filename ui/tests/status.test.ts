import { describe, expect, it } from 'vitest';
import type { LocalTask, SyncStatus } from '../src/lib/types';
import { countText, markerFor, syncLine, syncSummary } from '../src/lib/status';
import { failure, NOW, status, task } from './fixtures';

const inS = (s: number) => new Date(NOW + s * 1000).toISOString();

describe('markerFor', () => {
  const cases: [string, LocalTask, SyncStatus | null, string | null, string | null][] = [
    ['synced task shows its key, no marker', task({ key: 'SYN-1', number: 1, sync_state: 'synced', waiting: null }), status(), null, null],
    ['keyed task with edits waiting still shows its key', task({ key: 'SYN-1', sync_state: 'synced' }), status({ online: false }), null, null],
    ['keyed task whose edit failed keeps its key', task({ key: 'SYN-3', failure: failure('fields') }), status(), null, null],
    ['status not known yet', task(), null, 'waiting', 'sending'],
    ['no server configured', task(), status({ configured: false, online: false, server_url: null }), 'local only', 'local'],
    ['in the local inbox', task({ project: 'INBOX', local: true, waiting: null }), status(), 'Inbox · this device', 'local'],
    ['in the local inbox, no server', task({ project: 'INBOX', local: true }), status({ configured: false }), 'Inbox · this device', 'local'],
    ['in the local inbox, status unknown', task({ project: 'INBOX', local: true }), null, 'Inbox · this device', 'local'],
    ['offline', task(), status({ online: false }), 'offline', 'offline'],
    ['offline and backing off', task({ waiting: { state: 'pending', next_attempt_at: inS(12) } }), status({ online: false }), 'offline, retrying in 12 s', 'offline'],
    ['kept by a server recovering from a backup', task({ error_code: 'recovering', waiting: { state: 'pending', next_attempt_at: inS(50) } }), status(), 'server recovering', 'sending'],
    ['online, backing off (rounds up)', task({ waiting: { state: 'pending', next_attempt_at: inS(19.001) } }), status(), 'retrying in 20 s', 'sending'],
    ['offline, the loop retries in 4 s (no per-task time)', task(), status({ online: false, pending: 3, next_attempt_at: inS(3.2) }), 'offline, retrying in 4 s', 'offline'],
    ["the task's own time wins over the loop's", task({ waiting: { state: 'pending', next_attempt_at: inS(9) } }), status({ online: false, next_attempt_at: inS(2) }), 'offline, retrying in 9 s', 'offline'],
    ['loop retry time in the past: offline', task(), status({ online: false, next_attempt_at: inS(-1) }), 'offline', 'offline'],
    ['retry due now: sending', task({ waiting: { state: 'pending', next_attempt_at: inS(0) } }), status(), 'sending', 'sending'],
    ['in flight', task({ waiting: { state: 'in_progress', try_count: 1, next_attempt_at: null } }), status(), 'sending', 'sending'],
    ['in flight while the status says offline', task({ waiting: { state: 'in_progress', next_attempt_at: null } }), status({ online: false }), 'sending', 'sending'],
    ['queued, online', task(), status(), 'sending', 'sending'],
    ['no outbox detail, online', task({ waiting: null }), status(), 'sending', 'sending'],
    ['failed: the word, not the server message', task({ sync_state: 'failed', last_error: 'HTTP 422: project ZZZ', failure: failure() }), status(), 'failed', 'failed'],
    ['failed wins over offline', task({ failure: failure('retry') }), status({ online: false }), 'failed', 'failed'],
    ['failed wins over the inbox', task({ local: true, failure: failure('project') }), status(), 'failed', 'failed'],
    ['sync_state failed without a failure is not failed (failure is the contract)', task({ sync_state: 'failed' }), status(), 'sending', 'sending'],
    ['held by a refused parent: says whom it waits for', task({ parent: 'p', held_by: '~1a2b3c4d' }), status(), 'waiting for ~1a2b3c4d', 'offline'],
    ['held wins over offline', task({ parent: 'p', held_by: '~1a2b3c4d' }), status({ online: false }), 'waiting for ~1a2b3c4d', 'offline'],
  ];
  it.each(cases)('%s', (_name, t, s, text, tone) => {
    const m = markerFor(t, s, NOW);
    expect(m?.text ?? null).toBe(text);
    expect(m?.tone ?? null).toBe(tone);
  });

  it.each([
    ['keyed and failed', task({ key: 'SYN-3', failure: failure('fields') }), 'failed'],
    ['keyed, fine', task({ key: 'SYN-3', waiting: null }), null],
    ['provisional', task(), 'sending'],
    [
      'held: the whole reason, in the engine\'s words',
      task({
        held_by: '~1a2b3c4d',
        waiting: { state: 'pending', next_attempt_at: null, reason: 'waiting for ~1a2b3c4d, a task above it that the server refused: fix, send again or discard that one' },
      }),
      'waiting for ~1a2b3c4d, a task above it that the server refused: fix, send again or discard that one',
    ],
    ['held, no reason sent', task({ held_by: '~1a2b3c4d', waiting: null }), 'waiting for ~1a2b3c4d, a task above it that the server refused'],
    [
      'kept by a recovering server: the whole reason',
      task({
        error_code: 'recovering',
        waiting: { state: 'pending', next_attempt_at: null, reason: 'waiting for its key: the server is recovering from a backup; your task keeps its place' },
      }),
      'waiting for its key: the server is recovering from a backup; your task keeps its place',
    ],
  ] as const)('syncLine: %s', (_n, t, want) => {
    expect(syncLine(t, status(), NOW)).toBe(want);
  });
});

describe('syncSummary', () => {
  it.each([
    ['starting', null, 'Starting…', 0, 'local'],
    ['no server, nothing here', status({ configured: false, online: false }), 'Local only', 0, 'local'],
    ['no server, 3 in the inbox', status({ configured: false, online: false, local: 3 }), 'Local only · 3 tasks on this device', 0, 'local'],
    ['no server, 1 task', status({ configured: false, online: false, pending: 1 }), 'Local only · 1 task on this device', 0, 'local'],
    ['online, nothing waiting', status(), 'All synced', 0, 'online'],
    ['online, 2 pending and 1 in flight: sending 3', status({ pending: 2, in_flight: 1 }), 'Sending 3', 0, 'sending'],
    ['in flight alone is not "all synced"', status({ in_flight: 1 }), 'Sending 1', 0, 'sending'],
    ['offline with tasks waiting', status({ online: false, pending: 3 }), 'Offline · 3 waiting', 0, 'offline'],
    ['offline, nothing waiting', status({ online: false }), 'Offline', 0, 'offline'],
    ['failed only: no "all synced"', status({ failed: 2 }), 'Online', 2, 'failed'],
    ['sending and failed', status({ pending: 1, failed: 1 }), 'Sending 1', 1, 'failed'],
    ['local inbox while configured: not "all synced"', status({ local: 4 }), '4 on this device', 0, 'online'],
    ['offline, waiting and inbox', status({ online: false, pending: 2, local: 1 }), 'Offline · 2 waiting · 1 on this device', 0, 'offline'],
    ['large counts are grouped', status({ pending: 50000 }), 'Sending 50,000', 0, 'sending'],
    ['kept by a recovering server: it says so', status({ pending: 2, recovering: 1 }), 'Sending 2 · server recovering', 0, 'sending'],
    ['offline, the recovery is not news', status({ online: false, pending: 1, recovering: 1 }), 'Offline · 1 waiting', 0, 'offline'],
  ] as const)('%s', (_n, s, text, failed, tone) => {
    expect(syncSummary(s)).toEqual({ text, failed, tone });
  });
});

describe('countText', () => {
  it.each([
    [12, 12, null, '12'],
    [12, 340, null, '12 of 340'],
    [200, 200, 50000, '200 of 50,000 — loading…'],
    [180, 200, 50000, '180 of 50,000 — loading…'],
    [50000, 50000, 50000, '50,000'],
  ] as const)('%i shown, %i loaded, total %s → %s', (shown, loaded, total, want) => {
    expect(countText(shown, loaded, total)).toBe(want);
  });
});
