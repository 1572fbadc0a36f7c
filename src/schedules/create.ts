import type { ScheduleRecord, ScheduleRepository } from '../../adapters/store/ports/schedules.js';
import { checkCron, nextTick, validTimeZone } from './next-tick.js';

export interface ScheduleRequest {
  conversationId: string;
  /** A cron expression (5 fields, or 6 with seconds) in `tz`. */
  cron?: unknown;
  /** A one-off time: an ISO 8601 instant. */
  at?: unknown;
  /** The recipient's IANA time zone (Europe/Amsterdam). */
  tz?: unknown;
  prompt?: unknown;
  runsPerDay?: unknown;
  /** The most tokens the schedule's runs may use per local day. */
  tokensPerDay?: unknown;
  /** A yes/no question for the cheap check slot, asked before each run (schedules.checkSlot). */
  check?: unknown;
}

export class ScheduleRequestError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

/** Validates a schedule (the API's body, the CLI's flags, the tool's arguments) and writes it with its first tick; throws ScheduleRequestError. */
export async function createSchedule(
  repo: Pick<ScheduleRepository, 'create'>,
  req: ScheduleRequest,
  by: string,
  opts: { defaultTz: string; now?: Date },
): Promise<ScheduleRecord> {
  const now = opts.now ?? new Date();
  const tz = req.tz === undefined ? opts.defaultTz : req.tz;
  if (typeof tz !== 'string' || !validTimeZone(tz)) throw new ScheduleRequestError('tz', '"tz" must be an IANA time zone (e.g. Europe/Amsterdam).');
  if (typeof req.prompt !== 'string' || !req.prompt.trim() || req.prompt.length > 4000)
    throw new ScheduleRequestError('prompt', '"prompt" must be the text of what to do at each run (at most 4000 characters).');
  if (req.runsPerDay !== undefined && (!Number.isInteger(req.runsPerDay) || (req.runsPerDay as number) < 1))
    throw new ScheduleRequestError('runsPerDay', '"runsPerDay" must be a positive integer.');
  const runsPerDay = req.runsPerDay as number | undefined;
  if (req.tokensPerDay !== undefined && (!Number.isInteger(req.tokensPerDay) || (req.tokensPerDay as number) < 1))
    throw new ScheduleRequestError('tokensPerDay', '"tokensPerDay" must be a positive integer.');
  if (req.check !== undefined && (typeof req.check !== 'string' || !req.check.trim() || req.check.length > 1000))
    throw new ScheduleRequestError('check', '"check" must be a yes/no question of at most 1000 characters.');
  const limits = { runsPerDay, tokensPerDay: req.tokensPerDay as number | undefined, check: req.check as string | undefined };
  if ((req.cron === undefined) === (req.at === undefined)) throw new ScheduleRequestError('cron', 'Give exactly one of "cron" (repeating) and "at" (one-off).');
  if (req.cron !== undefined) {
    if (typeof req.cron !== 'string') throw new ScheduleRequestError('cron', '"cron" must be a cron expression.');
    try {
      checkCron(req.cron, tz);
    } catch (e) {
      throw new ScheduleRequestError('cron', `"cron" is not a cron expression: ${(e as Error).message}`);
    }
    const nextAt = nextTick(req.cron, tz, now);
    if (!nextAt) throw new ScheduleRequestError('cron', '"cron" never fires.');
    return repo.create({ conversationId: req.conversationId, kind: 'cron', cron: req.cron, tz, prompt: req.prompt, ...limits, nextAt, createdBy: by });
  }
  const at = typeof req.at === 'string' ? new Date(req.at) : undefined;
  if (!at || Number.isNaN(at.getTime()) || !/\d{4}-\d\d-\d\dT/.test(req.at as string))
    throw new ScheduleRequestError('at', '"at" must be an ISO 8601 time (2026-12-04T09:00:00+01:00).');
  if (at.getTime() < now.getTime() - 60_000) throw new ScheduleRequestError('at', '"at" is in the past.');
  return repo.create({ conversationId: req.conversationId, kind: 'once', at, tz, prompt: req.prompt, ...limits, nextAt: at, createdBy: by });
}
