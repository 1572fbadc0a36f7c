import { randomUUID } from 'node:crypto';
import type { AcceptResult, InboxRepository, InboxRow } from '../../../adapters/store/ports/inbox.js';
import type { InboundMessage } from '../../../kernel/envelope.js';
import { formatIdentity, identityOf } from '../../../kernel/identity.js';
import { byId, copy, type InboxRecord, json, type Tables } from './tables.js';

/** The row as `select *` returns it: a copy. */
export function inboxRow(r: InboxRecord): InboxRow {
  return copy(r);
}

export class MemoryInbox implements InboxRepository {
  constructor(private readonly t: Tables) {}

  async accept(msg: InboundMessage, agent = 'default'): Promise<AcceptResult> {
    const now = this.t.now();
    let conv = this.t.conversationByKey(msg.conversationKey);
    if (conv) conv.updated_at = now;
    else {
      conv = {
        id: 'c_' + randomUUID(),
        key: msg.conversationKey,
        channel: msg.channel,
        owner: msg.owner ?? null,
        agent,
        queue_mode: null,
        created_at: now,
        updated_at: now,
        summary: null,
        summary_upto: 0,
        lease_token: null,
        lease_until: null,
      };
      this.t.conversations.set(conv.id, conv);
    }
    const existing = this.t.inbox.find((r) => r.channel === msg.channel && r.external_id === msg.externalId);
    if (existing) return (await this.inboxByExternalId(msg.channel, msg.externalId))!;
    const row: InboxRecord = {
      id: this.t.nextId(),
      conversation_id: conv.id,
      channel: msg.channel,
      external_id: msg.externalId,
      sender: json(msg.sender),
      sender_identity: formatIdentity(identityOf(msg)),
      text: msg.text,
      attachments: json(msg.attachments),
      reply_to: msg.replyTo ? json(msg.replyTo) : null,
      context: msg.context ? json(msg.context) : null,
      overrides: msg.overrides && Object.keys(msg.overrides).length ? json(msg.overrides) : null,
      request_hash: msg.requestHash ?? null,
      received_at: new Date(msg.receivedAt),
      created_at: now,
      turn_id: null,
      consumed_at: null,
    };
    this.t.inbox.push(row);
    return { conversationId: conv.id, inboxId: row.id, duplicate: false };
  }

  async inboxByExternalId(channel: string, externalId: string): Promise<AcceptResult | undefined> {
    const e = this.t.inbox.find((r) => r.channel === channel && r.external_id === externalId);
    return e ? { conversationId: e.conversation_id, inboxId: e.id, duplicate: true, ...(e.request_hash ? { requestHash: e.request_hash } : {}) } : undefined;
  }

  async pending(conversationId: string): Promise<InboxRow[]> {
    return this.t.inbox
      .filter((r) => r.conversation_id === conversationId && !r.consumed_at)
      .sort(byId)
      .map(inboxRow);
  }

  async inboxRow(id: number): Promise<InboxRow | undefined> {
    const r = this.t.inbox.find((x) => x.id === id);
    return r && inboxRow(r);
  }

  async claimInto(turnId: string, conversationId: string): Promise<InboxRow[]> {
    const rows = this.t.inbox.filter((r) => r.conversation_id === conversationId && r.turn_id === null && !r.consumed_at);
    for (const r of rows) r.turn_id = turnId;
    return rows.sort(byId).map(inboxRow);
  }

  async stuckConversations(olderThanMs: number): Promise<string[]> {
    const before = Date.now() - olderThanMs;
    return [...new Set(this.t.inbox.filter((r) => !r.consumed_at && r.created_at.getTime() < before).map((r) => r.conversation_id))];
  }
}
