import { z } from 'zod';
import { SLOT_ID, SLOT_ID_MESSAGE } from '../kernel/config-slice.js';
import { MESSAGE_SECRET_POLICIES } from './secret-policies.js';

/** The moat's slice of the configuration: `moat.*`. */
export const moatSchema = z
  .object({
    /** What to do with secrets in a user's message: redact them before the model sees them, or block the message. */
    secrets: z.enum(MESSAGE_SECRET_POLICIES).default('redact'),
    honesty: z
      .object({
        /** Id of a (cheap) provider slot asked about claims the honesty rules cannot decide; it can only add a correction. Unset: rules only. */
        judgeSlot: z.string().regex(SLOT_ID, SLOT_ID_MESSAGE).optional(),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

export type MoatConfig = z.infer<typeof moatSchema>;
