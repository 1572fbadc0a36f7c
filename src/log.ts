import { type DestinationStream, type Logger, pino } from 'pino';
import { prettyLine } from './log-pretty.js';

/** pino's levels, and silent (log.level, SWITCHBOARD_LOG_LEVEL). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** log.format, SWITCHBOARD_LOG_FORMAT: auto is pretty when stdout is a terminal, JSON otherwise. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LoggerOptions {
  format?: LogFormat;
  name?: string;
  /** Where the lines go (stdout by default). */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
}

/** Logs on stdout, one record a line: JSON, or one readable line each on a terminal; secrets in known fields are redacted. */
export function createLogger(level: string, opts: LoggerOptions = {}): Logger {
  const out = opts.stream ?? process.stdout;
  const pretty = opts.format === 'pretty' || ((opts.format ?? 'auto') === 'auto' && out.isTTY === true);
  const options = {
    name: opts.name ?? 'switchboard',
    level,
    redact: {
      paths: ['apiKey', '*.apiKey', 'authorization', '*.authorization', 'headers.authorization', 'token', '*.token', 'password', '*.password'],
      censor: '[redacted]',
    },
  };
  if (pretty) {
    const color = out.isTTY === true && !process.env.NO_COLOR;
    const dest: DestinationStream = { write: (line: string) => void out.write(prettyLine(line, { color })) };
    return pino(options, dest);
  }
  // JSON to stdout (pino's own fast destination) unless a stream is given.
  return opts.stream ? pino(options, opts.stream as DestinationStream) : pino(options);
}
