/** The gateway's schedule policy with fixed dates: quiet hours end at the right local time, across daylight-saving changes. */
import { describe, expect, it } from 'vitest';
import { isNothingToSay, localDayStart, quietUntil, withinBudget } from '../src/schedules/policy.js';

const quiet = { start: '22:00', end: '07:00' };
const ams = 'Europe/Amsterdam';
const until = (iso: string, q = quiet, tz = ams) => quietUntil(new Date(iso), tz, q)?.toISOString() ?? null;

describe('quiet hours', () => {
  it('lets a run outside the window go now', () => {
    expect(until('2026-06-04T12:00:00Z')).toBeNull(); // 14:00 CEST
    expect(until('2026-06-04T05:00:00Z')).toBeNull(); // 07:00 CEST: the window has just ended
  });

  it('defers to 07:00 the next local morning, before and after midnight', () => {
    expect(until('2026-06-04T21:30:00Z')).toBe('2026-06-05T05:00:00.000Z'); // 23:30 CEST → 07:00 CEST
    expect(until('2026-06-05T01:00:00Z')).toBe('2026-06-05T05:00:00.000Z'); // 03:00 CEST
  });

  it('ends at 07:00 summer time on the night the clocks go forward (last Sunday of March)', () => {
    // Saturday 28 March 2026 23:00 CET; at 02:00 on the 29th the clock jumps to 03:00 CEST.
    expect(until('2026-03-28T22:00:00Z')).toBe('2026-03-29T05:00:00.000Z'); // 07:00 CEST, not 06:00Z
    expect(until('2026-03-29T01:30:00Z')).toBe('2026-03-29T05:00:00.000Z'); // 03:30 CEST, after the jump
  });

  it('ends at 07:00 winter time on the night the clocks go back (last Sunday of October)', () => {
    expect(until('2026-10-24T21:00:00Z')).toBe('2026-10-25T06:00:00.000Z'); // 23:00 CEST → 07:00 CET
  });

  it('resolves an end inside the skipped hour to just after the gap', () => {
    expect(until('2026-03-29T00:30:00Z', { start: '01:00', end: '02:30' })).toBe('2026-03-29T01:30:00.000Z'); // 01:30 CET → 03:30 CEST
  });

  it('handles a window within one day and other zones', () => {
    expect(until('2026-06-04T13:00:00Z', { start: '12:00', end: '14:00' }, 'UTC')).toBe('2026-06-04T14:00:00.000Z');
    expect(until('2026-03-08T07:30:00Z', quiet, 'America/New_York')).toBe('2026-03-08T11:00:00.000Z'); // 03:30 EDT → 07:00 EDT
  });
});

describe('budgets and nothing to say', () => {
  it('counts runs from the recipient local midnight', () => {
    expect(localDayStart(new Date('2026-06-04T23:30:00Z'), ams).toISOString()).toBe('2026-06-04T22:00:00.000Z');
    expect(localDayStart(new Date('2026-03-29T12:00:00Z'), ams).toISOString()).toBe('2026-03-28T23:00:00.000Z');
  });

  it('refuses a run over the schedule or the recipient budget', () => {
    expect(withinBudget({ schedule: 0, recipient: 4 }, { perSchedule: 1, perRecipient: 5 })).toEqual({ ok: true });
    expect(withinBudget({ schedule: 1, recipient: 1 }, { perSchedule: 1 })).toEqual({ ok: false, limit: 'schedule' });
    expect(withinBudget({ schedule: 0, recipient: 5 }, { perRecipient: 5 })).toEqual({ ok: false, limit: 'recipient' });
  });

  it('refuses a run once the day used the schedule or the recipient token budget', () => {
    const used = { schedule: 1, recipient: 2, scheduleTokens: 900, recipientTokens: 4_000 };
    expect(withinBudget(used, { tokensPerSchedule: 1_000, tokensPerRecipient: 5_000 })).toEqual({ ok: true });
    expect(withinBudget(used, { tokensPerSchedule: 900 })).toEqual({ ok: false, limit: 'schedule_tokens' });
    expect(withinBudget(used, { tokensPerRecipient: 4_000 })).toEqual({ ok: false, limit: 'recipient_tokens' });
  });

  it('knows the sentinel', () => {
    expect(isNothingToSay(' NOTHING_TO_SAY.\n')).toBe(true);
    expect(isNothingToSay('Nothing to say about NOTHING_TO_SAY')).toBe(false);
  });
});
