import { randomUUID } from 'node:crypto';
import type { AcceptResult, InboxMessage, InboxRepository } from '../../../adapters/store/ports/inbox.js';
import type { InboundMessage } from '../../../kernel/envelope.js';
import { formatIdentity, identityOf } from '../../../kernel/identity.js';
import { byId, type InboxRecord, inboxMessage, json, type Tables } from './tables.js';

export class MemoryInbox implements InboxRepository {
  constructor(private readonly t: Tables) {}

  async accept(msg: InboundMessage, agent = 'default'): Promise<AcceptResult> {
    const now = this.t.now();
    let conv = this.t.conversationByKey(msg.conversationKey);
    if (conv) conv.updatedAt = now;
    else {
      conv = {
        id: 'c_' + randomUUID(),
        key: msg.conversationKey,
        channel: msg.channel,
        owner: msg.owner ?? null,
        agent,
        queueMode: null,
        createdAt: now,
        updatedAt: now,
        summary: null,
        summaryUpto: 0,
        leaseToken: null,
        leaseUntil: null,
      };
      this.t.conversations.set(conv.id, conv);
    }
    const existing = this.t.inbox.find((r) => r.channel === msg.channel && r.externalId === msg.externalId);
    if (existing) return (await this.inboxByExternalId(msg.channel, msg.externalId))!;
    const row: InboxRecord = {
      id: this.t.nextId(),
      conversationId: conv.id,
      channel: msg.channel,
      externalId: msg.externalId,
      sender: json(msg.sender),
      senderIdentity: formatIdentity(identityOf(msg)),
      text: msg.text,
      attachments: json(msg.attachments),
      replyTo: msg.replyTo ? json(msg.replyTo) : null,
      context: msg.context ? json(msg.context) : null,
      overrides: msg.overrides && Object.keys(msg.overrides).length ? json(msg.overrides) : null,
      requestHash: msg.requestHash ?? null,
      receivedAt: new Date(msg.receivedAt),
      createdAt: now,
      turnId: null,
      consumedAt: null,
    };
    this.t.inbox.push(row);
    return { conversationId: conv.id, inboxId: row.id, duplicate: false };
  }

  async inboxByExternalId(channel: string, externalId: string): Promise<AcceptResult | undefined> {
    const e = this.t.inbox.find((r) => r.channel === channel && r.externalId === externalId);
    return e ? { conversationId: e.conversationId, inboxId: e.id, duplicate: true, ...(e.requestHash ? { requestHash: e.requestHash } : {}) } : undefined;
  }

  async pending(conversationId: string): Promise<InboxMessage[]> {
    return this.t.inbox
      .filter((r) => r.conversationId === conversationId && !r.consumedAt)
      .sort(byId)
      .map(inboxMessage);
  }

  async inboxRow(id: number): Promise<InboxMessage | undefined> {
    const r = this.t.inbox.find((x) => x.id === id);
    return r && inboxMessage(r);
  }

  async claimInto(turnId: string, conversationId: string): Promise<InboxMessage[]> {
    const rows = this.t.inbox.filter((r) => r.conversationId === conversationId && r.turnId === null && !r.consumedAt);
    for (const r of rows) r.turnId = turnId;
    return rows.sort(byId).map(inboxMessage);
  }

  async stuckConversations(olderThanMs: number): Promise<string[]> {
    const before = Date.now() - olderThanMs;
    return [...new Set(this.t.inbox.filter((r) => !r.consumedAt && r.createdAt.getTime() < before).map((r) => r.conversationId))];
  }
}
