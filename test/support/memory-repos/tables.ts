import type { AccessEntry } from '../../../adapters/store/ports/access.js';
import type { AllowRuleRecord, ApprovalRecord } from '../../../adapters/store/ports/approvals.js';
import type { ConversationRecord } from '../../../adapters/store/ports/conversations.js';
import type { DeadDeliveryRecord, DeliveryRecord } from '../../../adapters/store/ports/deliveries.js';
import type { InboxMessage } from '../../../adapters/store/ports/inbox.js';
import type { StoredMessage } from '../../../adapters/store/ports/transcript.js';
import type { TurnRecord } from '../../../adapters/store/ports/turns.js';
import type { WebhookDeadLetter, WebhookSubscriber } from '../../../adapters/store/ports/webhooks.js';

/** The columns the SQL tables have beyond the records the ports return. */
export type ConversationTableRow = ConversationRecord & {
  queueMode: string | null;
  updatedAt: Date;
  summary: string | null;
  summaryUpto: number;
  leaseToken: string | null;
  leaseUntil: Date | null;
};
export type InboxRecord = InboxMessage & { createdAt: Date };

/** A conversation as the repositories return it: without the lease and summary columns. */
export function conversationRecord(c: ConversationTableRow): ConversationRecord {
  return { id: c.id, key: c.key, channel: c.channel, owner: c.owner, agent: c.agent, queueMode: c.queueMode, createdAt: new Date(c.createdAt) };
}

/** An inbox message as the repositories return it: a copy, without the table's own columns. */
export function inboxMessage(r: InboxRecord): InboxMessage {
  const { createdAt: _c, ...message } = copy(r);
  return message;
}
export interface MessageRecord {
  id: number;
  conversationId: string;
  turnId: string | null;
  role: string;
  content: StoredMessage;
  createdAt: Date;
}
export interface MemoryRecord {
  id: number;
  scope: string;
  scopeKey: string;
  body: string;
  createdAt: Date;
}
export interface JournalRecord {
  turnId: string;
  kind: 'model' | 'tool';
  key: string;
  status: string;
  entry: Record<string, unknown>;
}
export type AccessRecord = AccessEntry & { updatedAt: Date };
export interface AuditRecord {
  id: number;
  at: Date;
  actor: string;
  action: string;
  subject: string | null;
  details: unknown;
}

/**
 * The in-memory "database" the fakes share, table by table, as the Postgres
 * repositories share one database (startTurn reads the inbox, the transcript
 * and memory; conversationStats counts approvals).
 */
export class Tables {
  conversations = new Map<string, ConversationTableRow>();
  inbox: InboxRecord[] = [];
  turns = new Map<string, TurnRecord>();
  messages: MessageRecord[] = [];
  memory: MemoryRecord[] = [];
  toolResults = new Map<string, { id: string; turnId: string; tool: string; content: string }>();
  /** The step journal by `turnId kind key`, in the order the steps were first written. */
  journal = new Map<string, JournalRecord>();
  approvals: ApprovalRecord[] = [];
  rules: AllowRuleRecord[] = [];
  audit: AuditRecord[] = [];
  deliveries: DeliveryRecord[] = [];
  deadDeliveries: DeadDeliveryRecord[] = [];
  channelState = new Map<string, unknown>();
  access: AccessRecord[] = [];
  subscribers: Array<WebhookSubscriber & { createdAt: Date }> = [];
  deadLetters: WebhookDeadLetter[] = [];
  private seq = 0;
  private lastNow = 0;

  /** Ids from one sequence: they only grow, as bigserial ids do. */
  nextId(): number {
    return ++this.seq;
  }

  /** Strictly increasing, so "newest first" orders are as deterministic as the database's. */
  now(): Date {
    this.lastNow = Math.max(Date.now(), this.lastNow + 1);
    return new Date(this.lastNow);
  }

  conversationByKey(key: string): ConversationTableRow | undefined {
    for (const c of this.conversations.values()) if (c.key === key) return c;
    return undefined;
  }
}

/** A value as a jsonb column keeps it (a JSON round trip). */
export function json<T>(v: T): T {
  return v === undefined ? (null as T) : (JSON.parse(JSON.stringify(v)) as T);
}

/** A copy of a row, so callers cannot change the table through what they got. */
export function copy<T>(row: T): T {
  return structuredClone(row);
}

export function byId<T extends { id: number }>(a: T, b: T): number {
  return a.id - b.id;
}
