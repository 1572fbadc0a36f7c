/**
 * Scriptable fake LLM server for tests and benchmarks.
 *
 * Speaks the OpenAI chat-completions wire format (POST /v1/chat/completions, streaming SSE
 * and plain JSON, GET /v1/models) and the Anthropic Messages wire format (POST /v1/messages,
 * streaming SSE and plain JSON) on a real HTTP socket. Every response is driven by a
 * `FakeScript` (taken FIFO from the queue, else produced by the fallback responder).
 *
 * Standalone: `node dist/test/fakes/fake-llm.js --port 0 --tokens 20 --token-delay-ms 0`
 * prints `{"url":"http://127.0.0.1:PORT"}` and serves until SIGTERM/SIGINT.
 *
 * Only node: built-ins are used here.
 */

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { pathToFileURL } from 'node:url';

export type FakeStep =
  /** streamed as ~word tokens (text.match(/\S+\s*|\s+/g)); tokenDelayMs is slept before each token */
  | { kind: 'text'; text: string; tokenDelayMs?: number }
  /** one assistant tool call (OpenAI: delta.tool_calls; Anthropic: tool_use block) */
  | { kind: 'toolCall'; name: string; args: unknown; id?: string }
  /**
   * HTTP error status in the vendor's error format (body overrides it: objects are sent as JSON,
   * strings raw). If the stream has already started, an in-stream error event is sent instead.
   */
  | { kind: 'error'; status: number; body?: unknown; retryAfter?: number }
  /** stream `afterTokens` (default: all) tokens of `text` (default ''), then hang until the client or server closes */
  | { kind: 'stall'; afterTokens?: number; text?: string }
  /** stream `afterTokens` tokens of `text`, then destroy the socket (afterTokens 0 before any byte: no response at all) */
  | { kind: 'disconnect'; afterTokens: number; text: string }
  /** wait; before the first step that writes, this delays the first byte of the response */
  | { kind: 'delay'; ms: number }
  /** streamed responses only: these bytes as they are (a malformed or odd SSE line); ignored in plain JSON responses */
  | { kind: 'raw'; data: string };

/** One HTTP response. */
export type FakeScript = FakeStep[];
export type FakeResponder = (req: FakeRequest) => FakeScript | Promise<FakeScript>;

export interface FakeRequest {
  api: 'openai' | 'anthropic';
  /** parsed JSON body (undefined when the body was malformed) */
  body: any;
  headers: Record<string, string | string[] | undefined>;
  /** 0-based request count since start/reset (= position in `FakeLlm.requests` when recording) */
  index: number;
}

export interface FakeLlmOptions {
  port?: number;
  host?: string;
  /** used when the queue of scripted responses is empty; default: reply 'ok' */
  fallback?: FakeResponder;
  /** required API key; when set, a wrong/missing key gets 401 in the vendor's error format */
  apiKey?: string;
  /**
   * usage numbers reported; default prompt_tokens = ceil(request body chars / 4),
   * completion = number of tokens streamed (text tokens + ceil(tool-call argument chars / 4))
   */
  usage?: {
    promptTokens?: number;
    completionTokens?: number /** of promptTokens, served from the prompt cache (OpenAI's prompt_tokens_details.cached_tokens) */;
    cachedTokens?: number;
  };
  /** keep every request in `requests` (default true; set false for long benchmark runs) */
  recordRequests?: boolean;
}

/** helpers */
export const reply = (text: string, tokenDelayMs?: number): FakeScript => [
  tokenDelayMs === undefined ? { kind: 'text', text } : { kind: 'text', text, tokenDelayMs },
];
export const toolCall = (name: string, args: unknown, id?: string): FakeScript => [
  id === undefined ? { kind: 'toolCall', name, args } : { kind: 'toolCall', name, args, id },
];

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') texts.push(part);
    else if (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text') {
      const t = (part as { text?: unknown }).text;
      if (typeof t === 'string') texts.push(t);
    }
  }
  return texts.join('\n');
}

