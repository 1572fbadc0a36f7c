import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { classifyUnavailable } from '../../adapters/errors/types.js';
import { BodyTooLargeError, ClientGoneError, HttpError, sendCoreError, sendError } from './errors.js';
import { sendJson } from './json-response.js';

// The error classes and answers live in errors.ts; re-exported for the modules that import them from here.
export { BodyTooLargeError, ClientGoneError, HttpError, sendError, sendJson };

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** Named groups of the route pattern, percent-decoded (never malformed, no control characters). */
  params: Record<string, string>;
  /** Reads the raw body, refusing more than maxBodyBytes (BodyTooLargeError, answered 413). */
  body(): Promise<Buffer>;
  /**
   * Reads the body as a JSON object: 415 for a content type that is not JSON,
   * 413 beyond maxBodyBytes, 400 for anything parseJson refuses. `hint` is the
   * expected shape, for the 400 message.
   */
  json(opts?: { hint?: string; empty?: 'allow' }): Promise<Record<string, unknown>>;
}

export type Handler = (ctx: RequestContext) => Promise<void> | void;

interface Route {
  method: string;
  path: string;
  pattern: RegExp;
  handler: Handler;
}

/** Longest path parameter accepted (conversation names, codes, ids are far shorter). */
const MAX_PARAM_CHARS = 1024;
/** C0 controls and DEL: never part of a name, and NUL is refused by Postgres text. */
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/**
 * A small router on node:http: the gateway's hot path is one JSON POST and an
 * SSE stream, so no framework sits between the socket and the handler.
 *
 * Nothing a client sends can throw out of it: malformed request lines and
 * headers (the parser's clientError), malformed paths, bodies and JSON, and
 * errors of the request and response streams all end as an HTTP answer (or a
 * closed socket when nobody is left to answer), never as an exception.
 */
export class HttpServer {
  private readonly routes: Route[] = [];
  private server?: Server;
  /** False between start({ serve: false }) and serve(): requests are answered 503 while the gateway starts. */
  private serving = true;

  constructor(
    private readonly opts: { host: string; port: number; maxBodyBytes: number; log: Logger },
    private readonly notFound: Handler = ({ res }) => sendError(res, 404, 'not found', { code: 'not_found' }),
  ) {}

  /** path: literal segments and `:name` parameters, e.g. /v1/conversations/:id/messages */
  route(method: string, path: string, handler: Handler): void {
    const pattern = new RegExp('^' + path.replace(/:([a-zA-Z]+)/g, '(?<$1>[^/]+)') + '$');
    this.routes.push({ method, path, pattern, handler });
  }

  /** Every route registered, as given to route() (for tests that must reach each one). */
  routeTable(): Array<{ method: string; path: string }> {
    return this.routes.map((r) => ({ method: r.method, path: r.path }));
  }

