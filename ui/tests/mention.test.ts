// The handle and @mention rules against the fixture callsign-core's tests read too, so the app
// and the CLI take the same capture words for the same member.
import { describe, expect, it } from 'vitest';
import casesJson from '../../crates/callsign-core/src/member_cases.json';
import { memberNameError, mention } from '../src/lib/team';

type Pair = [string, string | null];
const cases = casesJson as unknown as { handles: Pair[]; mentions: Pair[] };

describe('the shared member cases', () => {
  it.each(cases.handles)('handle %j is %j', (input, want) => {
    // The app checks a typed name with memberNameError and sends it lower-cased.
    const got = memberNameError(input) === null ? input.toLowerCase() : null;
    expect(got).toBe(want);
  });

  it.each(cases.mentions)('capture word %j names %j', (word, want) => {
    expect(mention(word)).toBe(want);
  });
});
