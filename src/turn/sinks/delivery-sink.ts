import type { Logger } from 'pino';
import { SwitchboardError } from '../../../kernel/errors.js';
import type { TurnEvent } from '../../../kernel/turn-events.js';
import type { TurnDelivery } from '../../channel/index.js';
import { deliveryOutcome } from '../../telemetry/tracer.js';
import type { TurnSink } from '../ports.js';

/** A delivery that failed once the turn's text was final: what it was to show, and why it failed. */
export interface FailedDelivery {
  error: unknown;
  /** The turn's events as the channel saw them (text deltas merged, tool arguments dropped): what a replay feeds a new delivery. */
  events: TurnEvent[];
}

export interface DeliverySinkOptions {
  /**
   * Takes over a delivery whose close() failed (a delivery job replays it): the flush then resolves and the
   * turn is closed as usual. Called once the turn's `done` is seen, so only for a turn this attempt closed or parked.
   */
  handOver?: (failure: FailedDelivery) => void;
  log?: Logger;
}

/**
 * The channel-delivery sink: the channel's deliverer sees every event; flush delivers what it buffered.
 * With handOver, a failing flush no longer fails the turn (which would ask the model again): the
 * recorded events go to the delivery queue. Without it, a retryable failure fails the flush (the turn
 * is retried) and a refusal is logged.
 */
export function deliverySink(delivery: TurnDelivery, opts: DeliverySinkOptions = {}): TurnSink {
  const events: TurnEvent[] = [];
  let failed: { error: unknown } | undefined;
  const record = (e: TurnEvent) => {
    const last = events[events.length - 1];
    if (e.type === 'text_delta' && last?.type === 'text_delta') events[events.length - 1] = { ...last, delta: last.delta + e.delta };
    else events.push(e.type === 'tool_start' ? { ...e, args: {} } : e);
  };
  return {
    push: (e) => {
      if (opts.handOver) record(e);
      if (e.type === 'done' && failed && opts.handOver) {
        const error = failed.error;
        failed = undefined;
        opts.handOver({ error, events: events.splice(0) });
        return;
      }
      delivery.event(e);
    },
    flush: async () => {
      // Within the turn's `deliver <channel>` span (src/turn/sinks/trace-sink.ts): it says how the delivery ended.
      try {
        await delivery.close();
        deliveryOutcome('delivered');
      } catch (err) {
        if (opts.handOver) {
          failed = { error: err };
          deliveryOutcome('handed_over', err);
        } else if (err instanceof SwitchboardError && !err.retryable) {
          opts.log?.error({ err }, 'the channel refused the reply; it is not retried');
          deliveryOutcome('refused', err);
        } else throw err;
      }
    },
  };
}
