import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  type Context,
  calculateCost,
  clampThinkingLevel,
  createAssistantMessageEventStream,
  getEnvApiKey,
  type Model,
  parseStreamingJson,
  type SimpleStreamOptions,
  type TextContent,
  type ThinkingContent,
  type Tool,
  type ToolCall,
} from '@mariozechner/pi-ai';
import { parseRetryAfter } from '../errors.js';
import { claimObservation } from '../http-observer.js';
import { decodeBody, modelAgent } from '../model-fetch.js';
import { leanCovers, type ResolvedCompat, resolveCompat } from './compat.js';
import { SseReader } from './sse.js';

/**
 * pi-ai's `openai-completions` API without the openai SDK: the same request
 * body (pi-ai's own convertMessages, the same params), the same events on
 * pi-ai's AssistantMessageEventStream, and the same message at the end — but
 * one node:http request whose body is split into server-sent events by a
 * callback, where the SDK path runs a new client per call, a web stream, and
 * three nested async iterators (bytes → lines → events → chunks) plus pi-ai's
 * lazy-loading wrapper stream. Errors read as the SDK's do ("429 Rate limit
 * reached", the in-stream error's message), so classifyError sees the same text.
 */
type ConvertMessages = (model: Model<'openai-completions'>, context: Context, compat: ResolvedCompat) => unknown[];
let convert: ConvertMessages | undefined;
/** pi-ai's message conversion, loaded on first use (it imports the openai SDK's types module). */
async function converter(): Promise<ConvertMessages> {
  convert ??= ((await import('@mariozechner/pi-ai/openai-completions')) as unknown as { convertMessages: ConvertMessages }).convertMessages;
  return convert;
}

type Block = TextContent | ThinkingContent | (ToolCall & { partialArgs?: string; streamIndex?: number | undefined });

/** Whether the lean transport handles this model (else the SDK path does). */
export function leanHandles(model: Model<'openai-completions'>): boolean {
  return leanCovers(model, resolveCompat(model));
}

export function streamLeanOpenAICompletions(
  model: Model<'openai-completions'>,
  context: Context,
  options: SimpleStreamOptions = {},
): AssistantMessageEventStream {
  const apiKey = options.apiKey || getEnvApiKey(model.provider);
  if (!apiKey) throw new Error(`No API key for provider: ${model.provider}`);
  const stream = createAssistantMessageEventStream();
  void run(model, context, options, apiKey, stream);
  return stream;
}

async function run(model: Model<'openai-completions'>, context: Context, options: SimpleStreamOptions, apiKey: string, stream: AssistantMessageEventStream) {
  const output: AssistantMessage = {
    role: 'assistant',
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: 'stop',
    timestamp: Date.now(),
  };
  const signal = options.signal;
  let raw: string | undefined;
  const parser = new ChunkParser(model, output, stream);
  try {
    const compat = resolveCompat(model);
    let params: unknown = buildParams(model, context, options, compat, (await converter())(model, context, compat));
    const next = await options.onPayload?.(params, model);
    if (next !== undefined) params = next;
    const { headers, observation } = claimObservation({ ...model.headers, ...options.headers });
    const res = await post(chatUrl(model.baseUrl), { ...headers, authorization: `Bearer ${apiKey}` }, JSON.stringify(params), signal);
    if (observation) {
      observation.status = res.statusCode;
      const ms = header(res, 'retry-after-ms');
      observation.retryAfterMs = ms && /^\d+$/.test(ms) ? Number(ms) : parseRetryAfter(header(res, 'retry-after'));
    }
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      const failed = await statusError(res, status, signal);
      raw = failed.raw;
      throw failed.error;
    }
    await options.onResponse?.({ status, headers: headerRecord(res) }, model);
    stream.push({ type: 'start', partial: output });
    await readEvents(
      res,
      signal,
      (data) => parser.chunk(data),
      () => parser.flush(),
    );
    parser.finish();
    if (signal?.aborted) throw new Error('Request was aborted');
    if (output.stopReason === 'error') throw new Error(output.errorMessage || 'Provider returned an error stop reason');
    stream.push({ type: 'done', reason: output.stopReason as 'stop' | 'length' | 'toolUse', message: output });
    stream.end();
  } catch (error) {
    // Text parsed in the read that failed still goes out before the error, as it did event by event.
    parser.flush();
    for (const block of output.content as Block[]) {
      if (block.type === 'toolCall') {
        delete block.partialArgs;
        delete block.streamIndex;
      }
    }
    output.stopReason = signal?.aborted ? 'aborted' : 'error';
    output.errorMessage = signal?.aborted ? 'Request was aborted.' : error instanceof Error ? error.message : JSON.stringify(error);
    if (raw && !signal?.aborted) output.errorMessage += `\n${raw}`;
    stream.push({ type: 'error', reason: output.stopReason, error: output });
    stream.end();
  }
}

