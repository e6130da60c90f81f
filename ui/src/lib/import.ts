// Settings → Import: another tracker's export read in with its keys. What the section guesses
// from the file, what its preview, progress and summary say, and how an imported task names
// where it came from. Pure: tested in tests/import.test.ts.
//
// The flow (ImportSection.svelte): choose a file, its format guessed when the file makes it
// plain; Preview plans it (`import_export` with `dry_run`: nothing is made, offline too); Import
// queues it (the server is needed once, and an owner), then `import_progress` is polled until no
// task waits for its key; the summary says how many were keyed and which the server refused.
import type { ImportFormat, ImportPlan, ImportProgress, ImportProjectPlan, ImportResult, LocalTask } from './types';
import { plural } from './status';

/** The formats, in the order the select offers them, with the trackers' own names. */
export const FORMATS: readonly { value: ImportFormat; label: string; hint: string }[] = [
  { value: 'jira', label: 'Jira', hint: 'Jira’s CSV export, all fields' },
  { value: 'linear', label: 'Linear', hint: 'Linear’s CSV export' },
  { value: 'github', label: 'GitHub', hint: 'the JSON of gh issue list --json' },
  { value: 'taskwarrior', label: 'Taskwarrior', hint: 'the JSON of task export' },
];

/** The line under the format: what the file was taken for, or what the format expects. */
export function formatHint(format: ImportFormat | '', guessed: boolean): string {
  const f = FORMATS.find((x) => x.value === format);
  if (f === undefined) return 'Which tracker made the file.';
  return guessed ? `Looks like ${f.hint}.` : `Expects ${f.hint}.`;
}

/** A tracker as people write it (`GitHub`); an unknown one as given. */
export function trackerName(tracker: string): string {
  return FORMATS.find((f) => f.value === tracker)?.label ?? tracker;
}

/** What the detail says of an imported task: `Imported from Jira ENG-42`; null for one made here. */
export function originText(t: Pick<LocalTask, 'origin'>): string | null {
  const o = t.origin;
  if (!o) return null;
  return o.key ? `Imported from ${trackerName(o.tracker)} ${o.key}` : `Imported from ${trackerName(o.tracker)}`;
}

/** The jump box's line for a task found by its key in the tracker it came from. */
export function importedReading(typed: string, t: Pick<LocalTask, 'key' | 'origin'>): string {
  const from = `${typed} from ${trackerName(t.origin?.tracker ?? '')}`;
  if (t.key === typed) return from;
  return t.key === null ? `${from}: no key here yet` : `${from}: it is now ${t.key}`;
}

/**
 * The format a file is in, when its name and first bytes make it plain (`head`: its start as
 * text): a CSV whose header has Jira's `Issue key`, or Linear's `ID` and `Title`; JSON objects
 * with Taskwarrior's `uuid` and `entry`, or GitHub's `number`. Null: the user says.
 */
export function guessFormat(name: string, head: string): ImportFormat | null {
  const text = head.replace(/^\uFEFF/, '').trimStart();
  const ext = name.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1] ?? '';
  if (text.startsWith('[') || text.startsWith('{') || ext === 'json') {
    if (/"uuid"\s*:/.test(text) && /"entry"\s*:/.test(text)) return 'taskwarrior';
    if (/"number"\s*:/.test(text)) return 'github';
    return null;
  }
  const header = (text.split(/\r?\n/, 1)[0] ?? '').split(',').map((c) => c.trim().replace(/^"|"$/g, ''));
  if (header.includes('Issue key')) return 'jira';
  if (header.includes('ID') && header.includes('Title')) return 'linear';
  return null;
}

/** The preview's first line: `8 tasks: 5 open, 2 done, 1 cancelled`. */
export function countsText(p: ImportPlan): string {
  const total = p.open + p.done + p.cancelled;
  const parts = [`${p.open} open`, `${p.done} done`, ...(p.cancelled > 0 ? [`${p.cancelled} cancelled`] : [])];
  return `${plural(total, 'task')}: ${parts.join(', ')}`;
}

/** How many unused numbers the preview names before `and N more`. */
export const UNUSED_SHOWN = 12;

