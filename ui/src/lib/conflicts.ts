// Conflicts as people read them: two devices changed one field of a task, the server kept the
// later value and the task keeps the one it replaced (`callsign_core::merge`).
import type { Conflict, ConflictField, LocalTask } from './types';

const NAMES: Record<ConflictField, string> = {
  description: 'Description',
  notes: 'Notes',
  status: 'Status',
  tags: 'Tags',
  due: 'Due date',
  priority: 'Priority',
};

export function fieldName(f: ConflictField): string {
  return NAMES[f];
}

/** A field's value in words: text quoted (long text cut), tags by name, no value as `none`. */
export function valueText(field: ConflictField, v: unknown, max = 80): string {
  if (v === null || v === undefined || v === '') return field === 'tags' ? 'no tags' : 'none';
  if (Array.isArray(v)) return v.length ? v.map((t) => `+${String(t)}`).join(' ') : 'no tags';
  const s = String(v);
  if (field === 'due') {
    const d = new Date(s);
    return Number.isNaN(d.getTime()) ? s : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  }
  if (field === 'description' || field === 'notes') {
    const one = s.replace(/\s+/g, ' ').trim();
    return `“${one.length > max ? `${one.slice(0, max - 1)}…` : one}”`;
  }
  return s;
}

/** The value the task holds now in the conflict's field. */
export function currentValue(t: LocalTask, field: ConflictField): unknown {
  return t[field];
}

/** One line per conflict: `Description: “theirs” was replaced by “ours”`. */
export function conflictLine(t: LocalTask, c: Conflict): string {
  return `${fieldName(c.field)}: ${valueText(c.field, c.value)} was replaced by ${valueText(c.field, currentValue(t, c.field))}`;
}
