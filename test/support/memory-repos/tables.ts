import type { AccessRow } from '../../../adapters/store/ports/access.js';
import type { ApprovalRow, RuleRow } from '../../../adapters/store/ports/approvals.js';
import type { ConversationRow } from '../../../adapters/store/ports/conversations.js';
import type { DeadDeliveryRow, DeliveryRow } from '../../../adapters/store/ports/deliveries.js';
import type { InboxRow } from '../../../adapters/store/ports/inbox.js';
import type { StoredMessage } from '../../../adapters/store/ports/transcript.js';
import type { TurnRow } from '../../../adapters/store/ports/turns.js';
import type { DeadLetterRow, SubscriberRow } from '../../../adapters/store/ports/webhooks.js';

/** The columns the SQL tables have beyond the row types the ports return. */
export type ConversationRecord = ConversationRow & {
  queue_mode: string | null;
  updated_at: Date;
  summary: string | null;
  summary_upto: number;
  lease_token: string | null;
  lease_until: Date | null;
};
export type InboxRecord = InboxRow & { created_at: Date };
export interface MessageRecord {
  id: number;
  conversation_id: string;
  turn_id: string | null;
  role: string;
  content: StoredMessage;
  created_at: Date;
}
export interface MemoryRecord {
  id: number;
  scope: string;
  scope_key: string;
  body: string;
  created_at: Date;
}
export type AccessRecord = AccessRow & { updated_at: Date };
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
  conversations = new Map<string, ConversationRecord>();
  inbox: InboxRecord[] = [];
  turns = new Map<string, TurnRow>();
  messages: MessageRecord[] = [];
  memory: MemoryRecord[] = [];
  toolResults = new Map<string, { id: string; turn_id: string; tool: string; content: string }>();
  approvals: ApprovalRow[] = [];
  rules: RuleRow[] = [];
  audit: AuditRecord[] = [];
  deliveries: DeliveryRow[] = [];
  deadDeliveries: DeadDeliveryRow[] = [];
  channelState = new Map<string, unknown>();
  access: AccessRecord[] = [];
  subscribers: Array<SubscriberRow & { created_at: Date }> = [];
  deadLetters: DeadLetterRow[] = [];
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

  conversationByKey(key: string): ConversationRecord | undefined {
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
