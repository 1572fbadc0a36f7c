import { ReplyToError } from '../../src/channel/index.js';

/**
 * The HTTP API answers in the request itself (the client follows the turn), so its messages
 * carry no reply target: anything stored is not ours.
 */
export function parseHttpReplyTo(raw: unknown): null {
  if (raw === null || raw === undefined) return null;
  throw new ReplyToError('http', 'the HTTP API stores no reply target');
}