/**
 * The text of the last user message in an OpenAI- or Anthropic-format request body
 * (string content, or the text parts of a content-part array joined with '\n').
 * User messages with no text (e.g. Anthropic tool_result-only turns) are skipped. '' if none.
 */
export function lastUserText(body: any): string {
  const messages: unknown = body?.messages;
  if (!Array.isArray(messages)) return '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown } | null | undefined;
    if (!m || m.role !== 'user') continue;
    const text = partsText(m.content);
    if (text !== '' || typeof m.content === 'string') return text;
  }
  return '';
}

// ---------------------------------------------------------------------------------------------

const TOKEN_RE = /\S+\s*|\s+/g;
const tokenize = (text: string): string[] => text.match(TOKEN_RE) ?? [];

let idCounter = 0;
const ID_PREFIX = Math.random().toString(36).slice(2, 8);
const nextId = (): string => `${ID_PREFIX}${(++idCounter).toString(36)}`;

type Api = 'openai' | 'anthropic';

function openaiErrorBody(status: number, message?: string): object {
  const [type, code, msg] =
    status === 400
      ? ['invalid_request_error', null, 'Bad request']
      : status === 401
        ? ['invalid_request_error', 'invalid_api_key', 'Incorrect API key provided']
        : status === 403
          ? ['permission_error', null, 'Permission denied']
          : status === 404
            ? ['invalid_request_error', 'not_found', 'Not found']
            : status === 429
              ? ['rate_limit_error', 'rate_limit_exceeded', 'Rate limit reached']
              : status === 503 || status === 529
                ? ['server_error', 'overloaded', 'The engine is currently overloaded']
                : status >= 500
                  ? ['server_error', null, 'The server had an error while processing your request.']
                  : ['api_error', null, `Error ${status}`];
  return { error: { message: message ?? msg, type, code } };
}

function anthropicErrorBody(status: number, message?: string): object {
  const [type, msg] =
    status === 400
      ? ['invalid_request_error', 'Bad request']
      : status === 401
        ? ['authentication_error', 'invalid x-api-key']
        : status === 403
          ? ['permission_error', 'Permission denied']
          : status === 404
            ? ['not_found_error', 'Not found']
            : status === 413
              ? ['request_too_large', 'Request too large']
              : status === 429
                ? ['rate_limit_error', 'Rate limit reached']
                : status === 529
                  ? ['overloaded_error', 'Overloaded']
                  : ['api_error', status >= 500 ? 'Internal server error' : `Error ${status}`];
  return { type: 'error', error: { type, message: message ?? msg } };
}

const errorBody = (api: Api, status: number, message?: string): object =>
  api === 'openai' ? openaiErrorBody(status, message) : anthropicErrorBody(status, message);

function sendJson(res: ServerResponse, status: number, payload: unknown, extraHeaders?: Record<string, string>): void {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': typeof payload === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
    'content-length': Buffer.byteLength(raw),
    ...extraHeaders,
  });
  res.end(raw);
}

function sendError(res: ServerResponse, api: Api, step: { status: number; body?: unknown; retryAfter?: number }): void {
  const headers: Record<string, string> = {};
  if (step.retryAfter !== undefined) headers['retry-after'] = String(step.retryAfter);
  sendJson(res, step.status, step.body !== undefined ? step.body : errorBody(api, step.status), headers);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Per-response state: close tracking, cancellable sleeps, backpressure-aware writes. */
class Conn {
  closed = false;
  private wake: (() => void) | undefined;
  constructor(readonly res: ServerResponse) {
    res.on('close', () => {
      this.closed = true;
      const w = this.wake;
      this.wake = undefined;
      w?.();
    });
  }
  /** resolves after ms, or early when the connection closes */
  sleep(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
  /** write; if the socket buffer is full, wait for drain (or close) */
  write(s: string): Promise<void> | undefined {
    if (this.closed) return undefined;
    if (this.res.write(s)) return undefined;
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.wake = undefined;
        resolve();
      };
      this.res.once('drain', done);
      this.wake = done;
    });
  }
  /** write (possibly nothing) and resolve once everything written so far has left Node's buffers */
  async writeFlushed(s: string): Promise<void> {
    if (this.closed) return;
    if (s !== '') {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.res.write(s, () => resolve());
      });
    } else {
      await new Promise<void>((resolve) => setImmediate(resolve)); // let the pending uncork happen
    }
    const socket = this.res.socket;
    while (!this.closed && socket && socket.writableLength > 0) await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }
  destroy(): void {
    this.res.socket?.destroy();
    this.res.destroy();
  }
}

