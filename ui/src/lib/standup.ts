// The Standup view: what its heading and empty states say, the "since" choice as the backend
// reads it, and its lines in reading order (the keyboard walks them). The report itself is the
// engine's (`standup`, the one `callsign standup` prints). Pure: tested in tests/standup.test.ts.
import type { MemberReport, Standup, StandupLine } from './types';

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Local midnight of the day `ms` falls on. */
function dayStart(ms: number): number {
  const d = new Date(ms);
  return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
}

/** Whole local days from the day of `from` to the day of `to` (daylight saving is no day). */
function daysBetween(from: number, to: number): number {
  return Math.round((dayStart(to) - dayStart(from)) / 86_400_000);
}

/**
 * The report's first day as said: `today`, `yesterday`, `tomorrow`, a weekday within the last
 * week (`Friday`), else the date (`Fri 20 Nov`, with the year when it is not this one's). Local time.
 */
export function sinceLabel(since: string, now: number): string {
  const at = Date.parse(since);
  const back = daysBetween(at, now);
  const d = new Date(at);
  if (back === 0) return 'today';
  if (back === 1) return 'yesterday';
  if (back === -1) return 'tomorrow';
  if (back > 1 && back < 7) return DAYS[d.getDay()] as string;
  const year = d.getFullYear() === new Date(now).getFullYear() ? '' : ` ${d.getFullYear()}`;
  return `${(DAYS[d.getDay()] as string).slice(0, 3)} ${d.getDate()} ${MONTHS[d.getMonth()]}${year}`;
}

/** The report's first day spelled out, for the heading's title: `Friday 2026-11-27`. */
export function sinceDate(since: string): string {
  const d = new Date(Date.parse(since));
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${DAYS[d.getDay()]} ${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** The "since" select: the last working day (the default), yesterday, today, or a day typed. */
export type SinceChoice = 'last' | 'yesterday' | 'today' | 'day';

export const SINCE_CHOICES: readonly { value: SinceChoice; label: string }[] = [
  { value: 'last', label: 'Last working day' },
  { value: 'yesterday', label: 'Yesterday' },
  { value: 'today', label: 'Today' },
  { value: 'day', label: 'A day…' },
];

/**
 * What `standup` is asked for: null for the last working day, the word for yesterday and today,
 * the typed day (`2026-11-20`, `monday`; the engine reads it as a due date) for a day; null while
 * that is empty.
 */
export function sinceArg(choice: SinceChoice, day: string): string | null {
  if (choice === 'last') return null;
  if (choice === 'day') return day.trim() === '' ? null : day.trim();
  return choice;
}

/** A member's three lists, in the order they are said. */
export const SECTIONS = [
  { id: 'completed', title: 'Completed' },
  { id: 'created', title: 'Created' },
  { id: 'open', title: 'Open, assigned' },
] as const;

export type SectionId = (typeof SECTIONS)[number]['id'];

/** Whether a member has nothing to say. */
export function said(m: MemberReport): boolean {
  return m.completed.length + m.created.length + m.open.length > 0;
}

/** What the view shows instead of the report, or that it shows the report. */
export type StandupState = { kind: 'loading' } | { kind: 'no-team'; text: string } | { kind: 'empty'; text: string } | { kind: 'report' };

/** With no server: who the team is, this device cannot know. */
export const NO_TEAM_LOCAL = "This device isn't signed in to a team: log in or join a team (Settings) to see who did what.";
/** A server, but no member listed yet (and no task naming one). */
export const NO_TEAM_MEMBERS = 'No members known yet: the team is listed when the server answers.';

/**
 * What the view shows: the report, or why not. No server (`configured` false): the team is not
 * known, whatever the tasks name. No member at all: not listed yet. Every member with nothing:
 * `Nothing since Friday.` in one line, not a list of empty names.
 */
export function standupState(report: Standup | null, configured: boolean, now: number): StandupState {
  if (!configured) return { kind: 'no-team', text: NO_TEAM_LOCAL };
  if (report === null) return { kind: 'loading' };
  if (report.members.length === 0) return { kind: 'no-team', text: NO_TEAM_MEMBERS };
  if (!report.members.some(said)) {
    return { kind: 'empty', text: `Nothing since ${sinceLabel(report.since, now)}: no task completed or created, none open and assigned.` };
  }
  return { kind: 'report' };
}

/** A member with nothing, under their name. */
export function memberEmptyText(since: string, now: number): string {
  return `Nothing since ${sinceLabel(since, now)}, nothing open.`;
}

/** One line of the view: which member and section it is in, and the task. */
export interface StandupItem {
  member: string;
  section: SectionId;
  line: StandupLine;
}

/** Every line, in reading order: member by member, completed, created, then open. */
export function standupItems(report: Standup | null): StandupItem[] {
  const out: StandupItem[] = [];
  for (const m of report?.members ?? []) {
    for (const s of SECTIONS) {
      for (const line of m[s.id]) out.push({ member: m.name, section: s.id, line });
    }
  }
  return out;
}

/**
 * The highlighted line after the report changed: the same line (member, section, task) where it
 * now is, else the first line of the same task, else the same place clamped; -1 when empty.
 */
export function followItem(items: readonly StandupItem[], before: StandupItem | null, index: number): number {
  if (items.length === 0) return -1;
  if (before !== null) {
    const same = items.findIndex((i) => i.line.uuid === before.line.uuid && i.member === before.member && i.section === before.section);
    if (same >= 0) return same;
    const task = items.findIndex((i) => i.line.uuid === before.line.uuid);
    if (task >= 0) return task;
  }
  return Math.min(Math.max(index, 0), items.length - 1);
}

/** What a provisional line's key slot says, and its title. */
export function provisionalTitle(line: StandupLine): string {
  return `Provisional (${line.key}): its key comes when the server numbers it`;
}
