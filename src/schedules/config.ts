import { z } from 'zod';

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/);

/** The schedules' slice of the configuration: `schedules.*` (see src/schedules/scheduler.ts). */
export const schedulesSchema = z
  .object({
    /** Whether this process's worker fires schedules (any number of workers may: each tick runs once). */
    enabled: z.boolean().default(true),
    /** How often the worker looks for due ticks. */
    pollMs: z.number().int().positive().default(15_000),
    /** Ticks missed while no worker ran: `coalesce` runs one for all of them, `skip` records them as skipped. */
    catchUp: z.enum(['coalesce', 'skip']).default('coalesce'),
    /** A tick later than this is "missed" (what catchUp decides about). */
    graceMs: z.number().int().positive().default(120_000),
    /** Quiet hours in the recipient's time zone: a run inside them is deferred to their end. */
    quietHours: z.object({ start: hhmm, end: hhmm }).strict().optional(),
    /** Runs per recipient (conversation) per local day, over all its schedules; a schedule's own runsPerDay applies too. */
    perRecipientPerDay: z.number().int().positive().optional(),
    /** Tokens per recipient (conversation) per local day over all its scheduled runs; a schedule's own tokensPerDay applies too. */
    perRecipientTokensPerDay: z.number().int().positive().optional(),
    /** The provider slot (a cheap model) that answers a schedule's `check` question before its run; unset: checks are skipped and every run goes ahead. */
    checkSlot: z.string().trim().min(1).max(64).optional(),
    /** Time zone of a schedule created without one. */
    defaultTz: z.string().default('UTC'),
  })
  .strict()
  .prefault({});

export type SchedulesConfig = z.infer<typeof schedulesSchema>;
