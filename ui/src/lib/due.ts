// Due dates as the UI shows them: compactly in a row, as editable text in the detail pane, and
// whether a task is overdue. Times are the web view's local time, the zone the backend's parser
// reads `tomorrow` and `fri` in. Pure (`now` comes in): tested in tests/due.test.ts.
//
// A due date at local midnight is a whole day, as Taskwarrior reads it: `due:fri` (Friday
// 00:00) is shown as `Fri 27 Nov`, not `Fri 27 Nov 00:00`, and is overdue only once Friday is
// over. An end of day (23:59, as `eod` and `eow` give) is shown as the date too.
import type { LocalTask, Priority } from './types';

const DAY = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const DAY_LONG = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTH = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH_LONG = [
  'January', 'February', 'March', 'April', 'May', 'June',
  'July', 'August', 'September', 'October', 'November', 'December',
];

const two = (n: number) => String(n).padStart(2, '0');

function isMidnight(d: Date): boolean {
  return d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0;
}

function isEndOfDay(d: Date): boolean {
  return d.getHours() === 23 && d.getMinutes() === 59;
}

/** Calendar days from `now`'s local date to `d`'s (DST-proof: both dates counted as UTC days). */
function daysFrom(now: Date, d: Date): number {
  const day = (x: Date) => Date.UTC(x.getFullYear(), x.getMonth(), x.getDate());
  return Math.round((day(d) - day(now)) / 86_400_000);
}

/** Past its due time; a due at local midnight lasts until that day is over. */
export function isOverdue(due: string, now: number): boolean {
  const t = Date.parse(due);
  return !Number.isNaN(t) && overdueAt(new Date(t), now);
}

/** `isOverdue` of a due date already parsed. */
function overdueAt(d: Date, now: number): boolean {
  if (!isMidnight(d)) return now > d.getTime();
  const end = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime();
  return now >= end;
}

export interface DueView {
  /** `today`, `tomorrow`, `yesterday`, `Fri 27 Nov`, `4 Jan 2028`; ` 14:30` when the time matters. */
  text: string;
  /** Spelled out, for screen readers and the tooltip: `Friday 27 November 2026, 14:30`. */
  long: string;
  /** A pending task past its due time. */
  overdue: boolean;
  /** Due later today (a pending task, not overdue yet). */
  today: boolean;
}

/** How a due date reads; null when there is none (or it does not parse). */
export function dueView(task: Pick<LocalTask, 'due' | 'status'>, now: number): DueView | null {
  if (task.due === null) return null;
  const t = Date.parse(task.due);
  if (Number.isNaN(t)) return null;
  const d = new Date(t);
  const n = new Date(now);
  const days = daysFrom(n, d);
  const time = isMidnight(d) || isEndOfDay(d) ? '' : `${two(d.getHours())}:${two(d.getMinutes())}`;
  const date =
    days === 0
      ? 'today'
      : days === 1
        ? 'tomorrow'
        : days === -1
          ? 'yesterday'
          : Math.abs(days) < 180
            ? `${DAY[d.getDay()]} ${d.getDate()} ${MONTH[d.getMonth()]}`
            : `${d.getDate()} ${MONTH[d.getMonth()]} ${d.getFullYear()}`;
  const long = `${DAY_LONG[d.getDay()]} ${d.getDate()} ${MONTH_LONG[d.getMonth()]} ${d.getFullYear()}`;
  const pending = task.status === 'pending';
  const overdue = pending && overdueAt(d, now);
  return {
    text: time ? `${date} ${time}` : date,
    long: time ? `${long}, ${time}` : long,
    overdue,
    today: pending && !overdue && days === 0,
  };
}

/**
 * The due date as the detail's field shows it, in a form the backend reads back as the same
 * time: `2026-11-27` (a whole day) or `2026-11-27 14:30`. Seconds are not shown (`eod` is
 * 23:59:59 and shows as `23:59`); the field saves only text the user changed.
 */
export function dueInputText(due: string | null): string {
  if (due === null) return '';
  const t = Date.parse(due);
  if (Number.isNaN(t)) return due;
  const d = new Date(t);
  const date = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  return isMidnight(d) ? date : `${date} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

export const PRIORITY_NAME: Record<Priority, string> = { H: 'high', M: 'medium', L: 'low' };

const DATE_RE = /\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?/g;

/**
 * `text` cut around the dates and times in it (`2026-12-01`, `2026-12-01T14:30`), so a message
 * can keep each on one line: WebKit otherwise breaks a line after a date's hyphen.
 */
export function dateSegments(text: string): { text: string; date: boolean }[] {
  const out: { text: string; date: boolean }[] = [];
  let at = 0;
  for (const m of text.matchAll(DATE_RE)) {
    if (m.index > at) out.push({ text: text.slice(at, m.index), date: false });
    out.push({ text: m[0], date: true });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at), date: false });
  return out;
}