  /**
   * Binds the port. With { serve: false } every request is answered 503 (starting) until serve():
   * the gateway binds first, so a port in use fails before anything else is started.
   */
  async start(opts: { serve?: boolean } = {}): Promise<void> {
    this.serving = opts.serve !== false;
    // The Host header is checked in dispatch, so that its absence is answered like every other bad request.
    const server = createServer({ requireHostHeader: false }, (req, res) => {
      this.dispatch(req, res).catch((err: unknown) => {
        // dispatch answers every error itself; this is the last line, should answering fail too.
        this.opts.log.error({ err }, 'answering a request failed');
        res.destroy();
      });
    });
    this.server = server;
    server.keepAliveTimeout = 65_000;
    server.on('clientError', (err, socket) => this.clientError(err, socket));
    // CONNECT (a proxy tunnel) is not served; without a listener node would drop the connection unanswered.
    server.on('connect', (_req, socket: Duplex) => rawAnswer(socket, 405, 'CONNECT is not supported.', 'method_not_allowed'));
    // An Expect header other than 100-continue.
    server.on('checkExpectation', (_req, res) => sendError(res, 417, 'Only "Expect: 100-continue" is supported.', { code: 'expectation_failed' }));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => {
        this.server = undefined; // never listened: nothing to close
        reject(err);
      });
      server.listen(this.opts.port, this.opts.host, () => {
        server.removeAllListeners('error');
        resolve();
      });
    });
    // After listening, a server error (EMFILE on accept...) is logged, not thrown.
    server.on('error', (err) => this.opts.log.error({ err }, 'http server error'));
  }

  /** Starts answering requests (after start({ serve: false })). */
  serve(): void {
    this.serving = true;
  }

  get port(): number {
    return (this.server?.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://${this.opts.host.includes(':') ? `[${this.opts.host}]` : this.opts.host}:${this.port}`;
  }

  /**
   * The request line or headers did not parse (bad Content-Length, duplicate
   * Content-Length, invalid header characters, headers too large, a timeout):
   * there is no request object, so the answer is written to the socket itself.
   */
  private clientError(err: Error & { code?: string }, socket: Duplex): void {
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, message, code] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request headers too large.', 'headers_too_large']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'The request was not received in time.', 'request_timeout']
          : [400, `Malformed HTTP request (${err.code ?? 'parse error'}).`, 'malformed_request'];
    this.opts.log.debug({ code: err.code, reason: (err as { reason?: string }).reason }, 'refused a malformed request');
    rawAnswer(socket, status, message, code);
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A client gone mid-body, or a write after the socket closed, must not become an unhandled 'error' event.
    req.on('error', (err) => this.opts.log.debug({ err: err.message }, 'request stream error'));
    res.on('error', (err) => this.opts.log.debug({ err: err.message }, 'response stream error'));
    let path = '(unparsed)';
    try {
      if (!this.serving) {
        res.setHeader('retry-after', '1');
        throw new HttpError(503, 'The gateway is starting; retry shortly.', null, 'starting');
      }
      if (req.headers.host === undefined && req.httpVersion === '1.1')
        throw new HttpError(400, 'An HTTP/1.1 request needs a Host header.', null, 'missing_host');
      const url = requestUrl(req.url);
      path = url.pathname;
      for (const [k, v] of url.searchParams) {
        if (k.includes('\0') || v.includes('\0')) throw new HttpError(400, 'The query string must not contain NUL characters.', k, 'invalid_query');
      }
      let handler = this.notFound;
      let params: Record<string, string> = {};
      const allowed: string[] = [];
      for (const r of this.routes) {
        const m = r.pattern.exec(url.pathname);
        if (!m) continue;
        if (r.method !== req.method) {
          allowed.push(r.method);
          continue;
        }
        handler = r.handler;
        params = decodeParams(m.groups);
        break;
      }
      if (handler === this.notFound && allowed.length) {
        res.setHeader('allow', [...new Set(allowed)].join(', '));
        handler = ({ res: r }) => sendError(r, 405, `method ${req.method} not allowed`, { code: 'method_not_allowed' });
      }
      const limit = this.opts.maxBodyBytes;
      const body = () =>
        readBody(req, limit).catch((err: unknown) => {
          // Do not wait for (or read) the rest of an oversized body: answer and close.
          if (err instanceof BodyTooLargeError && !res.headersSent) res.setHeader('connection', 'close');
          throw err;
        });
      const ctx: RequestContext = {
        req,
        res,
        url,
        params,
        body,
        json: async (o = {}) => {
          checkJsonContentType(req);
          const raw = await body();
          if (!raw.length && o.empty === 'allow') return {};
          return parseJsonObject(raw, o.hint);
        },
      };
      await handler(ctx);
    } catch (err) {
      this.fail(res, err, path);
    }
  }

  /** The answer to a handler's error; never throws. */
  private fail(res: ServerResponse, err: unknown, path: string): void {
    try {
      if (err instanceof ClientGoneError) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) {
        if (!res.headersSent) sendError(res, err.status, err.message, { param: err.param, code: err.code });
        else res.end();
        return;
      }
      // A core error (kernel/errors.ts) whose code the HTTP table knows: its status, message and code.
      if (!res.headersSent && sendCoreError(res, err)) return;
      const unavailable = classifyUnavailable(err);
      if (unavailable) {
        // The store or queue is restarting or refusing: say so, and when to try again (nothing was accepted).
        this.opts.log.warn({ err: unavailable.message, code: unavailable.code, path }, 'a backing service is unavailable');
        // The client is told which service, not the host or the driver's text (those are in the log).
        const what = unavailable.code === 'queue_unavailable' ? 'The queue (Redis)' : 'The database';
        if (!res.headersSent)
          sendCoreError(res, unavailable, { type: 'server_error', message: `${what} is unavailable right now; nothing was accepted. Retry shortly.` });
        else res.end();
        return;
      }
      this.opts.log.error({ err, path }, 'request failed');
      if (!res.headersSent) sendError(res, 500, 'internal error');
      else res.end();
    } catch (e) {
      this.opts.log.error({ err: e, path }, 'could not answer a failed request');
      res.destroy();
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeIdleConnections();
      // Streams still open after a grace period are cut; their turns continue in the workers.
      setTimeout(() => s.closeAllConnections(), 2_000).unref();
    });
  }
}

