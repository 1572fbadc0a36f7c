import type { AcceptResult } from '../../adapters/store/ports/index.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import type { RefusedOutcome } from './outcome.js';

/**
 * A message whose external id is already in the inbox but which asks something else (its
 * requestHash differs from the first's): refused, never answered from the first message's turn.
 * A message or a row without a hash (other channels, rows from before migration 015) matches.
 */
export function requestMismatch(msg: InboundMessage, first: AcceptResult): RefusedOutcome | null {
  if (!msg.requestHash || !first.requestHash || msg.requestHash === first.requestHash) return null;
  return { kind: 'refused', code: 'request_mismatch', reply: 'This id was already used for a different request.' };
}