/** The request body pi-ai's buildParams makes for the models leanCovers() accepts. */
function buildParams(model: Model<'openai-completions'>, context: Context, options: SimpleStreamOptions, compat: ResolvedCompat, messages: unknown[]) {
  const retention = options.cacheRetention ?? (process.env.PI_CACHE_RETENTION === 'long' ? 'long' : 'short');
  const sessionId = retention === 'none' ? undefined : options.sessionId;
  const long = retention === 'long' && compat.supportsLongCacheRetention;
  const params: Record<string, unknown> = {
    model: model.id,
    messages,
    stream: true,
    prompt_cache_key: (model.baseUrl.includes('api.openai.com') && retention !== 'none') || long ? sessionId : undefined,
    prompt_cache_retention: long ? '24h' : undefined,
  };
  if (compat.supportsUsageInStreaming !== false) params.stream_options = { include_usage: true };
  if (compat.supportsStore) params.store = false;
  const maxTokens = options.maxTokens ?? (model.maxTokens > 0 ? Math.min(model.maxTokens, 32000) : undefined);
  if (maxTokens) params[compat.maxTokensField === 'max_tokens' ? 'max_tokens' : 'max_completion_tokens'] = maxTokens;
  if (options.temperature !== undefined) params.temperature = options.temperature;
  if (context.tools && context.tools.length > 0) params.tools = context.tools.map((t) => convertTool(t, compat));
  else if (hasToolHistory(context)) params.tools = [];
  const toolChoice = (options as { toolChoice?: unknown }).toolChoice;
  if (toolChoice) params.tool_choice = toolChoice;
  if (model.reasoning && compat.supportsReasoningEffort) {
    const level = options.reasoning ? clampThinkingLevel(model, options.reasoning) : undefined;
    const effort = level === 'off' ? undefined : level;
    const map = model.thinkingLevelMap as Record<string, string | null | undefined> | undefined;
    if (effort) params.reasoning_effort = map?.[effort] ?? effort;
    else if (typeof map?.off === 'string') params.reasoning_effort = map.off;
  }
  return params;
}

function convertTool(tool: Tool, compat: ResolvedCompat) {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters, ...(compat.supportsStrictMode !== false && { strict: false }) },
  };
}

function hasToolHistory(context: Context): boolean {
  return context.messages.some((m) => m.role === 'toolResult' || (m.role === 'assistant' && m.content.some((b) => b.type === 'toolCall')));
}

/** `${baseUrl}/chat/completions`, as the SDK joins them. */
function chatUrl(baseUrl: string): URL {
  return new URL(`${baseUrl.replace(/\/+$/, '')}/chat/completions`);
}

/** Streamed chunks to pi-ai's events, as pi-ai's openai-completions provider turns them (0.73.1). */
class ChunkParser {
  private text: TextContent | null = null;
  private thinking: ThinkingContent | null = null;
  private readonly byIndex = new Map<number, Block & { type: 'toolCall' }>();
  private readonly byId = new Map<string, Block & { type: 'toolCall' }>();
  private done = false;

  constructor(
    private readonly model: Model<'openai-completions'>,
    private readonly output: AssistantMessage,
    private readonly stream: AssistantMessageEventStream,
  ) {}

  private get blocks(): Block[] {
    return this.output.content as Block[];
  }

  /** Text of the current text block parsed in this read and not yet pushed. */
  private pendingText = '';

  /**
   * Pushes the text parsed so far as one text_delta: at the end of each network read, and before any
   * other event (which keeps pi-ai's order). Tokens a fast server sends together then cost one event
   * through the agent loop, the sinks, the bus and the SSE writer instead of one each, and nothing
   * waits: a read is handled at once, whole.
   */
  flush(): void {
    if (!this.pendingText || !this.text) return;
    const delta = this.pendingText;
    this.pendingText = '';
    this.stream.push({ type: 'text_delta', contentIndex: this.blocks.indexOf(this.text), delta, partial: this.output });
  }

  private emit(e: Parameters<AssistantMessageEventStream['push']>[0]): void {
    this.flush();
    this.stream.push(e);
  }

