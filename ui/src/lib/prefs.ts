// Small choices remembered in localStorage (row density, the list's order). Storage may be
// missing or refuse (private mode, a full quota): reading then gives the fallback, and a saved
// choice lasts for the session only. Tested through layout.test.ts and sort.test.ts.

/** Where a choice is read from; null: nowhere (the fallback). */
export type ChoiceReader = Pick<Storage, 'getItem'> | null;
/** Where a choice is written; null: nowhere. */
export type ChoiceWriter = Pick<Storage, 'setItem'> | null;

const local = (): Storage | null => globalThis.localStorage ?? null;

/** The value stored under `key` when it is one of `allowed`, else `fallback`. */
export function loadChoice<T extends string>(
  key: string,
  allowed: readonly T[],
  fallback: T,
  storage: ChoiceReader = local(),
): T {
  try {
    const v = storage?.getItem(key);
    return allowed.find((a) => a === v) ?? fallback;
  } catch {
    return fallback;
  }
}

export function saveChoice(key: string, value: string, storage: ChoiceWriter = local()): void {
  try {
    storage?.setItem(key, value);
  } catch {
    // storage unavailable: the choice lasts for this session
  }
}
