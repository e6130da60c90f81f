// The list's order: as captured (newest first, the loaded order), by due date, or by priority.
// Pure but for the localStorage helpers; tested in tests/sort.test.ts.
import type { LocalTask, Priority } from './types';

export type SortOrder = 'created' | 'due' | 'priority';
export const SORT_ORDERS: readonly SortOrder[] = ['created', 'due', 'priority'];
const SORT_KEY = 'callsign.sort';

const RANK: Record<Priority, number> = { H: 0, M: 1, L: 2 };

/**
 * `created`: the list as given (newest capture first), the same array. `due`: soonest first, no
 * due date last. `priority`: H, M, L, then none. Ties keep the given order (the sort is stable),
 * so within a due date or a priority the newest capture comes first. `list` is not changed.
 */
export function sortTasks<T extends Pick<LocalTask, 'due' | 'priority'>>(list: readonly T[], order: SortOrder): T[] {
  if (order === 'created') return list as T[];
  const key = new Map<T, number>();
  for (const t of list) {
    if (order === 'priority') {
      key.set(t, t.priority === null ? 3 : RANK[t.priority]);
    } else {
      const v = t.due === null ? NaN : Date.parse(t.due);
      key.set(t, Number.isNaN(v) ? Infinity : v);
    }
  }
  const k = (t: T) => key.get(t) as number;
  // Infinity - Infinity is NaN: two tasks without a due date compare equal.
  return list.slice().sort((a, b) => (k(a) === k(b) ? 0 : k(a) - k(b)));
}

/** The saved order (`created` unless the user chose another). */
export function loadSort(storage: Pick<Storage, 'getItem'> | null = globalThis.localStorage ?? null): SortOrder {
  try {
    const v = storage?.getItem(SORT_KEY);
    return SORT_ORDERS.find((o) => o === v) ?? 'created';
  } catch {
    return 'created';
  }
}

export function saveSort(order: SortOrder, storage: Pick<Storage, 'setItem'> | null = globalThis.localStorage ?? null): void {
  try {
    storage?.setItem(SORT_KEY, order);
  } catch {
    // storage unavailable: the choice lasts for this session
  }
}
