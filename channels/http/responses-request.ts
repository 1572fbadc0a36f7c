import { createHash } from 'node:crypto';
import type { Attachment, ContextMessage, ResponseFormat, TurnOverrides } from '../../kernel/envelope.js';
import { parseJsonObject, RequestError } from '../../src/channel/index.js';
import { checkImageCount, imageAttachment } from './images.js';
import { CLIENT_TOOLS_WHY, checkResponseFormat, numberIn, unsupported } from './request-fields.js';

/** A validated POST /v1/responses request. */
export interface ResponsesRequest {
  model: string;
  stream: boolean;
  /** The input items as messages, oldest first; the last is the user's new message. */
  input: ContextMessage[];
  /** The new message's images, checked (images.ts). */
  attachments: Attachment[];
  instructions?: string;
  previousResponseId?: string;
  store: boolean;
  metadata?: Record<string, string>;
  overrides: TurnOverrides;
  /** What the response object echoes. */
  echo: {
    temperature: number | null;
    max_output_tokens: number | null;
    top_p: number;
    truncation: 'disabled' | 'auto';
    format: ResponseFormat | { type: 'text' };
  };
}

/** Known fields the gateway cannot honour, each accepted only at the value that changes nothing (undefined: none). */
const NOT_HONOURED: Record<string, unknown> = {
  top_p: 1,
  background: false,
  parallel_tool_calls: undefined,
  reasoning: undefined,
  prompt: undefined,
  prompt_cache_key: undefined,
  prompt_cache_retention: undefined,
  safety_identifier: undefined,
  service_tier: undefined,
  top_logprobs: undefined,
  max_tool_calls: undefined,
  context_management: undefined,
  moderation: undefined,
};

/**
 * Every top-level field of a Responses request is honoured, accepted as harmless, or refused by
 * name (the README's "Request fields" table): none is silently ignored. null counts as absent.
 */
export function parseResponsesRequest(raw: Buffer, maxMessageChars: number, jsonModes = false): ResponsesRequest {
  const b = parseJsonObject(raw, 'a JSON object with "model" and "input"');
  if (typeof b.model !== 'string' || !b.model) throw new RequestError(400, 'you must provide a model parameter', 'model', 'missing_required_parameter');
  const overrides: TurnOverrides = {};
  const req: ResponsesRequest = {
    model: b.model,
    stream: false,
    input: [],
    attachments: [],
    store: true,
    overrides,
    echo: { temperature: null, max_output_tokens: null, top_p: 1, truncation: 'disabled', format: { type: 'text' } },
  };
  let input: unknown;
  for (const [field, value] of Object.entries(b)) {
    if (value === null || value === undefined) continue;
    switch (field) {
      case 'model':
        continue;
      case 'input':
        input = value;
        continue;
      case 'stream':
      case 'store':
        if (typeof value !== 'boolean') throw new RequestError(400, `'${field}' must be a boolean`, field, 'invalid_type');
        req[field] = value;
        continue;
      case 'instructions':
        req.instructions = stringField(field, value, maxMessageChars);
        continue;
      case 'previous_response_id':
        req.previousResponseId = stringField(field, value, 200);
        continue;
      case 'temperature':
        req.echo.temperature = overrides.temperature = numberIn(field, value, 0, 2, false);
        continue;
      case 'max_output_tokens':
        req.echo.max_output_tokens = overrides.maxTokens = numberIn(field, value, 1, Number.MAX_SAFE_INTEGER, true);
        continue;
      case 'n':
        if (numberIn(field, value, 1, Number.MAX_SAFE_INTEGER, true) > 1) throw unsupported('n', 'the gateway answers with one output (n: 1)');
        continue;
      case 'text': {
        const format = checkTextConfig(value, jsonModes);
        if (format) overrides.responseFormat = req.echo.format = format;
        continue;
      }
      case 'truncation':
        // The gateway compacts a long conversation itself (a running summary): that is "auto".
        if (value === 'auto') req.echo.truncation = 'auto';
        else if (value === 'disabled')
          throw unsupported('truncation', 'the gateway compacts long conversations into a summary itself; only "auto" describes that');
        else throw new RequestError(400, "Invalid 'truncation': expected 'auto'.", field, 'invalid_value');
        continue;
      case 'metadata':
        req.metadata = metadataField(value);
        continue;
      case 'user':
        // The client's own label of its end user (abuse tracking): kept with nothing, changes nothing.
        if (typeof value !== 'string') throw new RequestError(400, "'user' must be a string", field, 'invalid_type');
        continue;
      case 'stream_options':
      case 'include':
        if (field === 'include' ? !Array.isArray(value) || value.length > 0 : typeof value !== 'object' || Array.isArray(value))
          throw field === 'include'
            ? unsupported('include', 'the gateway has no extra output data to include (logprobs, reasoning, search results)')
            : new RequestError(400, "'stream_options' must be an object", field, 'invalid_type');
        continue;
      case 'tools':
        // An empty list asks for nothing; any tool is the client's own.
        if (Array.isArray(value) && value.length === 0) continue;
        throw unsupported(field, CLIENT_TOOLS_WHY);
      case 'tool_choice':
        throw unsupported(field, CLIENT_TOOLS_WHY);
      case 'conversation':
        throw unsupported(field, 'continue with previous_response_id (or name a conversation with X-Switchboard-Conversation)');
    }
    if (Object.hasOwn(NOT_HONOURED, field)) {
      const noOp = NOT_HONOURED[field];
      if (noOp !== undefined && value === noOp) continue;
      throw unsupported(
        field,
        noOp === undefined
          ? 'the gateway cannot pass it to the model'
          : `the gateway cannot pass it to the model (only ${JSON.stringify(noOp)}, the default, is accepted)`,
      );
    }
    throw new RequestError(400, `Unrecognized request argument supplied: ${field}`, field, 'unknown_parameter');
  }
  if (input === undefined) throw new RequestError(400, "'input' is required: a string or an array of input items", 'input', 'missing_required_parameter');
  parseInput(req, input, maxMessageChars);
  return req;
}

