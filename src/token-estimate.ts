import type { Context, Message } from '@mariozechner/pi-ai';

/**
 * The one token estimate of the gateway (compaction, the summarizer's chunks,
 * fitting a request into a slot's window): ~4 characters a token, plus a
 * little per message. Rough on purpose; callers leave a margin.
 */
export function estimateTokens(messages: readonly Message[], system = ''): number {
  let chars = system.length;
  for (const m of messages) chars += messageChars(m) + 16;
  return Math.ceil(chars / 4);
}

/** The estimate of a whole request: system prompt, messages and tool definitions. */
export function requestTokens(context: Context): number {
  return estimateTokens(context.messages, context.systemPrompt ?? '') + toolTokens(context.tools);
}

/** Characters of each tool definition, kept per definition object: a request is fitted before every attempt, and the schemas do not change. */
const toolChars = new WeakMap<object, number>();

/** Tool definitions as they are sent: name, description and JSON schema. */
export function toolTokens(tools: Context['tools']): number {
  if (!tools?.length) return 0;
  let chars = 0;
  for (const t of tools) {
    let n = toolChars.get(t);
    if (n === undefined) toolChars.set(t, (n = t.name.length + (t.description?.length ?? 0) + JSON.stringify(t.parameters ?? {}).length + 32));
    chars += n;
  }
  return Math.ceil(chars / 4);
}

export function messageChars(m: Message): number {
  if (typeof m.content === 'string') return m.content.length;
  let n = 0;
  for (const p of m.content as Array<{ type: string; text?: string; thinking?: string; arguments?: unknown; data?: string }>) {
    if (p.type === 'text') n += p.text?.length ?? 0;
    else if (p.type === 'thinking') n += p.thinking?.length ?? 0;
    else if (p.type === 'toolCall') n += JSON.stringify(p.arguments ?? {}).length + 32;
    else n += 1000; // images and others
  }
  return n;
}
