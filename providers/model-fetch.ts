import http from 'node:http';
import https from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';

/**
 * A fetch for model calls over node:http with keep-alive agents.
 *
 * The SDKs pi-ai drives call globalThis.fetch (undici in Node 20), whose
 * Request/Response/WebStreams machinery cost about 0.9 ms of CPU per streamed
 * completion on our 2-core bench machine, against about 0.2 ms for the same
 * exchange over node:http (see bench/gateway.js). Model calls are the one
 * fetch we make on every turn, so they take this path; anything it does not
 * handle (a Request object, a streamed or form body) goes to the original fetch.
 *
 * What it keeps of fetch's behaviour: the abort signal (rejects with an
 * AbortError), gzip/deflate/br bodies decoded, a body that errors when the
 * connection drops mid-stream. What it leaves out: redirects (model APIs do
 * not redirect; a 3xx reaches the SDK as is), cookies, caches.
 */
const agents = {
  'http:': new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
  'https:': new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
};

/** Status codes whose responses have no body (the Response constructor insists). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** The keep-alive agent model calls share for a protocol ('http:' or 'https:'). */
export function modelAgent(protocol: string): http.Agent | undefined {
  return agents[protocol as keyof typeof agents];
}

export function canUseModelFetch(input: unknown, init?: RequestInit): boolean {
  if (typeof input !== 'string' && !(input instanceof URL)) return false;
  const body = init?.body;
  return body == null || typeof body === 'string' || body instanceof Uint8Array;
}

export function modelFetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
  const url = input instanceof URL ? input : new URL(input);
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent) return Promise.reject(new TypeError(`unsupported protocol ${url.protocol}`));
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((v, k) => (headers[k] = v));
  headers['accept-encoding'] ??= 'gzip, deflate, br';
  const signal = init.signal ?? undefined;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const req = (url.protocol === 'https:' ? https : http).request(url, { method: init.method ?? 'GET', headers, agent, signal }, (res) => {
      const status = res.statusCode ?? 0;
      const out = new Headers();
      const raw = res.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) out.append(raw[i]!, raw[i + 1]!);
      const body = NULL_BODY.has(status) || init.method === 'HEAD' ? null : toWebStream(decodeBody(res), signal);
      if (!body) res.resume();
      // Decoded bodies no longer match these headers; fetch drops them too.
      if (body && res.headers['content-encoding']) {
        out.delete('content-encoding');
        out.delete('content-length');
      }
      resolve(new Response(body, { status, statusText: res.statusMessage ?? '', headers: out }));
    });
    req.on('error', (err) => reject(signal?.aborted ? abortError(signal) : connectionError(err)));
    req.end(init.body as string | Uint8Array | undefined);
  });
}

/** The decoded body; pipeline() carries a dropped connection through to the decoder's error. */
export function decodeBody(res: http.IncomingMessage): Readable {
  const lenient = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  switch (String(res.headers['content-encoding'] ?? '').toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return pipeline(res, zlib.createGunzip(lenient), () => {});
    case 'deflate':
      return pipeline(res, zlib.createInflate(lenient), () => {});
    case 'br':
      return pipeline(res, zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }), () => {});
    default:
      return res;
  }
}

/**
 * A pull-based web stream over a Node stream. Cheaper than Readable.toWeb for
 * a body read in small chunks, and it turns an early close (the server went
 * away mid-stream) into an error instead of a clean end.
 */
function toWebStream(src: Readable, signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        // As with fetch, an aborted call's body fails with the abort reason.
        controller.error(signal?.aborted ? abortError(signal) : connectionError(err));
      };
      src.on('data', (chunk: Buffer) => {
        if (settled) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
        if ((controller.desiredSize ?? 1) <= 0) src.pause();
      });
      src.on('end', () => {
        if (settled) return;
        settled = true;
        controller.close();
      });
      src.on('error', fail);
      src.on('close', () => fail(new Error('the connection closed before the response ended')));
    },
    pull() {
      src.resume();
    },
    cancel() {
      settled = true;
      src.destroy();
    },
  });
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Shaped like fetch's network failure, which the SDKs turn into a connection error. */
function connectionError(cause: Error): TypeError {
  return Object.assign(new TypeError('fetch failed'), { cause });
}
