import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '../../kernel/envelope.js';
import { formatIdentity, identityOf } from '../../kernel/identity.js';
import type { AcceptMeta } from './ports/inbox.js';

/** $1–$16 of the accept statement. */
export function acceptParams(msg: InboundMessage, agent: string, meta: AcceptMeta): unknown[] {
  return [
    'c_' + randomUUID(),
    msg.conversationKey,
    msg.channel,
    msg.owner ?? null,
    agent,
    msg.externalId,
    JSON.stringify(msg.sender),
    msg.text,
    JSON.stringify(msg.attachments),
    msg.replyTo ? JSON.stringify(msg.replyTo) : null,
    msg.context ? JSON.stringify(msg.context) : null,
    msg.receivedAt,
    formatIdentity(identityOf(msg)),
    msg.overrides && Object.keys(msg.overrides).length ? JSON.stringify(msg.overrides) : null,
    msg.requestHash ?? null,
    meta.traceparent ?? null,
  ];
}
