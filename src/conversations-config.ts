import { z } from 'zod';
import { QUEUE_MODES } from '../kernel/queue-modes.js';
import { recordKey } from './config-record-key.js';

/** The conversations' slice of the configuration: `conversations.*` (what happens to messages that arrive while a turn runs). */
const queueMode = z.enum(QUEUE_MODES);

export const conversationsSchema = z
  .object({
    /** What happens to messages that arrive while a turn runs: steer | followup | collect | interrupt. */
    queueMode: queueMode.default('followup'),
    /** Per-channel defaults (a conversation can change its own with /mode). */
    queueModeByChannel: z.record(recordKey, queueMode).default({}),
    /** collect: start once no message arrived for this long. */
    collectQuietMs: z.number().int().nonnegative().default(1_500),
    /** Most messages waiting in one conversation; beyond it the new one is dropped and the sender told. */
    maxWaiting: z.number().int().positive().default(20),
  })
  .strict()
  .prefault({});

export type ConversationsConfig = z.infer<typeof conversationsSchema>;
