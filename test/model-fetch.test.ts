import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canUseModelFetch, modelFetch } from '../providers/model-fetch.js';

// The lean transport model calls take (providers/model-fetch.ts) must keep the
// parts of fetch's behaviour the SDKs rely on.
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      switch (req.url) {
        case '/echo':
          res.writeHead(200, { 'content-type': 'application/json', 'x-seen-auth': req.headers.authorization ?? '' });
          return res.end(JSON.stringify({ method: req.method, body }));
        case '/gzip':
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          return res.end(gzipSync(JSON.stringify({ ok: true })));
        case '/busy':
          res.writeHead(429, { 'retry-after': '7' });
          return res.end('{"error":{"message":"slow down"}}');
        case '/empty':
          res.writeHead(204);
          return res.end();
        case '/drop':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {"part":1}\n\n');
          return setTimeout(() => res.socket?.destroy(), 20);
        case '/slow':
          return setTimeout(() => res.end('late'), 2_000);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('model fetch', () => {
  it('sends method, headers and body, and returns status, headers and body', async () => {
    const res = await modelFetch(`${base}/echo`, { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{"a":1}' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-seen-auth')).toBe('Bearer k');
    expect(await res.json()).toEqual({ method: 'POST', body: '{"a":1}' });
  });

  it('decodes a gzip body', async () => {
    const res = await modelFetch(`${base}/gzip`);
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(await res.json()).toEqual({ ok: true });
  });

  it('passes an error status and Retry-After through', async () => {
    const res = await modelFetch(new URL(`${base}/busy`), { method: 'POST', body: '{}' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.text()).toContain('slow down');
  });

  it('gives a body-less status a null body', async () => {
    const res = await modelFetch(`${base}/empty`);
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it('fails the body when the connection drops mid-stream, after what arrived', async () => {
    const res = await modelFetch(`${base}/drop`);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"part":1');
    await expect(reader.read()).rejects.toThrow('fetch failed');
  });

  it('rejects with an AbortError when the signal fires before the answer', async () => {
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 50);
    await expect(modelFetch(`${base}/slow`, { signal: ctl.signal })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('refuses an unreachable server like fetch does', async () => {
    await expect(modelFetch('http://127.0.0.1:1/x')).rejects.toThrow('fetch failed');
  });

  it('leaves requests it does not handle to the original fetch', () => {
    expect(canUseModelFetch('http://x/', { body: 'text' })).toBe(true);
    expect(canUseModelFetch(new Request('http://x/'))).toBe(false);
    expect(canUseModelFetch('http://x/', { body: new ReadableStream() })).toBe(false);
  });
});
