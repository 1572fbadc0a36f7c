/**
 * The shared "fetch and check an image attachment" helper (src/channel/image-attachment.ts) against
 * a real local server: a body over the limit is cut off while streaming (no content-length to trust),
 * a failed download and a redirect to a private address through the guarded path are notes, never throws.
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchImageAttachment } from '../src/channel/index.js';
import { BIG_PNG, PNG } from './support/images.js';

let server: Server;
let base = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/ok.png') return res.end(PNG);
    if (req.url === '/chunked.png') {
      res.writeHead(200, { 'content-type': 'image/png' }); // no content-length
      res.write(BIG_PNG.subarray(0, 3000));
      setTimeout(() => res.end(BIG_PNG.subarray(3000)), 20);
      return;
    }
    res.writeHead(404).end('no');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('fetchImageAttachment', () => {
  it('keeps a fixed-host image with its bytes, typed by them', async () => {
    expect(await fetchImageAttachment({ name: 'a', declaredType: 'image/jpeg', url: `${base}/ok.png`, maxBytes: 4096, fixedHost: true })).toEqual({
      name: 'a',
      contentType: 'image/png',
      size: PNG.length,
      data: PNG.toString('base64'),
    });
  });

  it('cuts a streamed body past maxBytes', async () => {
    const a = await fetchImageAttachment({ name: 'b', declaredType: 'image/png', url: `${base}/chunked.png`, maxBytes: 4096, fixedHost: true });
    expect(a).toEqual({ name: 'b', contentType: 'image/png', note: 'image not shown: larger than the 4096-byte limit' });
  });

  it('a failed download is a note', async () => {
    const a = await fetchImageAttachment({ name: 'c', url: `${base}/missing.png`, maxBytes: 4096, fixedHost: true });
    expect(a.note).toBe('image not shown: the download answered 404');
    expect(a.data).toBeUndefined();
  });

  it('a URL that is not a fixed platform host goes through the SSRF guard: loopback is refused', async () => {
    const a = await fetchImageAttachment({ name: 'd', url: `${base}/ok.png`, maxBytes: 4096 });
    expect(a.note).toMatch(/^image not shown: it could not be downloaded \(SSRF guard refused URL/);
    expect(a.data).toBeUndefined();
  });
});
