import type { ConversationRow } from './ports/conversations.js';
import { type InboxRow, senderIdentity } from './ports/inbox.js';

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

/** A conversation row that came back as JSON; the lease columns stay in the store. */
export function conversationFromJson(c: ConversationRow & { created_at: string | Date; lease_token?: unknown; lease_until?: unknown }): ConversationRow {
  const { lease_token: _t, lease_until: _u, ...rest } = c;
  return { ...rest, created_at: new Date(c.created_at) };
}

/** An inbox row that came back inside a json_agg: restore the types pg would give. */
export function inboxFromJson(p: InboxRow): InboxRow {
  return { ...p, id: Number(p.id), received_at: new Date(p.received_at), consumed_at: p.consumed_at ? new Date(p.consumed_at) : null };
}
