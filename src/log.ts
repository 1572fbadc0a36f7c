import { type DestinationStream, type Logger, pino } from 'pino';
import type { LogFormat } from './log-levels.js';
import { prettyLine } from './log-pretty.js';

export { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './log-levels.js';

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
