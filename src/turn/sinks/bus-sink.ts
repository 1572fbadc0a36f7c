import type { EventPublisher } from '../../event-publisher.js';
import type { TurnSink } from '../ports.js';

/**
 * The bus sink: every event goes to the conversation's topic (the HTTP channel and
 * followers read it there). Publishing is batched by the EventPublisher; the worker
 * drains it once the turn returns, so the bus never holds the turn's close up.
 */
export function busSink(publisher: EventPublisher): TurnSink {
  return { push: (e) => publisher.push(e) };
}
