import { describe, expect, it } from 'vitest';
import { fakeParseFilter, vf } from '../src/dev/fake-filter';
import {
  ALL,
  captureAssignee,
  captureTarget,
  INBOX_SCOPE,
  MINE,
  scopedCountText,
  scopeTasks,
  selectedEntry,
  selectEntry,
  sidebarCounts,
  sidebarEntries,
  viewShowing,
  type ScopeEntryId,
  type ListView,
  type Scope,
} from '../src/lib/sidebar';
import type { LocalTask, Project, ViewStatus } from '../src/lib/types';
import { filterTasks } from '../src/lib/view';
import { failure, task } from './fixtures';

let n = 0;
/** A task with its own uuid. */
const t = (over: Partial<LocalTask> = {}): LocalTask => task({ uuid: `00000000-0000-4000-8000-${(n++).toString(16).padStart(12, '0')}`, ...over });

const DEV: Project = { prefix: 'DEV', name: 'Development' };
const OPS: Project = { prefix: 'OPS', name: 'Operations' };
const INBOX: Project = { prefix: 'INBOX', name: 'Inbox (this device)', local: true };

// DEV: 2 pending (one of them failed), 1 completed; OPS: 1 pending, 1 deleted and failed;
// a moved task (old key DEV-1) now in OPS; the inbox: 1 pending, 1 completed. @bob has DEV-2
// (pending) and DEV-3 (completed), @ann OPS-1.
const LIST: LocalTask[] = [
  t({ project: 'DEV', key: 'DEV-2', description: 'Deploy the docs', assignee: 'bob' }),
  t({ project: 'DEV', failure: failure('fields'), description: 'Fix login' }),
  t({ project: 'DEV', key: 'DEV-3', status: 'completed', description: 'Deploy v1', assignee: 'bob' }),
  t({ project: 'OPS', key: 'OPS-1', description: 'Rotate keys', tags: ['ops'], assignee: 'ann' }),
  t({ project: 'OPS', status: 'deleted', failure: failure(), description: 'Old idea' }),
  t({ project: 'OPS', key: 'OPS-2', previous_keys: ['DEV-1'], description: 'Deploy the CI' }),
  t({ project: 'INBOX', local: true, waiting: null, description: 'Deploy idea on the train' }),
  t({ project: 'INBOX', local: true, waiting: null, status: 'completed', description: 'Done on the train' }),
];

describe('sidebarCounts', () => {
  it('counts pending tasks per project and in the inbox, failed tasks of any status, in one pass', () => {
    const c = sidebarCounts(LIST);
    expect(c.all).toBe(5);
    expect(Object.fromEntries(c.projects)).toEqual({ DEV: 2, OPS: 2 });
    expect([c.inbox, c.inboxTasks, c.failed]).toEqual([1, 2, 2]);
    expect(c.mine).toBe(0);
  });

  it.each([
    ['bob', 1],
    ['ann', 1],
    ['carol', 0],
    [null, 0],
  ] as const)('pending tasks assigned to %s: %i', (me, want) => {
    expect(sidebarCounts(LIST, me).mine).toBe(want);
  });

  it('an empty list counts nothing', () => {
    expect(sidebarCounts([])).toEqual({ all: 0, mine: 0, projects: new Map(), inbox: 0, inboxTasks: 0, failed: 0 });
  });
});

describe('sidebarEntries', () => {
  const ids = (projects: Project[], list: LocalTask[], configured: boolean) =>
    sidebarEntries(projects, sidebarCounts(list), configured).map((e) => `${e.testid}=${e.count}`);

  it.each([
    ['a server: All, its projects (the inbox project left out), the inbox while it holds tasks, Failed', [DEV, OPS, INBOX], LIST, true,
      ['all=5', 'mine=0', 'standup=null', 'project-DEV=2', 'project-OPS=2', 'inbox=1', 'failed=2']],
    ['a server and an empty inbox: no Inbox entry', [DEV, OPS], LIST.filter((x) => !x.local), true,
      ['all=4', 'mine=0', 'standup=null', 'project-DEV=2', 'project-OPS=2', 'failed=2']],
    ['no server: the inbox always, even empty', [INBOX], [], false, ['all=0', 'mine=0', 'standup=null', 'inbox=0', 'failed=0']],
    ['a project with no tasks counts 0', [{ prefix: 'ZED', name: 'Zed' }], [], true, ['all=0', 'mine=0', 'standup=null', 'project-ZED=0', 'failed=0']],
  ] as const)('%s', (_n, projects, list, configured, want) => {
    expect(ids([...projects], [...list], configured)).toEqual(want);
  });

  it('a project entry has its prefix and its name', () => {
    const e = sidebarEntries([DEV, { prefix: 'OPS', name: '' }], sidebarCounts([]), true);
    expect(e.slice(3, 5).map((x) => [x.id, x.prefix, x.label])).toEqual([
      ['project:DEV', 'DEV', 'Development'],
      ['project:OPS', 'OPS', 'OPS'],
    ]);
  });
});

