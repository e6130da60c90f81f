import { describe, expect, it } from 'vitest';
import { expireNotice, INFO_MS, noticeMsLeft, settleNotice, showNotice, UNDO_MS, type NoticeInput } from '../src/lib/notices';

const T = 1_000_000;

describe('showNotice / expireNotice', () => {
  it.each([
    ['info expires after 4 s', { text: 'Copied DEV-2', tone: 'info' }, INFO_MS],
    ['info with Undo gets 6 s', { text: 'Completed DEV-3', tone: 'info', undoId: 1 }, UNDO_MS],
    ['an error stays', { text: 'Sync failed', tone: 'error', topic: 'sync' }, null],
    ['an error with Undo still stays', { text: 'x', tone: 'error', undoId: 2 }, null],
  ] as const)('%s', (_n, input, life) => {
    const n = showNotice(input as NoticeInput, T);
    expect(noticeMsLeft(n, T)).toBe(life);
    if (life === null) {
      expect(expireNotice(n, T + 3_600_000)).toBe(n);
    } else {
      expect(expireNotice(n, T + life - 1)).toBe(n);
      expect(expireNotice(n, T + life)).toBeNull();
    }
  });

  it('each notice is new (a replacement restarts the clock)', () => {
    const a = showNotice({ text: 'a', tone: 'info' }, T);
    const b = showNotice({ text: 'b', tone: 'info' }, T + 3000);
    expect(b.id).not.toBe(a.id);
    expect(expireNotice(b, T + 4500)).toBe(b);
  });

  it('nothing shown: nothing to expire or wait for', () => {
    expect(expireNotice(null, T)).toBeNull();
    expect(noticeMsLeft(null, T)).toBeNull();
  });

  it('the time left never goes below 0', () => {
    expect(noticeMsLeft(showNotice({ text: 'a', tone: 'info' }, T), T + 10_000)).toBe(0);
  });
});

describe('settleNotice', () => {
  const capture = showNotice({ text: 'Not saved: …', tone: 'error', topic: 'capture' }, T);
  const sync = showNotice({ text: 'Sync failed: …', tone: 'error', topic: 'sync' }, T);
  const plain = showNotice({ text: 'Copy failed', tone: 'error' }, T);
  const info = showNotice({ text: 'Copied DEV-2', tone: 'info' }, T);

  it.each([
    ['a capture error goes when a capture works', capture, 'capture', null],
    ['a sync error goes when a sync works', sync, 'sync', null],
    ['a sync error stays when a capture works', sync, 'capture', sync],
    ['a capture error stays when a save works', capture, 'save', capture],
    ['an error without a topic stays', plain, 'sync', plain],
    ['an info notice is not touched', info, 'capture', info],
    ['nothing shown', null, 'save', null],
  ] as const)('%s', (_n, n, topic, want) => {
    expect(settleNotice(n, topic)).toBe(want);
  });
});
