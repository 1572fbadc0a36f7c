import { type Logger as BoltLogger, LogLevel } from '@slack/bolt';
import type { Logger } from 'pino';

/**
 * Bolt's and the Slack SDK's logging, into the gateway's pino logger. The SDK's
 * debug output (whole payloads) goes to trace, its chatty info to debug.
 */
export function boltLogger(log: Logger): BoltLogger {
  const text = (msg: unknown[]) => msg.map((m) => (m instanceof Error ? m.message : typeof m === 'string' ? m : safeJson(m))).join(' ');
  let name = 'slack';
  return {
    debug: (...msg: unknown[]) => log.trace({ sdk: name }, text(msg)),
    info: (...msg: unknown[]) => log.debug({ sdk: name }, text(msg)),
    warn: (...msg: unknown[]) => log.warn({ sdk: name }, text(msg)),
    error: (...msg: unknown[]) => log.error({ sdk: name }, text(msg)),
    setLevel: () => {},
    getLevel: () => (log.isLevelEnabled('trace') ? LogLevel.DEBUG : log.isLevelEnabled('debug') ? LogLevel.INFO : LogLevel.WARN),
    setName: (n: string) => {
      name = n;
    },
  };
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
