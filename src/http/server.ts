import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body is larger than ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** Named groups of the route pattern. */
  params: Record<string, string>;
  /** Reads the raw body, refusing more than maxBodyBytes. */
  body(): Promise<Buffer>;
}

export type Handler = (ctx: RequestContext) => Promise<void> | void;

interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
}

/**
 * A small router on node:http: the gateway's hot path is one JSON POST and an
 * SSE stream, so no framework sits between the socket and the handler.
 */
export class HttpServer {
  private readonly routes: Route[] = [];
  private server?: Server;

  constructor(
    private readonly opts: { host: string; port: number; maxBodyBytes: number; log: Logger },
    private readonly notFound: Handler = ({ res }) => sendJson(res, 404, { error: { message: 'not found', type: 'invalid_request_error', param: null, code: 'not_found' } }),
  ) {}

  /** path: literal segments and `:name` parameters, e.g. /v1/conversations/:id/messages */
  route(method: string, path: string, handler: Handler): void {
    const pattern = new RegExp('^' + path.replace(/:([a-zA-Z]+)/g, '(?<$1>[^/]+)') + '$');
    this.routes.push({ method, pattern, handler });
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.dispatch(req, res));
    this.server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.opts.port, this.opts.host, () => resolve());
    });
  }

  get port(): number {
    return (this.server?.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://${this.opts.host.includes(':') ? `[${this.opts.host}]` : this.opts.host}:${this.port}`;
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let handler = this.notFound;
    let params: Record<string, string> = {};
    let pathMatched = false;
    for (const r of this.routes) {
      const m = r.pattern.exec(url.pathname);
      if (!m) continue;
      pathMatched = true;
      if (r.method !== req.method) continue;
      handler = r.handler;
      params = Object.fromEntries(Object.entries(m.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]));
      break;
    }
    if (handler === this.notFound && pathMatched) {
      handler = ({ res: r }) => sendJson(r, 405, { error: { message: `method ${req.method} not allowed`, type: 'invalid_request_error', param: null, code: 'method_not_allowed' } });
    }
    const limit = this.opts.maxBodyBytes;
    const ctx: RequestContext = { req, res, url, params, body: () => readBody(req, limit) };
    try {
      await handler(ctx);
    } catch (err) {
      if (isUnavailable(err)) {
        // The store or queue is restarting: say so, and when to try again (nothing was accepted).
        this.opts.log.warn({ err: (err as Error).message, path: url.pathname }, 'a backing service is unavailable');
        if (!res.headersSent) sendJson(res, 503, { error: { message: 'A backing service (database or queue) is unavailable right now; nothing was accepted. Retry shortly.', type: 'server_error', param: null, code: 'service_unavailable' } }, { 'retry-after': '1' });
        else res.end();
        return;
      }
      this.opts.log.error({ err, path: url.pathname }, 'request failed');
      if (!res.headersSent) sendJson(res, 500, { error: { message: 'internal error', type: 'server_error', param: null, code: null } });
      else res.end();
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

/** Connection-level failures of Postgres or Redis (restarting, unreachable), as opposed to bugs. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e?.code && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006'].includes(e.code)) return true;
  return /Connection terminated|connection is closed|Connection is closed|server closed the connection|the database system is (starting up|shutting down)/i.test(e?.message ?? '');
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
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}
