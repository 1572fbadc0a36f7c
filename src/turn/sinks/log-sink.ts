import type { Logger } from 'pino';
import type { TurnSink } from '../ports.js';

/**
 * The log sink: one info line per turn when it ends (`done`), with the channel, the provider
 * slot that answered, the tokens, the milliseconds since the turn started and the finish reason.
 * The conversation, turn and attempt come from the turn's child logger.
 */
export function logSink(log: Logger, channel: string): TurnSink {
  let started: number | undefined;
  return {
    push: (e) => {
      if (e.type === 'turn_start') started ??= performance.now();
      else if (e.type === 'done') {
        const ms = started === undefined ? undefined : Math.round(performance.now() - started);
        log.info(
          {
            channel,
            slot: e.provider?.slot ?? null,
            ...(e.provider?.fallbackActivated ? { fallback: true } : {}),
            tokens: { input: e.usage.input, output: e.usage.output, total: e.usage.totalTokens },
            ms,
            finishReason: e.finishReason,
          },
          'turn finished',
        );
      }
    },
  };
}
