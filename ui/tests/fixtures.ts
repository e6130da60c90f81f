import type { Failure, LocalTask, SyncStatus } from '../src/lib/types';

export const NOW = Date.parse('2026-11-22T12:00:00Z');

export function task(over: Partial<LocalTask> = {}): LocalTask {
  return {
    uuid: '67e55044-10b1-426f-9247-bb680e5fe0c8',
    key: null,
    project: 'SYN',
    number: null,
    description: 'Fix the login page',
    notes: '',
    status: 'pending',
    tags: [],
    due: null,
    priority: null,
    parent: null,
    previous_keys: [],
    children: 0,
    open_children: 0,
    held_by: null,
    created_by: null,
    assignee: null,
    created_at: '2026-11-22T11:00:00Z',
    modified_at: '2026-11-22T11:00:00Z',
    sync_state: 'provisional',
    last_error: null,
    waiting: { state: 'pending', next_attempt_at: null },
    local: false,
    failure: null,
    ...over,
  };
}

export function status(over: Partial<SyncStatus> = {}): SyncStatus {
  return {
    configured: true,
    online: true,
    pending: 0,
    failed: 0,
    in_flight: 0,
    local: 0,
    recovering: 0,
    next_attempt_at: null,
    last_error: null,
    last_sync_at: null,
    server_url: 'http://127.0.0.1:7171',
    problem: null,
    ...over,
  };
}

/** n tasks, uuids `...000i`, created one second apart (index 0 is the newest). */
export function many(n: number): LocalTask[] {
  const out: LocalTask[] = [];
  for (let i = 0; i < n; i++) {
    const hex = i.toString(16).padStart(12, '0');
    out.push(
      task({
        uuid: `00000000-0000-4000-8000-${hex}`,
        key: i % 3 === 0 ? null : `SYN-${n - i}`,
        number: i % 3 === 0 ? null : n - i,
        sync_state: i % 3 === 0 ? 'provisional' : 'synced',
        description: `Task number ${n - i} ${i % 7 === 0 ? 'deploy' : 'review'}`,
        created_at: new Date(NOW - i * 1000).toISOString(),
        status: i % 5 === 0 ? 'completed' : 'pending',
        tags: i % 4 === 0 ? ['ops'] : [],
      }),
    );
  }
  return out;
}

/** A refusal, as the backend words it. */
export function failure(fix: Failure['fix'] = 'project', over: Partial<Failure> = {}): Failure {
  return {
    summary: 'The server has no project ZZZ — choose another project',
    detail: '422 project_not_found: project "ZZZ" does not exist',
    code: 'project_not_found',
    fix,
    ...over,
  };
}

/** localStorage in memory, optionally filled: what the saved choices (sort, density) read. */
export function memoryStorage(initial: Record<string, string> = {}): Pick<Storage, 'getItem' | 'setItem'> {
  const m = new Map(Object.entries(initial));
  return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v) };
}

/** Storage that refuses every read and write (as a locked-down web view may). */
export function brokenStorage(): Pick<Storage, 'getItem' | 'setItem'> {
  const denied = () => {
    throw new Error('denied');
  };
  return { getItem: denied, setItem: denied };
}