describe('selecting an entry', () => {
  it.each([
    ['all', 'pending', ALL, 'pending', 'all'],
    ['all', 'completed', ALL, 'completed', 'all'],
    ['all', 'failed', ALL, 'pending', 'all'],
    ['failed', 'pending', ALL, 'failed', 'failed'],
    ['failed', 'completed', ALL, 'failed', 'failed'],
    ['inbox', 'next', INBOX_SCOPE, 'next', 'inbox'],
    ['project:DEV', 'all', { kind: 'project', prefix: 'DEV' }, 'all', 'project:DEV'],
    ['project:DEV', 'failed', { kind: 'project', prefix: 'DEV' }, 'pending', 'project:DEV'],
    ['mine', 'pending', MINE, 'pending', 'mine'],
    ['mine', 'failed', MINE, 'pending', 'mine'],
  ] as const)('%s with the status at %s: scope %j, status %s, %s selected', (id, status, scope, wantStatus, shown) => {
    const r = selectEntry(id as ScopeEntryId, status as ViewStatus);
    expect(r).toEqual({ scope, status: wantStatus });
    expect(selectedEntry(r.scope, r.status)).toBe(shown);
  });

  it('the status select at Failed with nothing scoped shows Failed selected; scoped, the scope', () => {
    expect(selectedEntry(ALL, 'failed')).toBe('failed');
    expect(selectedEntry({ kind: 'project', prefix: 'OPS' }, 'failed')).toBe('project:OPS');
  });
});

describe('scope, filter text and status compose', () => {
  const DEV_SCOPE: Scope = { kind: 'project', prefix: 'DEV' };
  const OPS_SCOPE: Scope = { kind: 'project', prefix: 'OPS' };
  const shown = (scope: Scope, text: string, status: ViewStatus) =>
    filterTasks(scopeTasks(LIST, scope), vf({ text, status })).map((x) => x.description);

  it.each([
    ['All, no text, pending', ALL, '', 'pending', ['Deploy the docs', 'Fix login', 'Rotate keys', 'Deploy the CI', 'Deploy idea on the train']],
    ['DEV, pending', DEV_SCOPE, '', 'pending', ['Deploy the docs', 'Fix login']],
    ['DEV + "deploy", pending', DEV_SCOPE, 'deploy', 'pending', ['Deploy the docs']],
    ['DEV + "deploy", all statuses', DEV_SCOPE, 'deploy', 'all', ['Deploy the docs', 'Deploy v1']],
    ['DEV + Failed', DEV_SCOPE, '', 'failed', ['Fix login']],
    ['OPS + Failed: a deleted task that failed', OPS_SCOPE, '', 'failed', ['Old idea']],
    ['OPS by its current project: the task that moved from DEV is in OPS', OPS_SCOPE, 'deploy', 'pending', ['Deploy the CI']],
    ['DEV leaves out the task whose old key is DEV-1', DEV_SCOPE, 'ci', 'all', []],
    ['OPS + a tag', OPS_SCOPE, '+ops', 'pending', ['Rotate keys']],
    ['OPS + #DEV in the text: nothing (both must hold)', OPS_SCOPE, '#DEV', 'all', []],
    ['the inbox, pending', INBOX_SCOPE, '', 'pending', ['Deploy idea on the train']],
    ['the inbox + "train", all', INBOX_SCOPE, 'train', 'all', ['Deploy idea on the train', 'Done on the train']],
  ] as const)('%s', (_n, scope, text, status, want) => {
    expect(shown(scope, text, status)).toEqual(want);
  });

  it('unscoped, the list itself comes back (the filter can keep narrowing it)', () => {
    expect(scopeTasks(LIST, ALL)).toBe(LIST);
  });
});

