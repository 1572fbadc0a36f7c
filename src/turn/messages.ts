import type { AssistantMessage, ImageContent, Message, TextContent, UserMessage } from '@mariozechner/pi-ai';
import type { TurnUsage } from '../../kernel/turn-events.js';
import type { ProviderChain } from '../../providers/chain.js';
import { defuseMarkers } from '../handoffs/text.js';
import { markAuthor } from '../provider-request.js';
import type { InboxMessage } from './ports.js';

/** Message helpers of a turn: inbox rows as user messages, a one-off request's context, usage sums. */

type StoredAttachment = { name?: string; contentType?: string; size?: number; data?: string; note?: string };

/**
 * An inbox row as the turn's user message: an image that came with its bytes (the HTTP API's image
 * parts) as image content (pi-ai puts a note in its place for a slot whose model takes no images);
 * any other attachment named in a line of text.
 */
export function toUserMessage(row: InboxMessage): UserMessage {
  // A user's line that starts like the gateway's own ("[Gateway note]", "[Operator … wrote to the user]") is marked as theirs.
  let text = defuseMarkers(row.text);
  const atts = row.attachments as StoredAttachment[];
  const images = atts.filter((a) => a.data && a.contentType?.startsWith('image/'));
  const noted = atts.filter((a) => !images.includes(a) && a.note);
  const named = atts.filter((a) => !images.includes(a) && !a.note);
  for (const a of noted) text += `\n\n[attachment ${a.name ?? 'file'}${a.contentType ? ` (${a.contentType})` : ''}: ${a.note}]`;
  if (named.length) text += `\n\n[attachments: ${named.map((a) => `${a.name ?? 'file'}${a.contentType ? ` (${a.contentType})` : ''}`).join(', ')}]`;
  const timestamp = new Date(row.receivedAt).getTime();
  if (!images.length) return { role: 'user', content: text, timestamp };
  const content: Array<TextContent | ImageContent> = text ? [{ type: 'text', text }] : [];
  for (const a of images) content.push({ type: 'image', data: a.data!, mimeType: a.contentType! });
  return { role: 'user', content, timestamp };
}

/**
 * The turn's user messages as the transcript keeps them: each image by reference (a line naming it),
 * not its bytes, so later turns do not send it again. The bytes stay with the inbox row.
 */
export function storedPrompts(prompts: readonly UserMessage[]): UserMessage[] {
  return prompts.map((m) => {
    if (typeof m.content === 'string' || !m.content.some((p) => p.type === 'image')) return m;
    let n = 0;
    const content = m.content.map((p): TextContent => {
      if (p.type === 'text') return p;
      n++;
      const kb = Math.max(1, Math.round((p.data.length * 3) / 4 / 1024));
      return { type: 'text', text: `[image ${n} (${p.mimeType}, ${kb} KB) was shown with this message]` };
    });
    return { ...m, content };
  });
}

/** A one-off HTTP request's own context: system messages go to the system prompt, the rest become history. */
export function contextToMessages(ctx: NonNullable<InboxMessage['context']>, chain: ProviderChain): { messages: Message[]; system: string[] } {
  const messages: Message[] = [];
  const system: string[] = [];
  const now = Date.now();
  for (const m of ctx) {
    if (m.role === 'system') system.push(m.text);
    else if (m.role === 'user') messages.push({ role: 'user', content: defuseMarkers(m.text), timestamp: now });
    // The request's own assistant messages are the client's words: policy block refuses their secrets too.
    else
      messages.push(
        markAuthor(
          {
            role: 'assistant',
            content: [{ type: 'text', text: m.text }],
            api: chain.primary.api,
            provider: chain.primary.provider,
            model: chain.primary.id,
            usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
            stopReason: 'stop',
            timestamp: now,
          } satisfies AssistantMessage,
          'user',
        ),
      );
  }
  return { messages, system };
}

/** A history window must not start with tool results whose call was cut off. */
export function sanitizeHistory(msgs: Message[]): Message[] {
  let i = 0;
  while (i < msgs.length && msgs[i]!.role === 'toolResult') i++;
  return i ? msgs.slice(i) : msgs;
}

export function messageText(m: Message): string {
  if (typeof m.content === 'string') return m.content;
  return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

/** Adds text to the last assistant message (the honesty corrections are part of the answer). */
export function appendText(messages: Message[], text: string): void {
  const last = [...messages].reverse().find((m): m is AssistantMessage => m.role === 'assistant');
  if (last) last.content = [...last.content, { type: 'text', text }];
}

export function addUsage(a: TurnUsage | undefined, b: TurnUsage): TurnUsage {
  if (!a) return b;
  return { input: a.input + b.input, output: a.output + b.output, totalTokens: a.totalTokens + b.totalTokens, cost: a.cost + b.cost };
}

export function noUsage(): TurnUsage {
  return { input: 0, output: 0, totalTokens: 0, cost: 0 };
}
