// The fake backend's stand-in for `callsign_core::filter` (the real app asks the backend to
// parse): words, +tag, -tag, #PFX, status: and pri:, enough for the preview. Not the real parser:
// due:, key ranges and the refusals are callsign-core's alone.
import type { CmdError, Filter, Priority, TaskStatus, ViewStatus } from '../lib/types';
import { EMPTY_FILTER, tokenize, type ViewFilter } from '../lib/view';

export function fakeParseFilter(text: string): Filter {
  const f: Filter = structuredClone(EMPTY_FILTER);
  for (const t of tokenize(text)) {
    if (t.kind === 'project') f.projects.push(t.value);
    else if (t.kind === 'tag') f.tags.push(t.value.toLowerCase());
    else if (t.kind === 'not-tag') f.not_tags.push(t.value.toLowerCase());
    else {
      const attr = /^(status|pri|priority):(.*)$/i.exec(t.raw);
      const value = (attr?.[2] ?? '').toLowerCase();
      if (attr && (attr[1] as string).toLowerCase() === 'status') {
        if (value === 'failed' || value === 'provisional') f.sync.push(value);
        else if (value === 'all') f.statuses.push('pending', 'completed', 'deleted');
        else if (['pending', 'completed', 'deleted'].includes(value)) f.statuses.push(value as TaskStatus);
        else throw { code: 'invalid', message: `filter: '${attr[2]}' is not a status` } satisfies CmdError;
      } else if (attr) {
        f.priorities.push(value === '' || value === 'none' ? null : (value.slice(0, 1).toUpperCase() as Priority));
      } else f.words.push(t.value.toLowerCase());
    }
  }
  return f;
}

/** A view filter from text and status, parsed by the stand-in (tests and benches). */
export function vf(x: { text?: string; status?: ViewStatus }): ViewFilter {
  return { filter: fakeParseFilter(x.text ?? ''), ...(x.status !== undefined ? { status: x.status } : {}) };
}
