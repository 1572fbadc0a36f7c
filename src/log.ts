import { pino, type Logger } from 'pino';

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
