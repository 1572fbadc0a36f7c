import type { MessageHit, StoredMessage, TranscriptEntry, TranscriptRepository } from '../../../adapters/store/ports/transcript.js';
import { assistantText } from '../../../adapters/store/rows.js';
import { byId, copy, type Tables } from './tables.js';

export class MemoryTranscript implements TranscriptRepository {
  constructor(private readonly t: Tables) {}

  private of(conversationId: string) {
    return this.t.messages.filter((m) => m.conversationId === conversationId).sort(byId);
  }

  async transcript(conversationId: string, limit = 200): Promise<StoredMessage[]> {
    return (limit > 0 ? this.of(conversationId).slice(-limit) : []).map((m) => copy(m.content));
  }

  async messagesAfter(conversationId: string, afterId: number, limit = 200): Promise<TranscriptEntry[]> {
    return this.of(conversationId)
      .filter((m) => m.id > afterId)
      .slice(0, limit)
      .map((m) => ({ id: m.id, turnId: m.turnId, role: m.role, content: copy(m.content), createdAt: m.createdAt }));
  }

  async turnReply(turnId: string): Promise<string> {
    return this.t.messages
      .filter((m) => m.turnId === turnId && m.role === 'assistant')
      .sort(byId)
      .map((m) => assistantText(m.content))
      .filter(Boolean)
      .join('\n\n');
  }

  /** Postgres's `simple` text search, roughly: every word of the query must be a word of the message's text. */
  async searchMessages(query: string, opts: { sender: string; limit?: number }): Promise<MessageHit[]> {
    const wanted = words(query);
    if (wanted.length === 0) return [];
    const theirs = new Set(this.t.inbox.filter((i) => i.senderIdentity === opts.sender).map((i) => i.conversationId));
    return this.t.messages
      .filter((m) => theirs.has(m.conversationId))
      .filter((m) => {
        const have = new Set(words(searchableText(m.content)));
        return wanted.every((w) => have.has(w));
      })
      .sort((a, b) => b.id - a.id)
      .slice(0, opts.limit ?? 10)
      .map((m) => {
        const content = (m.content as { content?: unknown }).content;
        const text = typeof content === 'string' ? content : JSON.stringify(content ?? m.content);
        return { conversationId: m.conversationId, id: m.id, role: m.role, snippet: text.slice(0, 300), createdAt: m.createdAt };
      });
  }

  async saveSummary(conversationId: string, uptoId: number, summary: string): Promise<boolean> {
    const c = this.t.conversations.get(conversationId);
    if (!c || !(c.summaryUpto < uptoId)) return false;
    c.summary = summary;
    c.summaryUpto = uptoId;
    return true;
  }
}

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}_]+/u)
    .filter(Boolean);
}

/** What the SQL indexes: a string content, or the text parts of a content array. */
function searchableText(m: StoredMessage): string {
  const content = (m as { content?: unknown }).content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c: { text?: unknown }) => (typeof c?.text === 'string' ? c.text : '')).join(' ');
  return '';
}
