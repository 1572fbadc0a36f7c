import { createHash } from 'node:crypto';
import type { Attachment, ContextMessage, TurnOverrides } from '../../kernel/envelope.js';
import { parseJsonObject, RequestError } from '../../src/channel/index.js';
import { checkImageCount, imageAttachment } from './images.js';
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
  /** The last user message's image parts, checked (images.ts). */
  attachments: Attachment[];
  /** An earlier message has image parts: a one-off conversation refuses them (only the new message's reach the model). */
  earlierImages: boolean;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

export function parseChatRequest(raw: Buffer, maxMessageChars: number, jsonModes = false): ChatRequest {
  // Invalid JSON, a body that is not an object, too deep, NUL in strings: a 400 (HttpError); __proto__ keys dropped.
  const b = parseJsonObject(raw, 'a JSON object with "model" and "messages"');
  if (typeof b.model !== 'string' || !b.model) throw new RequestError(400, 'you must provide a model parameter', 'model', 'missing_required_parameter');
  if (!Array.isArray(b.messages))
    throw new RequestError(400, "'messages' is a required property and must be an array", 'messages', 'missing_required_parameter');
  if (b.messages.length === 0) throw new RequestError(400, "'messages' must contain at least one message", 'messages', 'invalid_value');
  if (b.stream !== undefined && typeof b.stream !== 'boolean') throw new RequestError(400, "'stream' must be a boolean", 'stream', 'invalid_type');
  if (b.user !== undefined && typeof b.user !== 'string') throw new RequestError(400, "'user' must be a string", 'user', 'invalid_type');
  // Every other field is honoured, accepted as harmless, or refused by name: none is silently ignored.
  const overrides = checkRequestFields(b, { jsonModes });

  const messages: ContextMessage[] = [];
  let attachments: Attachment[] = [];
  let earlierImages = false;
  const count = b.messages.length;
  b.messages.forEach((m: unknown, i: number) => {
    const param = `messages[${i}]`;
    if (!m || typeof m !== 'object') throw new RequestError(400, `${param} must be an object`, param, 'invalid_type');
    const { role, content } = m as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !ROLES.has(role))
      throw new RequestError(400, `${param}.role must be one of system, developer, user, assistant, tool`, `${param}.role`, 'invalid_value');
    const images: Attachment[] = [];
    const text = contentText(content, `${param}.content`, images);
    if (text.length > maxMessageChars)
      throw new RequestError(400, `${param}.content is longer than ${maxMessageChars} characters`, `${param}.content`, 'message_too_long');
    if (role === 'system' || role === 'developer') messages.push({ role: 'system', text });
    else if (role === 'user') {
      messages.push({ role: 'user', text });
      if (i === count - 1) attachments = images;
      else if (images.length) earlierImages = true;
    } else if (images.length) throw new RequestError(400, `${param}: only user messages may carry images`, `${param}.content`, 'invalid_value');
    else if (role === 'assistant') messages.push({ role: 'assistant', text });
    // Tool results of a client-side tool loop have no place in a gateway conversation: dropped.
  });
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'user') throw new RequestError(400, 'the last message must have role "user"', 'messages', 'invalid_value');
  if (!last.text.trim() && !attachments.length) throw new RequestError(400, 'the last user message is empty', 'messages', 'invalid_value');
  checkImageCount(attachments, `messages[${count - 1}].content`);
  const so = b.stream_options as { include_usage?: unknown } | undefined;
  return {
    model: b.model,
    stream: b.stream === true,
    includeUsage: so?.include_usage === true,
    messages,
    ...(typeof b.user === 'string' && b.user ? { user: b.user } : {}),
    overrides,
    attachments,
    earlierImages,
  };
}

/** A message's text; its image parts are added to `images` (checked); any other part is refused by name. */
function contentText(content: unknown, param: string, images: Attachment[]): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new RequestError(400, `${param} must be a string or an array of content parts`, param, 'invalid_type');
  const texts: string[] = [];
  content.forEach((p: unknown, j: number) => {
    const at = `${param}[${j}]`;
    const part = p && typeof p === 'object' ? (p as { type?: unknown; text?: unknown; image_url?: unknown }) : {};
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw new RequestError(400, `${at}.text must be a string`, `${at}.text`, 'invalid_type');
      if (part.text) texts.push(part.text);
    } else if (part.type === 'refusal') {
      const refusal = (p as { refusal?: unknown }).refusal;
      if (typeof refusal === 'string' && refusal) texts.push(refusal);
    } else if (part.type === 'image_url') {
      const url = part.image_url && typeof part.image_url === 'object' ? (part.image_url as { url?: unknown }).url : part.image_url;
      images.push(imageAttachment(url, `${at}.image_url.url`, images.length));
    } else if (part.type === 'input_audio' || part.type === 'file')
      throw new RequestError(400, `${at}: '${part.type}' content parts are not supported (text and images are)`, `${at}.type`, 'unsupported_content');
    else throw new RequestError(400, `${at}.type must be 'text' or 'image_url'`, `${at}.type`, 'invalid_value');
  });
  return texts.join('\n');
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
    chat.overrides.responseFormat ?? null,
    chat.attachments.map((a) =>
      createHash('sha256')
        .update(a.data ?? '')
        .digest('hex'),
    ),
  ];
  return createHash('sha256').update(JSON.stringify(semantic)).digest('hex');
}