function stringField(field: string, value: unknown, max: number): string {
  if (typeof value !== 'string') throw new RequestError(400, `'${field}' must be a string`, field, 'invalid_type');
  if (value.length > max) throw new RequestError(400, `'${field}' is longer than ${max} characters`, field, 'invalid_value');
  return value;
}

/** OpenAI's metadata: at most 16 string values, keys up to 64 and values up to 512 characters. */
function metadataField(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || Array.isArray(value) || !value) throw new RequestError(400, "'metadata' must be an object", 'metadata', 'invalid_type');
  const entries = Object.entries(value);
  if (entries.length > 16) throw new RequestError(400, "'metadata' may have at most 16 keys", 'metadata', 'invalid_value');
  for (const [k, v] of entries)
    if (k.length > 64 || typeof v !== 'string' || v.length > 512)
      throw new RequestError(400, "'metadata' values must be strings (keys up to 64, values up to 512 characters)", `metadata.${k}`, 'invalid_value');
  return Object.fromEntries(entries) as Record<string, string>;
}

/** `text`: `format` (JSON modes as request-fields.ts decides), `verbosity` only at its default. */
function checkTextConfig(value: unknown, jsonModes: boolean): ResponseFormat | undefined {
  if (typeof value !== 'object' || Array.isArray(value) || !value) throw new RequestError(400, "'text' must be an object", 'text', 'invalid_type');
  let format: ResponseFormat | undefined;
  for (const [k, v] of Object.entries(value)) {
    if (v === null || v === undefined) continue;
    if (k === 'verbosity') {
      if (v === 'medium') continue;
      throw new RequestError(
        400,
        '\'text.verbosity\' is not supported: the gateway cannot pass it to the model (only "medium", the default, is accepted)',
        'text.verbosity',
        'unsupported_parameter',
      );
    }
    if (k !== 'format') throw new RequestError(400, `Unrecognized request argument supplied: text.${k}`, `text.${k}`, 'unknown_parameter');
    format = checkResponseFormat(v, 'text.format', jsonModes, false);
  }
  return format;
}

const ROLES = new Set(['user', 'system', 'developer', 'assistant']);

