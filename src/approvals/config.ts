import { z } from 'zod';
import { AUTONOMY_LEVELS, SELF_APPROVABLE_TIERS } from '../../moat/approval-names.js';
import { recordKey } from '../config-record-key.js';

/** The approvals' slice of the configuration: `approvals.*` (see src/approvals/service.ts). */
export const approvalsSchema = z
  .object({
    /** How long an approval request waits before it expires (fail-closed: not run). */
    timeoutMs: z
      .number()
      .int()
      .positive()
      .default(15 * 60_000),
    /** strict | supervised | trusted: what runs without asking (see the README). */
    autonomy: z.enum(AUTONOMY_LEVELS).default('supervised'),
    /** Tiers at which the person who asked may approve their own request (never dangerous). */
    requesterMay: z.array(z.enum(SELF_APPROVABLE_TIERS)).default([]),
    /** Operator identities per channel (user ids, phone numbers, email addresses). */
    operators: z.record(recordKey, z.array(z.string())).default({}),
    /** Where requests are also posted for operators: a channel and its place (Slack/Discord channel id). */
    operatorChannel: z.object({ channel: z.string(), target: z.string() }).strict().optional(),
  })
  .strict()
  .prefault({});

export type ApprovalsConfig = z.infer<typeof approvalsSchema>;