  chunk(data: string): void {
    if (this.done) return;
    if (data.startsWith('[DONE]')) {
      this.done = true;
      return;
    }
    let chunk: any;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new Error(`Could not parse a streamed event as JSON: ${data.slice(0, 200)}`);
    }
    if (chunk?.error) throw new Error(errorText(chunk.error) ?? '(no status code or body)', { cause: chunk.error });
    if (!chunk || typeof chunk !== 'object') return;
    const { output, model } = this;
    output.responseId ||= chunk.id;
    if (typeof chunk.model === 'string' && chunk.model.length > 0 && chunk.model !== model.id) output.responseModel ||= chunk.model;
    if (chunk.usage) output.usage = usage(chunk.usage, model);
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!choice) return;
    if (!chunk.usage && choice.usage) output.usage = usage(choice.usage, model);
    if (choice.finish_reason) {
      const r = stopReason(choice.finish_reason);
      output.stopReason = r.stopReason;
      if (r.errorMessage) output.errorMessage = r.errorMessage;
    }
    const delta = choice.delta;
    if (!delta) return;
    if (typeof delta.content === 'string' && delta.content.length > 0) {
      const block = this.ensureText();
      block.text += delta.content;
      // Held until the end of this read (flush()): text that arrived together leaves as one event.
      this.pendingText += delta.content;
    }
    const field = ['reasoning_content', 'reasoning', 'reasoning_text'].find((f) => typeof delta[f] === 'string' && delta[f].length > 0);
    if (field) {
      const block = this.ensureThinking(field);
      block.thinking += delta[field];
      this.emit({ type: 'thinking_delta', contentIndex: this.blocks.indexOf(block), delta: delta[field], partial: output });
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls) {
        const block = this.ensureToolCall(call);
        if (!block.id && call.id) {
          block.id = call.id;
          this.byId.set(call.id, block);
        }
        if (!block.name && call.function?.name) block.name = call.function.name;
        let piece = '';
        if (call.function?.arguments) {
          piece = call.function.arguments;
          block.partialArgs = (block.partialArgs ?? '') + piece;
          block.arguments = parseStreamingJson(block.partialArgs);
        }
        this.emit({ type: 'toolcall_delta', contentIndex: this.blocks.indexOf(block), delta: piece, partial: output });
      }
    }
    if (Array.isArray(delta.reasoning_details)) {
      for (const d of delta.reasoning_details) {
        if (d?.type !== 'reasoning.encrypted' || !d.id || !d.data) continue;
        const call = output.content.find((b) => b.type === 'toolCall' && b.id === d.id) as ToolCall | undefined;
        if (call) call.thoughtSignature = JSON.stringify(d);
      }
    }
  }

  /** The stream ended: every open block gets its end event, in order. */
  finish(): void {
    this.flush();
    const { output, stream } = this;
    this.blocks.forEach((block, contentIndex) => {
      if (block.type === 'text') stream.push({ type: 'text_end', contentIndex, content: block.text, partial: output });
      else if (block.type === 'thinking') stream.push({ type: 'thinking_end', contentIndex, content: block.thinking, partial: output });
      else {
        block.arguments = parseStreamingJson(block.partialArgs);
        delete block.partialArgs;
        delete block.streamIndex;
        stream.push({ type: 'toolcall_end', contentIndex, toolCall: block, partial: output });
      }
    });
  }

  private ensureText(): TextContent {
    if (!this.text) {
      this.text = { type: 'text', text: '' };
      this.blocks.push(this.text);
      this.emit({ type: 'text_start', contentIndex: this.blocks.length - 1, partial: this.output });
    }
    return this.text;
  }

  private ensureThinking(signature: string): ThinkingContent {
    if (!this.thinking) {
      this.thinking = { type: 'thinking', thinking: '', thinkingSignature: signature };
      this.blocks.push(this.thinking);
      this.emit({ type: 'thinking_start', contentIndex: this.blocks.length - 1, partial: this.output });
    }
    return this.thinking;
  }

  private ensureToolCall(call: { index?: unknown; id?: string; function?: { name?: string } }) {
    const streamIndex = typeof call.index === 'number' ? call.index : undefined;
    let block = streamIndex !== undefined ? this.byIndex.get(streamIndex) : undefined;
    if (!block && call.id) block = this.byId.get(call.id);
    if (!block) {
      block = { type: 'toolCall', id: call.id || '', name: call.function?.name || '', arguments: {}, partialArgs: '', streamIndex };
      if (streamIndex !== undefined) this.byIndex.set(streamIndex, block);
      if (call.id) this.byId.set(call.id, block);
      this.blocks.push(block);
      this.emit({ type: 'toolcall_start', contentIndex: this.blocks.length - 1, partial: this.output });
    }
    if (streamIndex !== undefined && block.streamIndex === undefined) {
      block.streamIndex = streamIndex;
      this.byIndex.set(streamIndex, block);
    }
    if (call.id) this.byId.set(call.id, block);
    return block;
  }
}