interface Usage {
  prompt: number;
  completion: number;
  cached?: number;
}

/** OpenAI's usage object. */
function openaiUsage(u: Usage) {
  return {
    prompt_tokens: u.prompt,
    completion_tokens: u.completion,
    total_tokens: u.prompt + u.completion,
    ...(u.cached ? { prompt_tokens_details: { cached_tokens: u.cached } } : {}),
  };
}

/** Wire-format specific streaming emitter. */
interface Emitter {
  start(): string;
  text(tok: string): string;
  toolCall(id: string, name: string, argsJson: string): string;
  finish(hasToolCall: boolean, usage: Usage): string;
  midStreamError(status: number, body: unknown): string;
}

function openaiEmitter(body: any, includeUsage: boolean): Emitter {
  const id = `chatcmpl-${nextId()}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body?.model === 'string' ? body.model : 'fake-model';
  const head = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":`;
  const chunk = (delta: string, finish: string | null): string =>
    `${head}[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`;
  let toolIndex = 0;
  return {
    start: () => chunk('{"role":"assistant","content":""}', null),
    text: (tok) => chunk(`{"content":${JSON.stringify(tok)}}`, null),
    toolCall: (callId, name, argsJson) => {
      const index = toolIndex++;
      const cut = argsJson.length > 1 ? argsJson.length >> 1 : argsJson.length;
      let out = chunk(
        JSON.stringify({
          tool_calls: [{ index, id: callId, type: 'function', function: { name, arguments: argsJson.slice(0, cut) } }],
        }),
        null,
      );
      if (cut < argsJson.length) {
        out += chunk(JSON.stringify({ tool_calls: [{ index, function: { arguments: argsJson.slice(cut) } }] }), null);
      }
      return out;
    },
    finish: (hasToolCall, usage) => {
      let out = chunk('{}', hasToolCall ? 'tool_calls' : 'stop');
      if (includeUsage) {
        out += `${head}[],"usage":${JSON.stringify(openaiUsage(usage))}}\n\n`;
      }
      return out + 'data: [DONE]\n\n';
    },
    midStreamError: (status, errBody) => `data: ${JSON.stringify(errBody ?? openaiErrorBody(status))}\n\n`,
  };
}