/** An error answer written to the socket itself (no request or response object exists), then the connection closed. */
function rawAnswer(socket: Duplex, status: number, message: string, code: string): void {
  const body = JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** The request target as a URL: origin-form (/path?query) or absolute-form; anything else is a 400. */
function requestUrl(target: string | undefined): URL {
  const t = target ?? '/';
  try {
    // Prefixing keeps a path like //host/x a path (new URL('//host/x', base) would take it for a host).
    if (t.startsWith('/')) return new URL(`http://localhost${t}`);
    if (/^https?:\/\//i.test(t)) {
      const u = new URL(t);
      return new URL(`http://localhost${u.pathname}${u.search}`);
    }
  } catch {
    /* answered below */
  }
  throw new HttpError(400, 'The request target must be a path such as /v1/chat/completions.', null, 'invalid_path');
}

function decodeParams(groups: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(groups ?? {})) {
    let d: string;
    try {
      d = decodeURIComponent(v);
    } catch {
      throw new HttpError(400, `The path segment for "${k}" has malformed percent-encoding.`, k, 'invalid_path');
    }
    if (d.length > MAX_PARAM_CHARS) throw new HttpError(400, `The path segment for "${k}" is longer than ${MAX_PARAM_CHARS} characters.`, k, 'invalid_path');
    if (CONTROL_CHARS.test(d)) throw new HttpError(400, `The path segment for "${k}" contains control characters.`, k, 'invalid_path');
    out[k] = d;
  }
  return out;
}

/**
 * 415 unless the request says nothing about its type, says JSON
 * (application/json, application/*+json) in UTF-8, or says
 * application/x-www-form-urlencoded — what `curl -d` sends when no type is
 * given: that body is parsed as JSON too (form data then fails as invalid JSON,
 * a 400 that says so). No cross-site risk: every such route needs a bearer key.
 */
export function checkJsonContentType(req: IncomingMessage): void {
  const ct = req.headers['content-type'];
  if (ct === undefined || ct === '') return;
  const [type, ...params] = ct
    .toLowerCase()
    .split(';')
    .map((s) => s.trim());
  if (type === 'application/x-www-form-urlencoded' && params.length === 0) return;
  const json = type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type ?? '');
  const charset = params
    .find((p) => p.startsWith('charset='))
    ?.slice(8)
    .replace(/^"|"$/g, '');
  if (!json || (charset !== undefined && !['utf-8', 'utf8', 'us-ascii'].includes(charset))) {
    throw new HttpError(415, `Unsupported Content-Type "${ct.slice(0, 100)}": send the body as application/json (UTF-8).`, null, 'unsupported_media_type');
  }
}

/** Deepest nesting of arrays and objects accepted in a JSON body. */
export const MAX_JSON_DEPTH = 64;

/**
 * JSON.parse for request bodies: a 400 HttpError for invalid JSON, nesting
 * deeper than MAX_JSON_DEPTH or strings holding NUL; `__proto__` keys are
 * dropped (JSON.parse makes them own properties, harmless until some merge
 * copies them with assignment); lone surrogates become U+FFFD, as UTF-8 would.
 */
export function parseJson(raw: Buffer | string, hint?: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    throw new HttpError(400, `We could not parse the JSON body of your request.${hint ? ` Send ${hint}.` : ''}`, null, 'invalid_json');
  }
  return sanitizeJson(value);
}

/** parseJson, and the value must be an object (not null, an array or a scalar). */
export function parseJsonObject(raw: Buffer | string, hint?: string): Record<string, unknown> {
  const v = parseJson(raw, hint);
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new HttpError(400, `The request body must be a JSON object${hint ? `: ${hint}` : ''}.`, null, 'invalid_json');
  return v as Record<string, unknown>;
}

const SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function sanitizeJson(root: unknown): unknown {
  const clean = (s: string): string => {
    if (s.includes('\0')) throw new HttpError(400, 'JSON strings must not contain NUL characters (\\u0000).', null, 'invalid_value');
    return SURROGATE.test(s) ? s.replace(LONE_SURROGATE, '\uFFFD') : s;
  };
  if (typeof root === 'string') return clean(root);
  if (!root || typeof root !== 'object') return root;
  // Iterative, so no nesting can overflow the stack here.
  const stack: Array<[Record<string, unknown> | unknown[], number]> = [[root as Record<string, unknown>, 1]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (depth > MAX_JSON_DEPTH) throw new HttpError(400, `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`, null, 'invalid_json');
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const v = node[i];
        if (typeof v === 'string') node[i] = clean(v);
        else if (v && typeof v === 'object') stack.push([v as Record<string, unknown>, depth + 1]);
      }
      continue;
    }
    for (const k of Object.keys(node)) {
      if (k === '__proto__') {
        delete node[k];
        continue;
      }
      clean(k);
      const v = node[k];
      if (typeof v === 'string') node[k] = clean(v);
      else if (v && typeof v === 'object') stack.push([v as Record<string, unknown>, depth + 1]);
    }
  }
  return root;
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(new BodyTooLargeError(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        settled = true;
        req.off('data', onData);
        req.resume();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.on('end', () => {
      settled = true;
      resolve(Buffer.concat(chunks));
    });
    // A client that disconnects mid-body ends the read (an 'error' or a 'close' without 'end').
    const gone = () => {
      if (settled) return;
      settled = true;
      reject(new ClientGoneError());
    };
    req.on('error', gone);
    req.on('close', gone);
  });
}