function usage(raw: any, model: Model<'openai-completions'>): AssistantMessage['usage'] {
  const prompt = raw.prompt_tokens || 0;
  const cached = raw.prompt_tokens_details?.cached_tokens ?? raw.prompt_cache_hit_tokens ?? 0;
  const cacheWrite = raw.prompt_tokens_details?.cache_write_tokens || 0;
  const cacheRead = cacheWrite > 0 ? Math.max(0, cached - cacheWrite) : cached;
  const input = Math.max(0, prompt - cacheRead - cacheWrite);
  const out = raw.completion_tokens || 0;
  const u = {
    input,
    output: out,
    cacheRead,
    cacheWrite,
    totalTokens: input + out + cacheRead + cacheWrite,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
  calculateCost(model, u);
  return u;
}

function stopReason(reason: string): { stopReason: AssistantMessage['stopReason']; errorMessage?: string } {
  switch (reason) {
    case 'stop':
    case 'end':
      return { stopReason: 'stop' };
    case 'length':
      return { stopReason: 'length' };
    case 'function_call':
    case 'tool_calls':
      return { stopReason: 'toolUse' };
    default:
      return { stopReason: 'error', errorMessage: `Provider finish_reason: ${reason}` };
  }
}

/** The SDK's APIError text for an error object: its message, else the object as JSON. */
function errorText(error: unknown): string | undefined {
  if (!error) return undefined;
  const m = (error as { message?: unknown }).message;
  return m ? (typeof m === 'string' ? m : JSON.stringify(m)) : JSON.stringify(error);
}

/** A non-2xx response read to its end (at most 1 MB kept), as the SDK reports it: "<status> <message>". */
async function statusError(res: http.IncomingMessage, status: number, signal: AbortSignal | undefined): Promise<{ error: Error; raw?: string }> {
  let text = '';
  try {
    await readText(res, signal, (t) => {
      if (text.length < 1_000_000) text += t;
    });
  } catch (err) {
    text ||= (err as Error).message;
  }
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const msg = json ? errorText(json.error) : text || undefined;
  const raw = json?.error?.metadata?.raw;
  return { error: new Error(msg ? `${status} ${msg}` : `${status} status code (no body)`), ...(typeof raw === 'string' ? { raw } : {}) };
}

/** Sends the request; resolves with the response head, rejects on a network failure or an abort. */
function post(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal | undefined): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('Request was aborted.'));
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      agent: modelAgent(url.protocol),
      headers: { ...headers, 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const onAbort = () => req.destroy(new Error('Request was aborted.'));
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res) => {
      signal?.removeEventListener('abort', onAbort);
      resolve(res);
    });
    req.on('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      // As the SDK words it: "Connection error." is what pi-ai shows for a refused or reset connection.
      reject(signal?.aborted ? err : new Error('Connection error.', { cause: err }));
    });
    req.end(body);
  });
}

/** The decoded body as text chunks, until it ends; a connection that closes first, or an abort, rejects. */
function readText(res: http.IncomingMessage, signal: AbortSignal | undefined, onText: (text: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const body: Readable = decodeBody(res);
    body.setEncoding('utf8');
    let settled = false;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        res.destroy();
        reject(err);
      } else resolve();
    };
    const onAbort = () => settle(new Error('Request was aborted.'));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    body.on('data', (text: string) => {
      if (settled) return;
      try {
        onText(text);
      } catch (err) {
        settle(err as Error);
      }
    });
    body.on('end', () => settle());
    body.on('error', (err) => settle(new Error('terminated', { cause: err })));
    res.on('close', () => {
      if (!res.complete) settle(new Error('terminated: the connection closed before the response ended'));
    });
  });
}

/** Each event of the body to onData; after each network read's events, afterRead. */
function readEvents(res: http.IncomingMessage, signal: AbortSignal | undefined, onData: (data: string) => void, afterRead: () => void): Promise<void> {
  const sse = new SseReader((data) => onData(data));
  return readText(res, signal, (t) => {
    sse.push(t);
    afterRead();
  }).then(() => sse.end());
}

function header(res: http.IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function headerRecord(res: http.IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
