// The filter bar and `callsign list FILTER` keep the same tasks: callsign-core parses both
// (the app through the `parse_filter` command). This applies the filters callsign-core made of
// the shared cases (crates/callsign-core/src/filter/cases.parsed.json, checked current by the
// Rust test) to the same tasks, and must keep exactly the tasks the Rust test keeps.
import { describe, expect, it } from 'vitest';
import type { Filter, LocalTask, TaskStatus } from '../src/lib/types';
import { filterTasks } from '../src/lib/view';
import casesJson from '../../crates/callsign-core/src/filter/cases.json';
import parsedJson from '../../crates/callsign-core/src/filter/cases.parsed.json';
import { failure, task } from './fixtures';

type CaseTask = Pick<
  LocalTask,
  'uuid' | 'key' | 'previous_keys' | 'project' | 'description' | 'notes' | 'status' | 'tags' | 'due' | 'priority' | 'commits'
> & { label: string; failed: boolean };

const cases = casesJson as unknown as {
  default_statuses: TaskStatus[];
  tasks: CaseTask[];
  cases: { filter: string; expect: string[] }[];
};
const parsed = parsedJson as unknown as { filter: string; parsed: Filter }[];

const labels = new Map<string, string>();
const tasks: LocalTask[] = cases.tasks.map((c) => {
  labels.set(c.uuid, c.label);
  const { label: _label, failed, ...fields } = c;
  return task({ ...fields, failure: failed ? failure('fields') : null });
});

describe('the shared filter cases', () => {
  it('has a parsed filter for every case, in order', () => {
    expect(parsed.map((p) => p.filter)).toEqual(cases.cases.map((c) => c.filter));
    expect(cases.default_statuses).toEqual(['pending']);
  });

  it.each(cases.cases.map((c, i) => [c.filter, (parsed[i] as { parsed: Filter }).parsed, c.expect] as const))(
    '%j keeps what callsign-core keeps',
    (_text, filter, expected) => {
      const kept = filterTasks(tasks, { filter, status: 'pending' }).map((t) => labels.get(t.uuid));
      expect(kept).toEqual(expected);
    },
  );
});
