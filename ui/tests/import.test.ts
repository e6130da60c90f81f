import { describe, expect, it } from 'vitest';
import {
  clashesText,
  countsText,
  formatHint,
  guessFormat,
  importedReading,
  orphansText,
  originText,
  plainError,
  progressText,
  projectLine,
  settled,
  summaryText,
  trackerName,
  unassignedText,
} from '../src/lib/import';
import type { ImportPlan, ImportProgress, ImportProjectPlan } from '../src/lib/types';

const JIRA_HEAD = 'Summary,Issue key,Issue id,Issue Type,Status,Project key\n"Safari bug",ENG-9,10012,Bug';
const LINEAR_HEAD = '"ID","Team","Title","Description","Status"\n"WEB-1","Web","Set up"';
const GH_HEAD = '[{"assignees":[],"body":"x","closedAt":null,"number":11,"state":"OPEN"}]';
const TW_HEAD = '[\n{"id":0,"description":"Measure","entry":"20240301T091500Z","status":"completed","uuid":"0e4b7c9d-2a1f"}';

describe('guessFormat', () => {
  it.each([
    ['jira.csv', JIRA_HEAD, 'jira'],
    ['export.csv', '\uFEFF' + JIRA_HEAD, 'jira'],
    ['linear.csv', LINEAR_HEAD, 'linear'],
    ['issues.json', GH_HEAD, 'github'],
    ['tasks.json', TW_HEAD, 'taskwarrior'],
    ['no-extension', GH_HEAD, 'github'],
    ['other.csv', 'a,b,c\n1,2,3', null],
    ['list.json', '[{"title":"x"}]', null],
    ['notes.txt', 'hello', null],
  ] as const)('%s', (name, head, want) => {
    expect(guessFormat(name, head)).toBe(want);
  });
});

describe('formatHint', () => {
  it.each([
    ['', false, 'Which tracker made the file.'],
    ['jira', true, 'Looks like Jira’s CSV export, all fields.'],
    ['github', false, 'Expects the JSON of gh issue list --json.'],
  ] as const)('%j guessed %j', (format, guessed, want) => {
    expect(formatHint(format, guessed)).toBe(want);
  });
});

const eng = (over: Partial<ImportProjectPlan> = {}): ImportProjectPlan => ({
  prefix: 'ENG',
  new: true,
  tasks: 8,
  highest_kept: 9,
  unused_count: 1,
  unused: [3],
  ...over,
});

describe('the preview', () => {
  const plan: ImportPlan = { open: 5, done: 2, cancelled: 1, projects: [eng()], unmapped_assignees: { 'Mei Chen': 2, 'Tomás Ortega': 3 }, missing_parents: [] };

  it('counts the tasks', () => {
    expect(countsText(plan)).toBe('8 tasks: 5 open, 2 done, 1 cancelled');
    expect(countsText({ ...plan, open: 1, done: 0, cancelled: 0 })).toBe('1 task: 1 open, 0 done');
  });

  it.each([
    ['kept numbers in a new project, one unused', eng(), 'New project ENG: 8 tasks keep their numbers; the next new task is ENG-10', 'ENG-3 stays unused: the file never had it'],
    ['an existing project, nothing unused', eng({ new: false, tasks: 1, highest_kept: 4, unused_count: 0, unused: [] }), 'ENG: 1 task keeps its number; the next new task is ENG-5', null],
    [
      'many unused: the first ones, then how many more',
      eng({ unused_count: 20, unused: Array.from({ length: 20 }, (_, i) => i + 10), highest_kept: 40 }),
      'New project ENG: 8 tasks keep their numbers; the next new task is ENG-41',
      '20 numbers stay unused, the file never had them: ENG-10, ENG-11, ENG-12, ENG-13, ENG-14, ENG-15, ENG-16, ENG-17, ENG-18, ENG-19, ENG-20, ENG-21 and 8 more',
    ],
    ['numbered there', eng({ prefix: 'OPS', new: false, highest_kept: null, unused_count: 0, unused: [], tasks: 3 }), 'OPS: 3 tasks take its next numbers; their old keys still find them', null],
  ] as const)('%s', (_n, p, text, unused) => {
    expect(projectLine(p)).toEqual({ prefix: p.prefix, text, unused });
  });

  it('names the people left unassigned and the children imported alone', () => {
    expect(unassignedText(plan)).toBe('Left unassigned, no member matches: Mei Chen (2), Tomás Ortega (3)');
    expect(unassignedText({ ...plan, unmapped_assignees: {} })).toBeNull();
    expect(orphansText(plan)).toBeNull();
    expect(orphansText({ ...plan, missing_parents: ['ENG-12', 'ENG-14'] })).toBe('Imported on their own, their parent is not in the file: ENG-12, ENG-14');
  });

  it('names the keys that name another task here', () => {
    expect(clashesText([])).toBeNull();
    expect(clashesText([{ key: 'ENG-4', task: 'OPS-8' }])).toBe('A key names another task here already, so the server will refuse that issue: ENG-4 (is OPS-8)');
    const many = Array.from({ length: 10 }, (_, i) => ({ key: `ENG-${i + 1}`, task: `OPS-${i + 1}` }));
    expect(clashesText(many)).toMatch(/^10 keys name another task here already, so the server will refuse those issues: ENG-1 \(is OPS-1\), .*ENG-8 \(is OPS-8\) and 2 more$/);
  });

  it('speaks of the section, not the command line', () => {
    expect(plainError('--keep-numbers needs a prefix free in the account, and ENG is a project already: import into it without --keep-numbers')).toBe(
      '“Keep their numbers” needs a prefix free in the account, and ENG is a project already: import into it without “Keep their numbers”',
    );
    expect(plainError('this is not a Jira export: no Issue key column')).toBe('This is not a Jira export: no Issue key column');
    expect(plainError('#12 has no prefix: with --keep-numbers, name the project its numbers go into with --project')).toBe(
      '#12 has no prefix: with “Keep their numbers”, name the project its numbers go into with “Into project”',
    );
  });
});

