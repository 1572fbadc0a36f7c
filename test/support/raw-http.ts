/**
 * HTTP/1.1 over a bare TCP socket, for requests no HTTP client would send
 * (malformed paths, NUL, duplicate or invalid headers, lying Content-Length).
 * Only for 127.0.0.1 in tests.
 */
import { connect } from 'node:net';

export interface RawResponse {
  /** How the exchange ended: a complete response, the server closing, a socket error, or no answer in time. */
  outcome: 'complete' | 'closed' | 'error' | 'timeout';
  error?: string;
  status?: number;
  headers: Record<string, string>;
  /** The body, de-chunked when the response was chunked. */
  body: Buffer;
  /** The first bytes received, for failure messages. */
  head: string;
}

/** Builds the bytes of a request: request line, headers as given (repeats allowed), CRLF, body. */
export function buildRequest(method: string, target: string | Buffer, headers: Array<[string, string | Buffer]>, body?: Buffer | string): Buffer {
  const parts: Buffer[] = [
    Buffer.from(`${method} `, 'latin1'),
    Buffer.isBuffer(target) ? target : Buffer.from(target, 'latin1'),
    Buffer.from(' HTTP/1.1\r\n', 'latin1'),
  ];
  for (const [k, v] of headers) parts.push(Buffer.from(`${k}: `, 'latin1'), Buffer.isBuffer(v) ? v : Buffer.from(v, 'latin1'), Buffer.from('\r\n', 'latin1'));
  parts.push(Buffer.from('\r\n', 'latin1'));
  if (body !== undefined) parts.push(Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'));
  return Buffer.concat(parts);
}

/**
 * Sends the bytes on a new connection to 127.0.0.1:port and reads one response
 * (by Content-Length, chunked framing, or until the server closes). Streams
 * (text/event-stream) count as answered once their headers arrived and either
 * end or go quiet for `streamIdleMs`.
 */
export function rawExchange(
  port: number,
  data: Buffer,
  opts: { timeoutMs?: number; head?: boolean; streamIdleMs?: number; halfClose?: boolean } = {},
): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let done = false;
    let idle: NodeJS.Timeout | undefined;
    const finish = (outcome: RawResponse['outcome'], error?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(idle);
      socket.destroy();
      resolve({ ...parse(Buffer.concat(chunks), opts.head === true), outcome, ...(error ? { error } : {}) });
    };
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs ?? 15_000);
    // halfClose: FIN after the request, so a body shorter than its Content-Length ends at EOF instead of
    // waiting (node answers a request cut short by EOF with a 400, and aborts one still being handled).
    socket.on('connect', () => (opts.halfClose ? socket.end(data) : socket.write(data)));
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const p = parse(Buffer.concat(chunks), opts.head === true);
      if (p.complete) return finish('complete');
      if (p.status !== undefined && /event-stream/.test(p.headers['content-type'] ?? '')) {
        clearTimeout(idle);
        idle = setTimeout(() => finish('complete'), opts.streamIdleMs ?? 3_000);
      }
    });
    socket.on('end', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('error', (e: NodeJS.ErrnoException) => finish(chunks.length ? 'closed' : 'error', e.code ?? e.message));
  });
}

function parse(buf: Buffer, head: boolean): Omit<RawResponse, 'outcome'> & { complete: boolean } {
  const headEnd = buf.indexOf('\r\n\r\n');
  const text = buf.subarray(0, Math.min(buf.length, 300)).toString('latin1');
  if (headEnd < 0) return { complete: false, headers: {}, body: Buffer.alloc(0), head: text };
  const lines = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const status = m ? Number(m[1]) : undefined;
  let body = buf.subarray(headEnd + 4);
  let complete = false;
  if (status === undefined) return { complete: false, headers, body, head: text };
  if (status === 100) {
    // An interim 100 Continue: the real answer follows.
    const rest = parse(body, head);
    return rest.status !== undefined ? rest : { complete: false, headers, body: Buffer.alloc(0), head: text };
  }
  if (head || status === 204 || status === 304) {
    complete = true;
    body = Buffer.alloc(0); // no body: whatever follows is another answer
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const d = dechunk(body);
    if (d) {
      body = d;
      complete = true;
    }
  } else if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (body.length >= n) {
      body = body.subarray(0, n);
      complete = true;
    }
  }
  return { complete, status, headers, body, head: text };
}

/** The body of a complete chunked message, or null while incomplete. */
function dechunk(buf: Buffer): Buffer | null {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size)) return null;
    if (size === 0) return buf.indexOf('\r\n', eol + 2) >= 0 ? Buffer.concat(out) : null;
    if (buf.length < eol + 2 + size + 2) return null;
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}