describe('Assigned to me', () => {
  it('is the entry after All, with the count of pending tasks assigned to this device', () => {
    const e = sidebarEntries([DEV], sidebarCounts(LIST, 'bob'), true);
    expect(e.slice(0, 3).map((x) => [x.id, x.label, x.count])).toEqual([
      ['all', 'All', 5],
      ['mine', 'Assigned to me', 1],
      ['standup', 'Standup', null],
    ]);
  });

  it.each([
    ['bob', ['Deploy the docs', 'Deploy v1']],
    ['ann', ['Rotate keys']],
    [null, []],
  ] as const)('scoped for %s: their tasks (any status; the status select narrows)', (me, want) => {
    expect(scopeTasks(LIST, MINE, me).map((x) => x.description)).toEqual(want);
    expect(filterTasks(scopeTasks(LIST, MINE, me), vf({})).length).toBe(want.length > 0 ? 1 : 0);
  });

  it('a task of someone else opens with the scope cleared', () => {
    const ann = LIST[3] as LocalTask;
    const view: ListView = { scope: MINE, text: '', status: 'pending' };
    expect(viewShowing(ann, view, false, fakeParseFilter(''), 'bob').scope).toEqual(ALL);
    expect(viewShowing(ann, view, false, fakeParseFilter(''), 'ann').scope).toEqual(MINE);
  });
});

describe('scopedCountText', () => {
  it.each([
    [ALL, 12, 12, 12, null, '12'],
    [ALL, 5, 5, 200, 50_000, '5 of 50,000 — loading…'],
    [{ kind: 'project', prefix: 'DEV' }, 12, 340, 50_000, null, 'DEV · 12 of 340'],
    [{ kind: 'project', prefix: 'DEV' }, 340, 340, 50_000, null, 'DEV · 340'],
    [INBOX_SCOPE, 3, 3, 200, 50_000, 'Inbox · 3 — loading…'],
  ] as const)('%j: %d shown of %d in scope, %d loaded, total %s → %s', (scope, shown, inScope, loaded, total, want) => {
    expect(scopedCountText(scope, shown, inScope, loaded, total)).toBe(want);
  });
});

describe('viewShowing (a notification opens a task)', () => {
  const failedDev = LIST[1] as LocalTask;
  const doneDev = LIST[2] as LocalTask;
  const v = (scope: Scope, text: string, status: ViewStatus): ListView => ({ scope, text, status });

  it.each([
    ['visible: nothing changes', failedDev, v(ALL, 'zzz', 'pending'), true, v(ALL, 'zzz', 'pending')],
    ['another project: the scope goes, the rest stays', failedDev, v({ kind: 'project', prefix: 'OPS' }, 'login', 'pending'), false, v(ALL, 'login', 'pending')],
    ['a text it does not match goes, the scope it is in stays', failedDev, v({ kind: 'project', prefix: 'DEV' }, 'deploy', 'pending'), false,
      v({ kind: 'project', prefix: 'DEV' }, '', 'pending')],
    ['the inbox scope goes for a server task', failedDev, v(INBOX_SCOPE, '', 'pending'), false, v(ALL, '', 'pending')],
    ['a failed task under Completed: Failed', failedDev, v(ALL, '', 'completed'), false, v(ALL, '', 'failed')],
    ['a completed task under Pending: Completed', doneDev, v(ALL, '', 'pending'), false, v(ALL, '', 'completed')],
    ['Next (a blocked task is not in it): Pending', LIST[0] as LocalTask, v(ALL, '', 'next'), false, v(ALL, '', 'pending')],
    ['All and Failed stay when they hold it', failedDev, v(ALL, 'nothing', 'failed'), false, v(ALL, '', 'failed')],
  ] as const)('%s', (_n, task, view, visible, want) => {
    expect(viewShowing(task, view, visible, fakeParseFilter(view.text))).toEqual(want);
  });
});

describe('captureTarget', () => {
  it.each([
    [ALL, 'DEV', 'DEV'],
    [ALL, null, 'INBOX'],
    [{ kind: 'project', prefix: 'OPS' } as Scope, 'DEV', 'OPS'],
    [{ kind: 'project', prefix: 'OPS' } as Scope, null, 'OPS'],
    [INBOX_SCOPE, 'DEV', 'INBOX'],
  ])('scope %j with default %s captures into %s', (scope, def, want) => {
    expect(captureTarget(scope, def)).toBe(want);
  });
});

describe('captureAssignee', () => {
  it.each([
    [MINE, 'bob', 'bob'],
    [MINE, null, undefined],
    [ALL, 'bob', undefined],
    [INBOX_SCOPE, 'bob', undefined],
  ] as const)('%j as %s: %s', (scope, me, want) => {
    expect(captureAssignee(scope, me)).toBe(want);
  });
});