/** One project of the plan, in words. */
export interface ProjectLine {
  prefix: string;
  /** `New project ENG: 8 tasks keep their numbers; the next new task is ENG-10`. */
  text: string;
  /** `ENG-3 stays unused: the file never had it`; null when none. */
  unused: string | null;
}

export function projectLine(p: ImportProjectPlan): ProjectLine {
  const where = p.new ? `New project ${p.prefix}` : p.prefix;
  if (p.highest_kept === null) {
    return {
      prefix: p.prefix,
      text: `${where}: ${plural(p.tasks, 'task')} take${p.tasks === 1 ? 's' : ''} its next numbers; their old keys still find them`,
      unused: null,
    };
  }
  const kept = p.tasks === 1 ? '1 task keeps its number' : `${p.tasks} tasks keep their numbers`;
  return { prefix: p.prefix, text: `${where}: ${kept}; the next new task is ${p.prefix}-${p.highest_kept + 1}`, unused: unusedText(p) };
}

function unusedText(p: ImportProjectPlan): string | null {
  if (p.unused_count === 0) return null;
  const keys = p.unused.slice(0, UNUSED_SHOWN).map((n) => `${p.prefix}-${n}`);
  if (p.unused_count === 1) return `${keys[0]} stays unused: the file never had it`;
  const more = p.unused_count - keys.length;
  return `${p.unused_count} numbers stay unused, the file never had them: ${keys.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** `Left unassigned, no member matches: Mei Chen (2), Tomás Ortega (3)`; null when everyone matched. */
export function unassignedText(p: ImportPlan): string | null {
  const names = Object.entries(p.unmapped_assignees);
  if (names.length === 0) return null;
  return `Left unassigned, no member matches: ${names.map(([n, c]) => `${n} (${c})`).join(', ')}`;
}

/** `Imported on their own, their parent is not in the file: ENG-12`; null when none. */
export function orphansText(p: ImportPlan): string | null {
  if (p.missing_parents.length === 0) return null;
  return `Imported on their own, their parent is not in the file: ${p.missing_parents.join(', ')}`;
}

/**
 * `ENG-4 names OPS-8 here already: the server will refuse that issue`; null when no key clashes.
 * The first few are named.
 */
export function clashesText(clashes: ImportResult['clashes']): string | null {
  if (clashes.length === 0) return null;
  const named = clashes.slice(0, 8).map((c) => `${c.key} (is ${c.task})`);
  const more = clashes.length > named.length ? ` and ${clashes.length - named.length} more` : '';
  const those = clashes.length === 1 ? 'that issue' : 'those issues';
  return `${clashes.length === 1 ? 'A key names' : `${clashes.length} keys name`} another task here already, so the server will refuse ${those}: ${named.join(', ')}${more}`;
}

/** `Keyed 5 of 8`, and the refused: `Keyed 5 of 8 · 1 refused`. */
export function progressText(p: ImportProgress): string {
  const refused = p.failed.length > 0 ? ` · ${p.failed.length} refused` : '';
  return `Keyed ${p.keyed} of ${p.total}${refused}`;
}

/** Nothing waits for its key any more: every task is keyed or refused. */
export function settled(p: ImportProgress): boolean {
  return p.waiting === 0;
}

/**
 * The summary once nothing waits: `Imported 8 tasks from Jira: all 8 keyed`, with those here
 * from an earlier import and the refused ones counted.
 */
export function summaryText(format: ImportFormat, r: Pick<ImportResult, 'present'>, p: ImportProgress): string {
  const keyed = p.keyed === p.total ? `all ${p.keyed} keyed` : `${p.keyed} keyed`;
  const present = r.present > 0 ? `, ${r.present} of them here already from an earlier import` : '';
  const refused = p.failed.length > 0 ? `; the server refused ${p.failed.length}` : '';
  return `Imported ${plural(p.total, 'task')} from ${trackerName(format)}: ${keyed}${present}${refused}`;
}

/**
 * A refusal as the section shows it: the engine's words as a sentence, the command line's flags
 * they name (`--keep-numbers`, `--project`) replaced by the section's own controls. Wording
 * only: nothing is decided on the text.
 */
export function plainError(message: string): string {
  const s = message.replaceAll('--keep-numbers', '“Keep their numbers”').replaceAll('--project', '“Into project”');
  return s.charAt(0).toUpperCase() + s.slice(1);
}
