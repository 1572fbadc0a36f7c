import { z } from 'zod';
import type { EnvBinding } from '../kernel/config-slice.js';
import { LOG_LEVELS } from './log.js';

/** The log's slice of the configuration: `log.*`. */
export const logSchema = z
  .object({ level: z.enum(LOG_LEVELS).default('info') })
  .strict()
  .prefault({});

export const LOG_ENV: EnvBinding[] = [{ env: 'SWITCHBOARD_LOG_LEVEL', path: ['level'], kind: 'string' }];

export type LogConfig = z.infer<typeof logSchema>;
