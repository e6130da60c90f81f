import { describe, expect, it } from 'vitest';
import {
  capturePrefixes,
  createRefusal,
  currentProject,
  dedupeProjects,
  examplePrefix,
  pickerProjects,
  prefixError,
  projectLabel,
  serverProjects,
} from '../src/lib/projects';
import type { Project } from '../src/lib/types';
import { task } from './fixtures';

const DEV = { prefix: 'DEV', name: 'Development' };
const OPS = { prefix: 'OPS', name: 'Operations' };
const INBOX = { prefix: 'INBOX', name: 'Inbox (this device)', local: true };

describe('projects', () => {
  it('dedupeProjects: one entry per prefix, any case, first wins', () => {
    expect(dedupeProjects([DEV, { prefix: 'dev', name: 'again' }, OPS]).map((p) => p.name)).toEqual(['Development', 'Operations']);
  });

  it.each([
    ['server projects only', [DEV, OPS], null, ['DEV', 'OPS', 'INBOX']],
    ['no "Default" entry, no duplicate of the default', [DEV, OPS], 'DEV', ['DEV', 'OPS', 'INBOX']],
    ['the default when the list lacks it (offline)', [], 'DEV', ['DEV', 'INBOX']],
    ['a fresh device with no server: the inbox', [INBOX], null, ['INBOX']],
    ['the inbox once, last, even when listed first', [INBOX, DEV, INBOX], null, ['DEV', 'INBOX']],
  ] as const)('pickerProjects: %s', (_n, list, d, want) => {
    expect(pickerProjects([...list] as Project[], d).map((p) => p.prefix)).toEqual(want);
  });

  it('serverProjects leaves the inbox out (by flag or by prefix)', () => {
    expect(serverProjects([INBOX, DEV, { prefix: 'inbox', name: 'x' }]).map((p) => p.prefix)).toEqual(['DEV']);
  });

  it.each([
    [DEV, 'DEV — Development'],
    [{ prefix: 'OPS', name: 'OPS' }, 'OPS'],
    [INBOX, 'Inbox (this device)'],
  ])('projectLabel(%j) = %s', (p, want) => {
    expect(projectLabel(p)).toBe(want);
  });

  it.each([
    ['the default project', 'ops', [DEV], 'OPS'],
    ['else the first server project', null, [INBOX, DEV], 'DEV'],
    ['not the inbox', 'INBOX', [OPS], 'OPS'],
    ['else DEV', null, [INBOX], 'DEV'],
  ] as const)('examplePrefix: %s', (_n, d, list, want) => {
    expect(examplePrefix(d, [...list] as Project[])).toBe(want);
  });

  it.each([
    ['the current task\'s server project', task({ project: 'OPS' }), 'DEV', [DEV, OPS], 'OPS'],
    ['a keyed task\'s project even when the list is not known', task({ project: 'OPS', key: 'OPS-1' }), 'DEV', [], 'OPS'],
    ['an inbox task: the default', task({ project: 'INBOX', local: true }), 'DEV', [DEV], 'DEV'],
    ['a provisional task in an unknown project: the default', task({ project: 'ZZZ' }), 'DEV', [DEV], 'DEV'],
    ['no task: the default', null, 'dev', [DEV], 'DEV'],
    ['nothing known', null, null, [], null],
  ] as const)('currentProject: %s', (_n, t, d, list, want) => {
    expect(currentProject(t, d, [...list] as Project[])).toBe(want);
  });

  it.each([
    ['no server project known: any prefix goes', [INBOX], []],
    ['the server projects and the inbox', [DEV, INBOX, OPS], ['DEV', 'OPS', 'INBOX']],
  ] as const)('capturePrefixes: %s', (_n, list, want) => {
    expect(capturePrefixes([...list] as Project[])).toEqual(want);
  });
});

// The server's rule (callsign-core `Prefix::parse`, the engine's `create_project`) and its words.
const RULE = 'a prefix is 2-10 characters, a letter first, then letters or digits (e.g. SYN)';
describe('prefixError', () => {
  it.each([
    ['DEV'],
    ['dev'],
    ['Ops2'],
    ['ab'],
    ['ABCDEFGHIJ'],
    ['x9'],
    [' web '], // the engine trims it
  ])('%j is a prefix', (input) => {
    expect(prefixError(input)).toBeNull();
  });

  it.each([
    ['', `invalid prefix "": ${RULE}`],
    ['D', `invalid prefix "D": ${RULE}`],
    ['ABCDEFGHIJK', `invalid prefix "ABCDEFGHIJK": ${RULE}`],
    ['2DEV', `invalid prefix "2DEV": ${RULE}`],
    ['DE-V', `invalid prefix "DE-V": ${RULE}`],
    ['DE V', `invalid prefix "DE V": ${RULE}`],
    ['my_proj', `invalid prefix "my_proj": ${RULE}`],
    ['ÉTÉ', `invalid prefix "ÉTÉ": ${RULE}`],
    ['say"hi', `invalid prefix "say\\"hi": ${RULE}`],
    ['  x ', `invalid prefix "x": ${RULE}`],
    ['INBOX', "INBOX is this device's inbox: no server project can take its name"],
    ['inbox', "INBOX is this device's inbox: no server project can take its name"],
  ])('%j: %s', (input, want) => {
    expect(prefixError(input)).toBe(want);
  });
});

// The New project dialog's refusal: "Create anyway" only where resending with allowSimilar helps.
describe('createRefusal', () => {
  const alike =
    'SIN sounds like SYN, the prefix of project "Sync": said as words, SIN and SYN both sound like "SIN", so SIN-4 and SYN-4 would be misheard (with allow_similar it is taken anyway)';
  it.each([
    ['prefix_sounds_alike', alike, true],
    ['prefix_taken', 'SYN is taken: a project of this account has it', false],
    ['invalid', 'invalid prefix "1x"', false],
    ['unreachable', "Can't reach the server", false],
    ['not_logged_in', 'Creating a project needs a server', false],
  ])('%s: the message as given, anyway = %s', (code, message, anyway) => {
    expect(createRefusal({ code, message })).toEqual({ message, anyway });
  });
});
