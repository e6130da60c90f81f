// Sizes of the list: row density, the key column, the tags that fit. Pure but for the
// localStorage helpers; tested in tests/layout.test.ts.
import { loadChoice, saveChoice, type ChoiceReader, type ChoiceWriter } from './prefs';

export type Density = 'compact' | 'comfortable';
export const ROW_HEIGHT: Record<Density, number> = { compact: 32, comfortable: 40 };
const DENSITIES: readonly Density[] = ['compact', 'comfortable'];
const DENSITY_KEY = 'callsign.density';

/** The saved density (compact unless the user chose comfortable). */
export function loadDensity(storage?: ChoiceReader): Density {
  return loadChoice(DENSITY_KEY, DENSITIES, 'compact', storage);
}

export function saveDensity(d: Density, storage?: ChoiceWriter): void {
  saveChoice(DENSITY_KEY, d, storage);
}

/**
 * The narrowest width (in `ch` of the key's monospace font) that holds a short provisional
 * marker (`sending`, `offline`, in their pill): the key column is never narrower, so when a
 * task's key replaces its marker nothing beside it moves. Longer markers (`retrying in 12 s`,
 * `Inbox · this device`) widen their own row's slot.
 */
export const MARKER_MIN_CH = 10;

/** The key column's width in `ch`: the longest key plus 1, at least `MARKER_MIN_CH`. */
export function keyColumnCh(tasks: Iterable<{ key: string | null }>): number {
  let longest = 0;
  for (const { key } of tasks) if (key !== null && key.length > longest) longest = key.length;
  return Math.max(MARKER_MIN_CH, longest + 1);
}

/**
 * The tags a row shows (at most `max`, fewer when long) and how many more there are (a `+N`
 * chip). The row's title lists them all, so nothing is hidden without a tooltip.
 */
export function tagChips(tags: readonly string[], max = 2, budget = 24): { shown: string[]; more: number } {
  const shown: string[] = [];
  let used = 0;
  for (const t of tags) {
    if (shown.length >= max || (shown.length > 0 && used + t.length + 1 > budget)) break;
    shown.push(t);
    used += t.length + 1;
  }
  return { shown, more: tags.length - shown.length };
}
