import { type Logger, pino } from 'pino';

/** pino's levels, and silent (log.level, SWITCHBOARD_LOG_LEVEL). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** JSON logs on stdout; secrets in known fields are redacted. */
export function createLogger(level: string, name = 'switchboard'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['apiKey', '*.apiKey', 'authorization', '*.authorization', 'headers.authorization', 'token', '*.token', 'password', '*.password'],
      censor: '[redacted]',
    },
  });
}
