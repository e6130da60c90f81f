// The list's order: as captured (newest first, the loaded order), by due date, or by priority.
// Pure but for the localStorage helpers; tested in tests/sort.test.ts.
import { loadChoice, saveChoice, type ChoiceReader, type ChoiceWriter } from './prefs';
import type { LocalTask, Priority } from './types';

export type SortOrder = 'created' | 'due' | 'priority';
export const SORT_ORDERS: readonly SortOrder[] = ['created', 'due', 'priority'];
const SORT_KEY = 'callsign.sort';

const RANK: Record<Priority, number> = { H: 0, M: 1, L: 2 };

/**
 * `list` in ascending `key` order, as a new array (`list` is not changed). Stable: equal keys,
 * `Infinity` included, keep their given order. `key` runs once per item, not per comparison.
 */
export function sortByKey<T>(list: readonly T[], key: (item: T) => number): T[] {
  const keys = Float64Array.from(list, key);
  const at = Array.from(list, (_, i) => i);
  // Equal keys give 0 and two Infinities NaN, both falsy: the index decides.
  at.sort((a, b) => (keys[a] as number) - (keys[b] as number) || a - b);
  return at.map((i) => list[i] as T);
}

const byPriority = (t: Pick<LocalTask, 'priority'>): number => (t.priority === null ? 3 : RANK[t.priority]);

function byDue(t: Pick<LocalTask, 'due'>): number {
  const v = t.due === null ? NaN : Date.parse(t.due);
  return Number.isNaN(v) ? Infinity : v;
}

/**
 * `created`: the list as given (newest capture first), the same array. `due`: soonest first, no
 * due date last. `priority`: H, M, L, then none. Ties keep the given order (the sort is stable),
 * so within a due date or a priority the newest capture comes first. `list` is not changed.
 */
export function sortTasks<T extends Pick<LocalTask, 'due' | 'priority'>>(list: readonly T[], order: SortOrder): T[] {
  if (order === 'created') return list as T[];
  return sortByKey(list, order === 'due' ? byDue : byPriority);
}

/** The saved order (`created` unless the user chose another). */
export function loadSort(storage?: ChoiceReader): SortOrder {
  return loadChoice(SORT_KEY, SORT_ORDERS, 'created', storage);
}

export function saveSort(order: SortOrder, storage?: ChoiceWriter): void {
  saveChoice(SORT_KEY, order, storage);
}
