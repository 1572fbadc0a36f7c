import { createHash } from 'node:crypto';
import type { ContextMessage, TurnOverrides } from '../../kernel/envelope.js';
import { parseJsonObject, RequestError } from '../../src/channel/index.js';
import { checkRequestFields } from './request-fields.js';

/** A validated chat-completions request. */
export interface ChatRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The request's messages as plain text, oldest first; the last is the user's new message. */
  messages: ContextMessage[];
  user?: string;
  /** `temperature`, `max_tokens` / `max_completion_tokens`: for this request's turn. */
  overrides: TurnOverrides;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

export function parseChatRequest(raw: Buffer, maxMessageChars: number): ChatRequest {
  // Invalid JSON, a body that is not an object, too deep, NUL in strings: a 400 (HttpError); __proto__ keys dropped.
  const b = parseJsonObject(raw, 'a JSON object with "model" and "messages"');
  if (typeof b.model !== 'string' || !b.model) throw new RequestError(400, 'you must provide a model parameter', 'model', 'missing_required_parameter');
  if (!Array.isArray(b.messages))
    throw new RequestError(400, "'messages' is a required property and must be an array", 'messages', 'missing_required_parameter');
  if (b.messages.length === 0) throw new RequestError(400, "'messages' must contain at least one message", 'messages', 'invalid_value');
  if (b.stream !== undefined && typeof b.stream !== 'boolean') throw new RequestError(400, "'stream' must be a boolean", 'stream', 'invalid_type');
  if (b.user !== undefined && typeof b.user !== 'string') throw new RequestError(400, "'user' must be a string", 'user', 'invalid_type');
  // Every other field is honoured, accepted as harmless, or refused by name: none is silently ignored.
  const overrides = checkRequestFields(b);

  const messages: ContextMessage[] = [];
  b.messages.forEach((m: unknown, i: number) => {
    const param = `messages[${i}]`;
    if (!m || typeof m !== 'object') throw new RequestError(400, `${param} must be an object`, param, 'invalid_type');
    const { role, content } = m as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !ROLES.has(role))
      throw new RequestError(400, `${param}.role must be one of system, developer, user, assistant, tool`, `${param}.role`, 'invalid_value');
    const text = contentText(content, `${param}.content`);
    if (text.length > maxMessageChars)
      throw new RequestError(400, `${param}.content is longer than ${maxMessageChars} characters`, `${param}.content`, 'message_too_long');
    if (role === 'system' || role === 'developer') messages.push({ role: 'system', text });
    else if (role === 'user') messages.push({ role: 'user', text });
    else if (role === 'assistant') messages.push({ role: 'assistant', text });
    // Tool results of a client-side tool loop have no place in a gateway conversation: dropped.
  });
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'user') throw new RequestError(400, 'the last message must have role "user"', 'messages', 'invalid_value');
  if (!last.text.trim()) throw new RequestError(400, 'the last user message is empty', 'messages', 'invalid_value');
  const so = b.stream_options as { include_usage?: unknown } | undefined;
  return {
    model: b.model,
    stream: b.stream === true,
    includeUsage: so?.include_usage === true,
    messages,
    ...(typeof b.user === 'string' && b.user ? { user: b.user } : {}),
    overrides,
  };
}

function contentText(content: unknown, param: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p: unknown) => {
        if (p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' && typeof (p as { text?: unknown }).text === 'string')
          return (p as { text: string }).text;
        return '';
      })
      .filter(Boolean)
      .join('\n');
  }
  throw new RequestError(400, `${param} must be a string or an array of content parts`, param, 'invalid_type');
}

const CONVERSATION_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** Validates a client-chosen conversation name (header or `user`). */
export function checkConversationName(name: string, param: string): string {
  if (!CONVERSATION_ID.test(name)) throw new RequestError(400, `${param} must be 1-128 characters of letters, digits and . _ : @ -`, param, 'invalid_value');
  return name;
}

/**
 * A hash of what a request asks, for its Idempotency-Key: the agent, the conversation, the
 * messages that reach the turn (a named conversation's new one, a one-off's all) and the
 * fields that change the answer. Not `stream` or `stream_options`: a retry may ask for the
 * same answer streamed or not.
 */
export function requestHash(chat: ChatRequest, conversation: string | undefined): string {
  const messages = conversation ? chat.messages.slice(-1) : chat.messages;
  const semantic = [
    chat.model,
    conversation ?? null,
    messages.map((m) => [m.role, m.text]),
    chat.overrides.temperature ?? null,
    chat.overrides.maxTokens ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(semantic)).digest('hex');
}
