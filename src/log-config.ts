import { z } from 'zod';
import type { EnvBinding } from '../kernel/config-slice.js';
import { LOG_FORMATS, LOG_LEVELS } from './log-levels.js';

/** The log's slice of the configuration: `log.*`. */
export const logSchema = z
  .object({
    level: z.enum(LOG_LEVELS).default('info'),
    /** auto: one readable line per record when stdout is a terminal, JSON otherwise. */
    format: z.enum(LOG_FORMATS).default('auto'),
  })
  .strict()
  .prefault({});

export const LOG_ENV: EnvBinding[] = [
  { env: 'SWITCHBOARD_LOG_LEVEL', path: ['level'], kind: 'string' },
  { env: 'SWITCHBOARD_LOG_FORMAT', path: ['format'], kind: 'string' },
];

export type LogConfig = z.infer<typeof logSchema>;