/** The input: a string (one user message) or input items, each a message; other item types are refused by name. */
function parseInput(req: ResponsesRequest, input: unknown, maxMessageChars: number): void {
  const items: unknown[] = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
  if (typeof input !== 'string' && !Array.isArray(input))
    throw new RequestError(400, "'input' must be a string or an array of input items", 'input', 'invalid_type');
  if (items.length === 0) throw new RequestError(400, "'input' must contain at least one item", 'input', 'invalid_value');
  let earlierImages = false;
  items.forEach((raw, i) => {
    const param = `input[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new RequestError(400, `${param} must be an object`, param, 'invalid_type');
    const item = raw as { type?: unknown; role?: unknown; content?: unknown };
    if (item.type !== undefined && item.type !== 'message') {
      const why =
        item.type === 'function_call_output' || item.type === 'function_call' || item.type === 'custom_tool_call_output'
          ? CLIENT_TOOLS_WHY
          : item.type === 'mcp_approval_response'
            ? 'answer an approval with POST /v1/approvals/{code} (the code is in the mcp_approval_request item)'
            : item.type === 'item_reference'
              ? 'continue with previous_response_id instead of referring to items'
              : 'only message items are accepted';
      throw new RequestError(400, `${param}: items of type '${String(item.type)}' are not supported: ${why}`, `${param}.type`, 'unsupported_input_item');
    }
    if (typeof item.role !== 'string' || !ROLES.has(item.role))
      throw new RequestError(400, `${param}.role must be one of user, system, developer, assistant`, `${param}.role`, 'invalid_value');
    const images: Attachment[] = [];
    const text = contentText(item.content, `${param}.content`, item.role, images);
    if (text.length > maxMessageChars)
      throw new RequestError(400, `${param}.content is longer than ${maxMessageChars} characters`, `${param}.content`, 'message_too_long');
    const role = item.role === 'developer' || item.role === 'system' ? 'system' : (item.role as 'user' | 'assistant');
    req.input.push({ role, text });
    if (i === items.length - 1) req.attachments = images;
    else if (images.length) earlierImages = true;
  });
  const last = req.input[req.input.length - 1]!;
  if (last.role !== 'user') throw new RequestError(400, 'the last input item must be a message with role "user"', 'input', 'invalid_value');
  if (!last.text.trim() && !req.attachments.length) throw new RequestError(400, 'the last user message is empty', 'input', 'invalid_value');
  if (earlierImages)
    throw new RequestError(400, 'Only the last input message may carry images (the earlier ones are text context).', 'input', 'unsupported_content');
  checkImageCount(req.attachments, `input[${items.length - 1}].content`);
}

function contentText(content: unknown, param: string, role: string, images: Attachment[]): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new RequestError(400, `${param} must be a string or an array of content parts`, param, 'invalid_type');
  const texts: string[] = [];
  content.forEach((p: unknown, j: number) => {
    const at = `${param}[${j}]`;
    const part = p && typeof p === 'object' ? (p as { type?: unknown; text?: unknown; image_url?: unknown; file_id?: unknown; refusal?: unknown }) : {};
    if (part.type === 'input_text' || part.type === 'output_text') {
      if (typeof part.text !== 'string') throw new RequestError(400, `${at}.text must be a string`, `${at}.text`, 'invalid_type');
      if (part.text) texts.push(part.text);
    } else if (part.type === 'refusal' && role === 'assistant') {
      if (typeof part.refusal === 'string' && part.refusal) texts.push(part.refusal);
    } else if (part.type === 'input_image') {
      if (role !== 'user') throw new RequestError(400, `${at}: only user messages may carry images`, `${at}.type`, 'invalid_value');
      if (part.file_id !== undefined && part.file_id !== null)
        throw new RequestError(
          400,
          `${at}.file_id: the gateway has no files API; send the image as a data URL in image_url`,
          `${at}.file_id`,
          'unsupported_content',
        );
      images.push(imageAttachment(part.image_url, `${at}.image_url`, images.length));
    } else if (part.type === 'input_file' || part.type === 'input_audio')
      throw new RequestError(400, `${at}: '${part.type}' content parts are not supported (text and images are)`, `${at}.type`, 'unsupported_content');
    else throw new RequestError(400, `${at}.type must be 'input_text' or 'input_image'`, `${at}.type`, 'invalid_value');
  });
  return texts.join('\n');
}

/**
 * The hash of what a request asks, for its Idempotency-Key: the agent, the conversation it continues,
 * the input, the images and the fields that change the answer. Not `stream`: a retry may ask for the
 * same answer streamed or not.
 */
export function responsesRequestHash(r: ResponsesRequest, conversation: string | undefined): string {
  const semantic = [
    'responses',
    r.model,
    conversation ?? null,
    r.previousResponseId ?? null,
    r.instructions ?? null,
    r.input.map((m) => [m.role, m.text]),
    r.attachments.map((a) =>
      createHash('sha256')
        .update(a.data ?? '')
        .digest('hex'),
    ),
    r.overrides.temperature ?? null,
    r.overrides.maxTokens ?? null,
    r.overrides.responseFormat ?? null,
    r.store,
  ];
  return createHash('sha256').update(JSON.stringify(semantic)).digest('hex');
}
