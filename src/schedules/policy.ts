/**
 * The gateway's policy for scheduled runs, decided before any model call: quiet hours in the
 * recipient's time zone (a run inside them is deferred to their end, never dropped) and the
 * runs-per-day and tokens-per-day budgets. Pure functions over an explicit `now`, so tests give fixed dates.
 */

export interface QuietHours {
  /** Local wall-clock "HH:MM" the quiet window starts at. */
  start: string;
  /** Local wall-clock "HH:MM" it ends at (earlier than start: the window spans midnight). */
  end: string;
}

const minutes = (hhmm: string): number => {
  const [h, m] = hhmm.split(':').map(Number);
  return h! * 60 + m!;
};

/** The wall-clock parts of `at` in `tz`. */
export function localParts(at: Date, tz: string): { year: number; month: number; day: number; hour: number; minute: number } {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
  });
  const p = Object.fromEntries(f.formatToParts(at).map((x) => [x.type, x.value]));
  return { year: Number(p.year), month: Number(p.month), day: Number(p.day), hour: Number(p.hour), minute: Number(p.minute) };
}

/** The instant the local wall clock in `tz` reads (year, month, day, hh:mm); a time the clock skips (spring forward) moves on by the gap (02:30 → 03:30). */
export function zonedInstant(tz: string, year: number, month: number, day: number, minuteOfDay: number): Date {
  const wanted = Date.UTC(year, month - 1, day, Math.floor(minuteOfDay / 60), minuteOfDay % 60);
  const offset = (t: number) => {
    const p = localParts(new Date(t), tz);
    return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute) - t;
  };
  const o1 = offset(wanted);
  const t1 = wanted - o1;
  const o2 = offset(t1);
  if (o1 === o2) return new Date(t1);
  const t2 = wanted - o2;
  if (offset(t2) === o2) return new Date(t2);
  // In the gap: neither offset gives this wall time; the smaller one lands just after the gap.
  return new Date(wanted - Math.min(o1, o2));
}

/** Whether `at` is inside the quiet window in `tz`, and if so when the window ends. */
export function quietUntil(at: Date, tz: string, quiet: QuietHours | undefined): Date | null {
  if (!quiet) return null;
  const p = localParts(at, tz);
  const now = p.hour * 60 + p.minute;
  const start = minutes(quiet.start);
  const end = minutes(quiet.end);
  if (start === end) return null;
  const spansMidnight = start > end;
  const inside = spansMidnight ? now >= start || now < end : now >= start && now < end;
  if (!inside) return null;
  // The end is today (local) unless the window started today and runs past midnight.
  const endsTomorrow = spansMidnight && now >= start;
  const day = new Date(Date.UTC(p.year, p.month - 1, p.day + (endsTomorrow ? 1 : 0)));
  return zonedInstant(tz, day.getUTCFullYear(), day.getUTCMonth() + 1, day.getUTCDate(), end);
}

/** The start of the recipient's local day containing `at` (what "runs per day" counts from). */
export function localDayStart(at: Date, tz: string): Date {
  const p = localParts(at, tz);
  return zonedInstant(tz, p.year, p.month, p.day, 0);
}

export type BudgetVerdict = { ok: true } | { ok: false; limit: 'schedule' | 'recipient' | 'schedule_tokens' | 'recipient_tokens' };

/** Whether one more run fits the day's budgets: runs (this one not counted yet) and tokens already used. */
export function withinBudget(
  fired: { schedule: number; recipient: number; scheduleTokens?: number; recipientTokens?: number },
  limits: { perSchedule?: number | null; perRecipient?: number | null; tokensPerSchedule?: number | null; tokensPerRecipient?: number | null },
): BudgetVerdict {
  if (limits.perSchedule != null && fired.schedule >= limits.perSchedule) return { ok: false, limit: 'schedule' };
  if (limits.perRecipient != null && fired.recipient >= limits.perRecipient) return { ok: false, limit: 'recipient' };
  if (limits.tokensPerSchedule != null && (fired.scheduleTokens ?? 0) >= limits.tokensPerSchedule) return { ok: false, limit: 'schedule_tokens' };
  if (limits.tokensPerRecipient != null && (fired.recipientTokens ?? 0) >= limits.tokensPerRecipient) return { ok: false, limit: 'recipient_tokens' };
  return { ok: true };
}

/** What the model answers when it has nothing worth sending: the reply is not delivered and the run is recorded as nothing_to_say. */
export const NOTHING_TO_SAY = 'NOTHING_TO_SAY';

export const isNothingToSay = (text: string): boolean => text.trim().replace(/[.!]$/, '') === NOTHING_TO_SAY;
