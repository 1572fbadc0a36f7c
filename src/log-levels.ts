/*
 * The log's level and format names, apart from the logger: the config schema needs them, and a CLI
 * verb that only reads the configuration (doctor) should not load pino for them.
 */

/** pino's levels, and silent (log.level, SWITCHBOARD_LOG_LEVEL). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** log.format, SWITCHBOARD_LOG_FORMAT: auto is pretty when stdout is a terminal, JSON otherwise. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
