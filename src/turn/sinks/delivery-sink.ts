import type { TurnDelivery } from '../../channel/index.js';
import type { TurnSink } from '../ports.js';

/** The channel-delivery sink: the channel's deliverer sees every event; flush delivers what it buffered. */
export function deliverySink(delivery: TurnDelivery): TurnSink {
  return { push: (e) => delivery.event(e), flush: () => delivery.close() };
}
