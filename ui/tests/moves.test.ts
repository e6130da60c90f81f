import { describe, expect, it } from 'vitest';
import { keyPrefix, movedText, moveRefusal, moveTargets, movingTo, previouslyText } from '../src/lib/moves';
import { markerFor, syncLine } from '../src/lib/status';
import { failure, NOW, status, task } from './fixtures';

const keyed = (over = {}) => task({ key: 'SYN-7', number: 7, sync_state: 'synced', waiting: null, ...over });

describe('moves', () => {
  it.each([
    ['SYN-42', 'SYN'],
    ['SYN-42.1.3', 'SYN'],
    ['V2X-5', 'V2X'],
  ])('keyPrefix(%s) = %s', (key, want) => {
    expect(keyPrefix(key)).toBe(want);
  });

  it.each([
    ['a key in its project: not moving', keyed(), null],
    ['a subtask key in its project', keyed({ key: 'SYN-7.1' }), null],
    ['the project changed, the key not yet: on its way', keyed({ project: 'OPS', waiting: { state: 'pending', next_attempt_at: null } }), 'OPS'],
    ['no key: a provisional task just changes project', task({ project: 'OPS' }), null],
    ['refused (no such project): keeps its key, says why', keyed({ project: 'ZZZ', failure: failure('project') }), null],
  ] as const)('movingTo: %s', (_n, t, want) => {
    expect(movingTo(t)).toBe(want);
  });

  it.each([
    ['moving, sending', status(), 'moving to OPS', 'sending'],
    ['moving, offline', status({ online: false }), 'moving to OPS · offline', 'offline'],
    ['moving, no status yet', null, 'moving to OPS · waiting', 'sending'],
  ] as const)('the marker stands in the key\'s place while it moves: %s', (_n, s, text, tone) => {
    const t = keyed({ project: 'OPS', waiting: { state: 'pending', next_attempt_at: null } });
    expect(markerFor(t, s, NOW)).toEqual({ text, tone });
    expect(syncLine(t, s, NOW)).toBe(text);
  });

  it('once the new key comes, the key shows again', () => {
    const t = keyed({ key: 'OPS-1', project: 'OPS', previous_keys: ['SYN-7'] });
    expect(markerFor(t, status(), NOW)).toBeNull();
    expect(previouslyText(t)).toBe('SYN-7');
    expect(previouslyText(keyed({ previous_keys: ['DEV-3', 'OPS-1'] }))).toBe('DEV-3, OPS-1');
    expect(previouslyText(keyed())).toBeNull();
  });

  it('a subtask cannot move alone: the reason names its parent', () => {
    const parent = keyed();
    const sub = keyed({ uuid: '67e55044-10b1-426f-9247-000000000002', key: 'SYN-7.1', parent: parent.uuid });
    expect(moveRefusal(sub, parent)).toBe('SYN-7.1 is a subtask: it moves with its parent (move SYN-7)');
    expect(moveRefusal(sub, null)).toBe('SYN-7.1 is a subtask: it moves with its parent (move ~67e55044)');
    expect(moveRefusal(parent, null)).toBeNull();
  });

  it("the menu lists the server's projects, the task's own marked", () => {
    const projects = [
      { prefix: 'SYN', name: 'Syncing' },
      { prefix: 'OPS', name: 'Operations' },
    ];
    expect(moveTargets(projects, keyed()).map((t) => [t.project.prefix, t.here])).toEqual([
      ['SYN', true],
      ['OPS', false],
    ]);
  });

  it('the notice: a numbered task waits for its key, a provisional one just moved', () => {
    expect(movedText(keyed(), keyed({ project: 'OPS' }), 'OPS')).toBe('Moving SYN-7 to OPS: its new key comes when the server answers');
    expect(movedText(task(), task({ project: 'OPS' }), 'OPS')).toBe('Moved ~67e55044 to OPS');
  });
});
