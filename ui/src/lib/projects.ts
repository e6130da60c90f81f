// Projects as the pickers show them, and the prefix the UI's examples use. Pure: tested in
// tests/projects.test.ts. `INBOX` is the device's own inbox: tasks captured with no server
// project wait there until they are sent to one.
import type { CmdError, LocalTask, Project } from './types';

export const INBOX = 'INBOX';
export const INBOX_LABEL = 'Inbox (this device)';

const isInbox = (p: Project): boolean => p.local === true || p.prefix.toUpperCase() === INBOX;

/** One entry per prefix (upper-cased; the first one wins), in the given order. */
export function dedupeProjects(list: readonly Project[]): Project[] {
  const seen = new Set<string>();
  const out: Project[] = [];
  for (const p of list) {
    const prefix = p.prefix.toUpperCase();
    if (seen.has(prefix)) continue;
    seen.add(prefix);
    out.push({ ...p, prefix, ...(isInbox(p) ? { local: true } : {}) });
  }
  return out;
}

/** The server's projects (what a task can be sent to). */
export function serverProjects(list: readonly Project[]): Project[] {
  return dedupeProjects(list).filter((p) => !isInbox(p));
}

/**
 * The capture picker: the server's projects, the saved default if the list lacks it (offline,
 * not fetched yet), and the inbox last (always: with no server it is where tasks go).
 */
export function pickerProjects(list: readonly Project[], defaultPrefix: string | null | undefined): Project[] {
  const out = serverProjects(list);
  const d = defaultPrefix?.toUpperCase();
  if (d && d !== INBOX && !out.some((p) => p.prefix === d)) out.unshift({ prefix: d, name: d });
  out.push({ prefix: INBOX, name: INBOX_LABEL, local: true });
  return out;
}

export function projectLabel(p: Project): string {
  if (isInbox(p)) return INBOX_LABEL;
  return p.name && p.name !== p.prefix ? `${p.prefix} — ${p.name}` : p.prefix;
}

/**
 * The prefixes a capture's `#PFX` may name: the server's projects and the inbox; none (any
 * valid prefix goes) while no server project is known.
 */
export function capturePrefixes(list: readonly Project[]): string[] {
  const servers = serverProjects(list);
  return servers.length > 0 ? [...servers.map((p) => p.prefix), INBOX] : [];
}

/** The prefix examples and placeholders use: the default project, else the first server project, else DEV. */
export function examplePrefix(defaultPrefix: string | null | undefined, list: readonly Project[]): string {
  const d = defaultPrefix?.toUpperCase();
  if (d && d !== INBOX) return d;
  return serverProjects(list)[0]?.prefix ?? 'DEV';
}

/**
 * The project a bare number (`42`) refers to: the current task's, when that is a real server
 * project (known to the server, or the task has a key there), else the default project.
 */
export function currentProject(
  task: Pick<LocalTask, 'project' | 'local' | 'key'> | null,
  defaultPrefix: string | null | undefined,
  list: readonly Project[],
): string | null {
  if (task && !task.local && task.project !== INBOX) {
    if (task.key !== null || serverProjects(list).some((p) => p.prefix === task.project)) return task.project;
  }
  const d = defaultPrefix?.toUpperCase();
  return d && d !== INBOX ? d : null;
}

/**
 * Why the server would refuse `input` as a new project's prefix, in its own words, or null when
 * it takes it (callsign-core's `Prefix::parse`: 2-10 characters, an ASCII letter first, then
 * ASCII letters or digits, any case, stored upper-case; the engine trims it first and keeps
 * `INBOX` for the device's inbox). The input is quoted as Rust's `{:?}` quotes it.
 */
export function prefixError(input: string): string | null {
  const p = input.trim();
  if (!/^[A-Za-z][A-Za-z0-9]{1,9}$/.test(p)) {
    return `invalid prefix ${JSON.stringify(p)}: a prefix is 2-10 characters, a letter first, then letters or digits (e.g. SYN)`;
  }
  if (p.toUpperCase() === INBOX) return `${INBOX} is this device's inbox: no server project can take its name`;
  return null;
}

/** What the New project dialog shows when the server refuses a project. */
export interface CreateRefusal {
  /** The refusal in the server's (or the engine's) words: for a prefix that sounds alike, it names the other project. */
  message: string;
  /**
   * "Create anyway" is offered: the prefix sounds like another project's (`prefix_sounds_alike`),
   * which the request overrides with `allowSimilar`. Every other refusal needs a change, not a resend.
   */
  anyway: boolean;
}

export function createRefusal(e: CmdError): CreateRefusal {
  return { message: e.message, anyway: e.code === 'prefix_sounds_alike' };
}
