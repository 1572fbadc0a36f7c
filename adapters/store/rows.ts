import type { ConversationRecord } from './ports/conversations.js';
import { type InboxMessage, senderIdentity } from './ports/inbox.js';
import type { TurnRecord } from './ports/turns.js';

export { senderIdentity };

import type { StoredMessage } from './ports/transcript.js';

export function assistantText(m: StoredMessage): string {
  const content = (m as { content?: unknown }).content as Array<{ type: string; text?: string }> | string | undefined;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('');
}

/**
 * The columns of a conversations row, as pg returns them or as they come back
 * inside row_to_json (dates as strings). The lease and summary columns stay in the store.
 */
export interface ConversationColumns {
  id: string;
  key: string;
  channel: string;
  owner: string | null;
  agent: string;
  queue_mode?: string | null;
  created_at: string | Date;
}

/** A conversations row (or its row_to_json) as a record. Both repositories that read conversations map here. */
export function conversationFromRow(c: ConversationColumns): ConversationRecord {
  return {
    id: c.id,
    key: c.key,
    channel: c.channel,
    owner: c.owner,
    agent: c.agent,
    queueMode: c.queue_mode ?? null,
    createdAt: new Date(c.created_at),
  };
}

/** The columns of an inbox row, as pg returns them or inside a json_agg (ids as numbers or strings, dates as strings). */
export interface InboxColumns {
  id: number | string;
  conversation_id: string;
  channel: string;
  external_id: string;
  sender: InboxMessage['sender'];
  sender_identity: string | null;
  text: string;
  attachments: unknown[];
  reply_to: Record<string, unknown> | null;
  context: InboxMessage['context'];
  received_at: string | Date;
  turn_id: string | null;
  consumed_at: string | Date | null;
  /** Migration 015. */
  overrides?: InboxMessage['overrides'];
  request_hash?: string | null;
  /** Migration 027. */
  traceparent?: string | null;
}

/** An inbox row (or its json_agg element) as a message, with the types pg would give. Both repositories that read the inbox map here. */
export function inboxFromRow(p: InboxColumns): InboxMessage {
  return {
    id: Number(p.id),
    conversationId: p.conversation_id,
    channel: p.channel,
    externalId: p.external_id,
    sender: p.sender,
    senderIdentity: p.sender_identity,
    text: p.text,
    attachments: p.attachments,
    replyTo: p.reply_to,
    context: p.context,
    receivedAt: new Date(p.received_at),
    turnId: p.turn_id,
    consumedAt: p.consumed_at ? new Date(p.consumed_at) : null,
    ...(p.overrides ? { overrides: p.overrides } : {}),
    ...(p.request_hash ? { requestHash: p.request_hash } : {}),
    ...(p.traceparent ? { traceparent: p.traceparent } : {}),
  };
}

/** The columns of a turns row, as pg returns them or inside row_to_json (dates as strings). */
export interface TurnColumns {
  id: string;
  conversation_id: string;
  seq: number;
  status: TurnRecord['status'];
  state: unknown;
  honesty: unknown;
  attempt: number;
  worker: string | null;
  started_at: string | Date;
  finished_at: string | Date | null;
  finish_reason: string | null;
  error: string | null;
  usage: Record<string, unknown> | null;
  provider: Record<string, unknown> | null;
}

/** A turns row (or its row_to_json) as a record; the state is the JSON the core parked, as stored. */
export function turnFromRow(t: TurnColumns): TurnRecord {
  return {
    id: t.id,
    conversationId: t.conversation_id,
    seq: t.seq,
    status: t.status,
    state: t.state,
    honesty: t.honesty,
    attempt: t.attempt,
    worker: t.worker,
    startedAt: new Date(t.started_at),
    finishedAt: t.finished_at ? new Date(t.finished_at) : null,
    finishReason: t.finish_reason,
    error: t.error,
    usage: t.usage,
    provider: t.provider,
  };
}