function anthropicEmitter(body: any, promptTokens: number): Emitter {
  const id = `msg_${nextId()}`;
  const model = typeof body?.model === 'string' ? body.model : 'fake-model';
  const ev = (type: string, data: string): string => `event: ${type}\ndata: ${data}\n\n`;
  let index = -1;
  let textOpen = false;
  const closeText = (): string => {
    if (!textOpen) return '';
    textOpen = false;
    return ev('content_block_stop', `{"type":"content_block_stop","index":${index}}`);
  };
  return {
    start: () =>
      ev(
        'message_start',
        JSON.stringify({
          type: 'message_start',
          message: {
            id,
            type: 'message',
            role: 'assistant',
            model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: promptTokens, output_tokens: 1 },
          },
        }),
      ),
    text: (tok) => {
      let out = '';
      if (!textOpen) {
        textOpen = true;
        index++;
        out = ev('content_block_start', `{"type":"content_block_start","index":${index},"content_block":{"type":"text","text":""}}`);
      }
      return out + ev('content_block_delta', `{"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${JSON.stringify(tok)}}}`);
    },
    toolCall: (callId, name, argsJson) => {
      let out = closeText();
      index++;
      out += ev(
        'content_block_start',
        JSON.stringify({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: callId, name, input: {} } }),
      );
      const cut = argsJson.length > 1 ? argsJson.length >> 1 : argsJson.length;
      for (const part of cut < argsJson.length ? [argsJson.slice(0, cut), argsJson.slice(cut)] : [argsJson]) {
        out += ev(
          'content_block_delta',
          `{"type":"content_block_delta","index":${index},"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(part)}}}`,
        );
      }
      return out + ev('content_block_stop', `{"type":"content_block_stop","index":${index}}`);
    },
    finish: (hasToolCall, usage) =>
      closeText() +
      ev(
        'message_delta',
        `{"type":"message_delta","delta":{"stop_reason":"${hasToolCall ? 'tool_use' : 'end_turn'}","stop_sequence":null},"usage":{"input_tokens":${usage.prompt},"output_tokens":${usage.completion}}}`,
      ) +
      ev('message_stop', '{"type":"message_stop"}'),
    midStreamError: (status, errBody) => ev('error', JSON.stringify(errBody ?? anthropicErrorBody(status))),
  };
}

const toolArgsJson = (args: unknown): string => (typeof args === 'string' ? args : JSON.stringify(args ?? {}));

function isScript(x: unknown): x is FakeScript {
  return Array.isArray(x);
}

export class FakeLlm {
  readonly requests: FakeRequest[] = [];
  private readonly queue: FakeScript[] = [];
  private fallback: FakeResponder;
  private readonly opts: FakeLlmOptions;
  private server: Server | undefined;
  private _port = 0;
  private _url = '';
  private count = 0;

  constructor(opts: FakeLlmOptions = {}) {
    this.opts = opts;
    this.fallback = opts.fallback ?? (() => reply('ok'));
  }

  get port(): number {
    if (!this._url) throw new Error('FakeLlm not started');
    return this._port;
  }
  get url(): string {
    if (!this._url) throw new Error('FakeLlm not started');
    return this._url;
  }
  get openaiBaseUrl(): string {
    return `${this.url}/v1`;
  }