describe('progress and summary', () => {
  const p = (over: Partial<ImportProgress> = {}): ImportProgress => ({ total: 8, keyed: 5, waiting: 3, failed: [], ...over });

  it('says how many are keyed, and the refused', () => {
    expect(progressText(p())).toBe('Keyed 5 of 8');
    expect(progressText(p({ keyed: 6, waiting: 1, failed: [['ENG-7', 'key_taken']] }))).toBe('Keyed 6 of 8 · 1 refused');
    expect(settled(p())).toBe(false);
    expect(settled(p({ keyed: 8, waiting: 0 }))).toBe(true);
    expect(settled(p({ total: 0, keyed: 0, waiting: 0 }))).toBe(true);
  });

  it.each([
    ['all keyed', p({ keyed: 8, waiting: 0 }), 0, 'Imported 8 tasks from Jira: all 8 keyed'],
    ['some here already', p({ keyed: 8, waiting: 0 }), 8, 'Imported 8 tasks from Jira: all 8 keyed, 8 of them here already from an earlier import'],
    ['refused', p({ keyed: 7, waiting: 0, failed: [['ENG-7', 'ENG-7 is taken']] }), 0, 'Imported 8 tasks from Jira: 7 keyed; the server refused 1'],
  ] as const)('%s', (_n, progress, present, want) => {
    expect(summaryText('jira', { present }, progress)).toBe(want);
  });
});

describe('where a task came from', () => {
  it.each([
    [{ tracker: 'jira' as const, key: 'ENG-42' }, 'Imported from Jira ENG-42'],
    [{ tracker: 'github' as const, key: '#12' }, 'Imported from GitHub #12'],
    [{ tracker: 'taskwarrior' as const }, 'Imported from Taskwarrior'],
    [null, null],
    [undefined, null],
  ])('%j', (origin, want) => {
    expect(originText({ origin })).toBe(want);
  });

  it('names trackers as they write themselves', () => {
    expect(['jira', 'linear', 'github', 'taskwarrior', 'asana'].map(trackerName)).toEqual(['Jira', 'Linear', 'GitHub', 'Taskwarrior', 'asana']);
  });

  it('the jump box says what the old key is now', () => {
    const origin = { tracker: 'jira' as const, key: 'ENG-4' };
    expect(importedReading('ENG-4', { key: 'OPS-8', origin })).toBe('ENG-4 from Jira: it is now OPS-8');
    expect(importedReading('ENG-4', { key: null, origin })).toBe('ENG-4 from Jira: no key here yet');
    expect(importedReading('ENG-4', { key: 'ENG-4', origin })).toBe('ENG-4 from Jira');
  });
});
