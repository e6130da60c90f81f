// The fake backend's stand-in for `callsign_core::when`: enough of Taskwarrior's due forms for the
// preview (today, tomorrow, yesterday, eod, eow, a weekday, 3d / 2w / 4h, 2026-12-01,
// 2026-12-01T14:30, an RFC 3339 time) and the same refusals, word for word. Not the real parser.
import type { CmdError, Priority } from '../lib/types';

const DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

const invalid = (message: string): CmdError => ({ code: 'invalid', message });

function notADate(s: string): CmdError {
  return invalid(
    `'${s.trim()}' is not a date: use a date (2026-12-01, 2026-12-01T14:30), a day (today, tomorrow, ` +
      'monday, fri), an end (eod, eow, eom, eoy) or a span from now (3d, 2w, 4h, 1mo)',
  );
}

/** RFC 3339 UTC, as the backend stores it; null for `''` / `none` (clear). Throws `{code, message}`. */
export function fakeParseDue(s: string, now = new Date()): string | null {
  const w = s.trim().toLowerCase();
  if (w === '' || w === 'none') return null;
  const day = (offset: number, h = 0, m = 0, sec = 0) =>
    new Date(now.getFullYear(), now.getMonth(), now.getDate() + offset, h, m, sec);
  let d: Date | null = null;
  const weekday = DAYS.findIndex((x) => w === x || w === x.slice(0, 3));
  const span = /^\+?(\d+)(h|d|w)$/.exec(w);
  const date = /^(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2}))?$/.exec(w);
  if (w === 'today') d = day(0);
  else if (w === 'tomorrow') d = day(1);
  else if (w === 'yesterday') d = day(-1);
  else if (w === 'eod') d = day(0, 23, 59, 59);
  else if (w === 'eow') d = day((7 - now.getDay()) % 7, 23, 59, 59);
  else if (weekday >= 0) d = day((weekday - now.getDay() + 7) % 7 || 7);
  else if (span) {
    const n = Number(span[1]);
    const hours = span[2] === 'h' ? n : span[2] === 'd' ? n * 24 : n * 24 * 7;
    d = new Date(now.getTime() + hours * 3_600_000);
  } else if (date) {
    const [, y, mo, da, h, mi] = date.map(Number) as number[];
    d = new Date(y as number, (mo as number) - 1, da, Number.isNaN(h) ? 0 : h, Number.isNaN(mi) ? 0 : mi);
  } else if (/^\d{4}-\d{2}-\d{2}t.*(z|[+-]\d{2}:\d{2})$/.test(w) && !Number.isNaN(Date.parse(s.trim()))) {
    d = new Date(Date.parse(s.trim()));
  }
  if (d === null || Number.isNaN(d.getTime())) throw notADate(s);
  return d.toISOString();
}

/** `H`, `M`, `L` or the words, any case; null for `''`. Throws `{code, message}`. */
export function fakeParsePriority(s: string): Priority | null {
  const w = s.trim().toLowerCase();
  if (w === '') return null;
  if (w === 'h' || w === 'high') return 'H';
  if (w === 'm' || w === 'medium' || w === 'med') return 'M';
  if (w === 'l' || w === 'low') return 'L';
  throw invalid(`'${s}' is not a priority: use H, M or L`);
}