  /** FIFO: each incoming chat request takes the next script */
  enqueue(...scripts: FakeScript[]): void {
    this.queue.push(...scripts);
  }
  /** set the fallback responder (used when the queue is empty) */
  respond(fn: FakeResponder): void {
    this.fallback = fn;
  }
  /** clear queue + recorded requests */
  reset(): void {
    this.queue.length = 0;
    this.requests.length = 0;
    this.count = 0;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer({ noDelay: true }, (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent && !res.destroyed) {
          sendJson(res, 500, { error: { message: `fake-llm: ${err instanceof Error ? err.message : String(err)}`, type: 'server_error', code: null } });
        } else {
          res.destroy();
        }
      });
    });
    server.on('connection', (s: Socket) => s.setNoDelay(true));
    server.keepAliveTimeout = 30_000;
    this.server = server;
    const host = this.opts.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port: this.opts.port ?? 0, host, backlog: 4096 }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    this._port = typeof addr === 'object' && addr ? addr.port : 0;
    this._url = `http://${host.includes(':') ? `[${host}]` : host}:${this._port}`;
  }

  /** closes the server and destroys open sockets (stalled ones included) */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  private authorized(api: Api, req: IncomingMessage): boolean {
    const key = this.opts.apiKey;
    if (key === undefined) return true;
    const auth = req.headers.authorization;
    if (auth === `Bearer ${key}`) return true;
    return api === 'anthropic' && req.headers['x-api-key'] === key;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    let api: Api;
    if (path === '/v1/chat/completions' || path === '/chat/completions') api = 'openai';
    else if (path === '/v1/messages' || path === '/messages') api = 'anthropic';
    else if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
      req.resume();
      if (this.opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.opts.apiKey}` && req.headers['x-api-key'] !== this.opts.apiKey) {
        sendJson(res, 401, openaiErrorBody(401));
        return;
      }
      sendJson(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] });
      return;
    } else {
      req.resume();
      sendJson(res, 404, openaiErrorBody(404, `fake-llm: no route ${req.method ?? ''} ${path}`));
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      sendJson(res, 405, errorBody(api, 405, `fake-llm: method ${req.method ?? ''} not allowed`));
      return;
    }

    const conn = new Conn(res); // before any await, so an early client close is seen
    const raw = await readBody(req);
    let body: any;
    let malformed = false;
    try {
      body = JSON.parse(raw);
    } catch {
      malformed = true;
    }
    const freq: FakeRequest = { api, body, headers: req.headers, index: this.count++ };
    if (this.opts.recordRequests !== false) this.requests.push(freq);
    if (malformed || body === null || typeof body !== 'object') {
      sendJson(res, 400, errorBody(api, 400, 'fake-llm: request body is not a JSON object'));
      return;
    }
    if (!this.authorized(api, req)) {
      sendJson(res, 401, errorBody(api, 401));
      return;
    }

    const queued = this.queue.shift();
    const script = queued ?? (await this.fallback(freq));
    if (!isScript(script)) throw new Error('responder did not return a FakeScript array');

    const usage: Usage = {
      prompt: this.opts.usage?.promptTokens ?? Math.ceil(raw.length / 4),
      completion: 0,
      ...(this.opts.usage?.cachedTokens ? { cached: this.opts.usage.cachedTokens } : {}),
    };
    if (body.stream === true) {
      const em = api === 'openai' ? openaiEmitter(body, body.stream_options?.include_usage === true) : anthropicEmitter(body, usage.prompt);
      await this.runStream(conn, api, script, em, usage);
    } else {
      await this.runPlain(conn, api, body, script, usage);
    }
  }

  private async runStream(conn: Conn, api: Api, script: FakeScript, em: Emitter, usage: Usage): Promise<void> {
    const res = conn.res;
    const hasToolCall = script.some((s) => s.kind === 'toolCall');
    let started = false;
    const begin = (writePreamble = true): void => {
      if (started) return;
      started = true;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      if (writePreamble) res.write(em.start());
    };
    const emitTokens = async (tokens: string[], delayMs: number): Promise<void> => {
      for (const tok of tokens) {
        if (delayMs > 0) await conn.sleep(delayMs);
        if (conn.closed) return;
        usage.completion++;
        const p = conn.write(em.text(tok));
        if (p) await p;
      }
    };
    for (const step of script) {
      if (conn.closed) return;
      switch (step.kind) {
        case 'delay':
          await conn.sleep(step.ms);
          break;
        case 'error':
          if (!started) sendError(res, api, step);
          else res.end(em.midStreamError(step.status, step.body));
          return;
        case 'text':
          begin();
          await emitTokens(tokenize(step.text), step.tokenDelayMs ?? 0);
          break;
        case 'raw': {
          begin();
          const p = conn.write(step.data);
          if (p) await p;
          break;
        }
        case 'toolCall': {
          begin();
          const args = toolArgsJson(step.args);
          usage.completion += Math.max(1, Math.ceil(args.length / 4));
          const id = step.id ?? (api === 'openai' ? `call_${nextId()}` : `toolu_${nextId()}`);
          const p = conn.write(em.toolCall(id, step.name, args));
          if (p) await p;
          break;
        }
        case 'stall': {
          begin();
          const tokens = tokenize(step.text ?? '');
          await emitTokens(tokens.slice(0, step.afterTokens ?? tokens.length), 0);
          return; // leave the response open until the client or the server closes it
        }
        case 'disconnect': {
          if (!started && step.afterTokens <= 0) {
            conn.destroy();
            return;
          }
          // Build the remaining bytes as one write and wait until it reached the kernel: Node corks
          // the socket until the next tick, so destroying right after res.write() would drop them.
          let out = '';
          if (!started) {
            begin(false);
            out = em.start();
          }
          for (const tok of tokenize(step.text).slice(0, Math.max(0, step.afterTokens))) {
            usage.completion++;
            out += em.text(tok);
          }
          await conn.writeFlushed(out);
          conn.destroy();
          return;
        }
      }
    }
    if (conn.closed) return;
    begin();
    if (this.opts.usage?.completionTokens !== undefined) usage.completion = this.opts.usage.completionTokens;
    res.end(em.finish(hasToolCall, usage));
  }

  private async runPlain(conn: Conn, api: Api, body: any, script: FakeScript, usage: Usage): Promise<void> {
    let text = '';
    const calls: { id: string; name: string; args: string; input: unknown }[] = [];
    for (const step of script) {
      if (conn.closed) return;
      switch (step.kind) {
        case 'delay':
          await conn.sleep(step.ms);
          break;
        case 'error':
          sendError(conn.res, api, step);
          return;
        case 'text': {
          const tokens = tokenize(step.text);
          usage.completion += tokens.length;
          if (step.tokenDelayMs) await conn.sleep(step.tokenDelayMs * tokens.length);
          text += step.text;
          break;
        }
        case 'toolCall': {
          const args = toolArgsJson(step.args);
          usage.completion += Math.max(1, Math.ceil(args.length / 4));
          const id = step.id ?? (api === 'openai' ? `call_${nextId()}` : `toolu_${nextId()}`);
          calls.push({ id, name: step.name, args, input: typeof step.args === 'string' ? safeParse(step.args) : (step.args ?? {}) });
          break;
        }
        case 'raw':
          break;
        case 'stall':
          return; // never answer
        case 'disconnect':
          conn.destroy();
          return;
      }
    }
    if (conn.closed) return;
    if (this.opts.usage?.completionTokens !== undefined) usage.completion = this.opts.usage.completionTokens;
    const model = typeof body.model === 'string' ? body.model : 'fake-model';
    const hasToolCall = calls.length > 0;
    if (api === 'openai') {
      const message: Record<string, unknown> = { role: 'assistant', content: text === '' && hasToolCall ? null : text, refusal: null };
      if (hasToolCall) {
        message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } }));
      }
      sendJson(conn.res, 200, {
        id: `chatcmpl-${nextId()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: hasToolCall ? 'tool_calls' : 'stop' }],
        usage: openaiUsage(usage),
      });
    } else {
      const content: unknown[] = [];
      if (text !== '') content.push({ type: 'text', text });
      for (const c of calls) content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input });
      sendJson(conn.res, 200, {
        id: `msg_${nextId()}`,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: hasToolCall ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: usage.prompt, output_tokens: usage.completion },
      });
    }
  }
}

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

// ---------------------------------------------------------------------------------------------
// Standalone mode

function flag(args: string[], name: string, dflt: number): number {
  const i = args.indexOf(name);
  const eq = args.find((a) => a.startsWith(`${name}=`));
  const raw = i >= 0 ? args[i + 1] : eq?.slice(name.length + 1);
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`fake-llm: bad value for ${name}: ${raw}`);
  return n;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const port = flag(args, '--port', 0);
  const tokens = flag(args, '--tokens', 20);
  const tokenDelayMs = flag(args, '--token-delay-ms', 0);
  const text = Array.from({ length: tokens }, (_, i) => `tok${i + 1}`).join(' ');
  const script = reply(text, tokenDelayMs > 0 ? tokenDelayMs : undefined);
  const fake = new FakeLlm({ port, fallback: () => script, recordRequests: false });
  await fake.start();
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  const stop = (): void => {
    fake.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
