import type { Logger } from 'pino';
import type { LeaseGuard } from '../lease-guard.js';
import type { TurnSink } from '../ports.js';

/**
 * The lease gate in front of the turn's sink: every event (and the flush that
 * delivers what a channel buffered) asks the drain's lease first. Once the lease
 * is lost (another drain may be running this turn's next attempt), events are
 * dropped here, never published, so two attempts never stream side by side.
 */
export function leaseGate(sink: TurnSink, guard: LeaseGuard, log: Logger): TurnSink {
  let dropped = 0;
  const open = () => {
    if (guard.check()) return true;
    if (dropped++ === 0) log.warn({ err: guard.signal.reason }, 'the conversation lease is lost: this attempt publishes no more events');
    return false;
  };
  return {
    push: (e) => {
      if (open()) sink.push(e);
    },
    attempt: (a) => sink.attempt?.(a),
    flush: async () => {
      if (open()) await sink.flush?.();
    },
  };
}
