import { Cron } from 'croner';

/** Validates a cron expression (5 or 6 fields) and time zone; throws with the reason. */
export function checkCron(expr: string, tz: string): void {
  new Cron(expr, { timezone: tz, paused: true }).stop();
}

export function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The first tick of `expr` in `tz` strictly after `after`, or null when there is none. */
export function nextTick(expr: string, tz: string, after: Date): Date | null {
  const c = new Cron(expr, { timezone: tz, paused: true });
  const n = c.nextRun(after);
  c.stop();
  return n;
}
