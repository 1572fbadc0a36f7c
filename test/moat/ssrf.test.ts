/**
 * The SSRF guard: corpora through checkUrl, address classification, and
 * safeFetch against loopback servers only (127.0.0.1 / 127.0.0.2; 127.0.0.2 is
 * admitted through allowCidrs where a test needs a reachable "public" host).
 * Nothing here sends a packet outside 127.0.0.0/8: every resolver is either
 * static or a hand-built DNS server on 127.0.0.1.
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ipaddr from 'ipaddr.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAddress, checkUrl, loadUrlCorpus, type Resolver, SsrfBlockedError, safeFetch, staticResolver } from '../../moat/ssrf.js';

const here = dirname(fileURLToPath(import.meta.url));
const corpus = (name: string) => join(here, '..', 'corpora', 'ssrf', name);
const ALLOW_TEST_HOST = ['127.0.0.2/32'];

// ---------------------------------------------------------------------------
// helpers: loopback HTTP servers and a tiny DNS server

interface Hit {
  method: string;
  path: string;
  host: string | undefined;
  local: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface TestServer {
  server: http.Server;
  port: number;
  hits: Hit[];
  close(): Promise<void>;
}

function listen(server: http.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

async function startServer(host: string, handler: (req: http.IncomingMessage, res: http.ServerResponse, hit: Hit) => void, port = 0): Promise<TestServer> {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit: Hit = {
        method: req.method ?? '',
        path: req.url ?? '',
        host: req.headers.host,
        local: req.socket.localAddress,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      hits.push(hit);
      handler(req, res, hit);
    });
  });
  await listen(server, host, port);
  return {
    server,
    port: (server.address() as AddressInfo).port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Two servers on the same port, one on 127.0.0.2 and one on 127.0.0.1. */
async function startPair(
  handler: (req: http.IncomingMessage, res: http.ServerResponse, hit: Hit) => void,
): Promise<{ a: TestServer; b: TestServer; port: number }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const a = await startServer('127.0.0.2', handler);
    try {
      const b = await startServer('127.0.0.1', handler, a.port);
      return { a, b, port: a.port };
    } catch {
      await a.close();
    }
  }
  throw new Error('could not bind the same port on 127.0.0.1 and 127.0.0.2');
}

interface DnsServer {
  port: number;
  /** Queries seen, as "TYPE name" (A / AAAA / other). */
  queries: string[];
  count(type: string, name: string): number;
  close(): Promise<void>;
}

/**
 * A UDP DNS server on 127.0.0.1 answering by hand-built packets. `answer` gets
 * the query name, type (1 = A, 28 = AAAA) and how many queries of that
 * type/name came before (0-based); it returns addresses, or null for NXDOMAIN.
 * TTL 0, so nothing is cached between queries.
 */
async function startDns(answer: (name: string, qtype: number, nth: number) => string[] | null): Promise<DnsServer> {
  const sock = dgram.createSocket('udp4');
  const queries: string[] = [];
  const seen = new Map<string, number>();
  sock.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    let off = 12;
    const labels: string[] = [];
    while (off < msg.length && msg[off] !== 0) {
      const len = msg[off]!;
      labels.push(msg.subarray(off + 1, off + 1 + len).toString('ascii'));
      off += 1 + len;
    }
    off += 1;
    if (off + 4 > msg.length) return;
    const qtype = msg.readUInt16BE(off);
    off += 4;
    const name = labels.join('.').toLowerCase();
    const typeName = qtype === 1 ? 'A' : qtype === 28 ? 'AAAA' : String(qtype);
    queries.push(`${typeName} ${name}`);
    const key = `${qtype} ${name}`;
    const nth = seen.get(key) ?? 0;
    seen.set(key, nth + 1);

    const addrs = answer(name, qtype, nth);
    const records: Buffer[] = [];
    for (const a of addrs ?? []) {
      const ip = ipaddr.parse(a);
      const want = ip.kind() === 'ipv4' ? 1 : 28;
      if (want !== qtype) continue;
      const rdata = Buffer.from(ip.toByteArray());
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question name
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(0, 6); // TTL 0
      rr.writeUInt16BE(rdata.length, 10);
      records.push(rr, rdata);
    }
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    header.writeUInt16BE(0x8180 | (addrs === null ? 3 : 0), 2); // QR RD RA, rcode
    header.writeUInt16BE(1, 4); // qdcount
    header.writeUInt16BE(records.length / 2, 6); // ancount
    sock.send(Buffer.concat([header, msg.subarray(12, off), ...records]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', () => resolve()));
  return {
    port: sock.address().port,
    queries,
    count: (type, name) => queries.filter((q) => q === `${type} ${name}`).length,
    close: () => new Promise<void>((resolve) => sock.close(() => resolve())),
  };
}

/** A Resolver on node's own DNS client pointed at the test DNS server; counts its calls. */
function dnsResolver(port: number): Resolver & { calls: string[] } {
  const r = new dns.promises.Resolver({ timeout: 2000, tries: 2 });
  r.setServers([`127.0.0.1:${port}`]);
  const calls: string[] = [];
  const fn = async (host: string) => {
    calls.push(host);
    const [a, aaaa] = await Promise.allSettled([r.resolve4(host), r.resolve6(host)]);
    const out = [...(a.status === 'fulfilled' ? a.value : []), ...(aaaa.status === 'fulfilled' ? aaaa.value : [])];
    if (out.length === 0) throw a.status === 'rejected' ? a.reason : new Error(`no answers for ${host}`);
    return out;
  };
  return Object.assign(fn, { calls });
}

function counting(resolver: Resolver): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string) => {
    calls.push(host);
    return resolver(host);
  };
  return Object.assign(fn, { calls });
}

const mustNotResolve: Resolver = async (host) => {
  throw new Error(`resolver must not be called (asked for ${host})`);
};

// ---------------------------------------------------------------------------

describe('SSRF corpora', () => {
  const attacks = loadUrlCorpus(corpus('attacks.txt'));
  const benign = loadUrlCorpus(corpus('benign.txt'));

  it('has the promised sizes', () => {
    expect(attacks.length).toBeGreaterThanOrEqual(100);
    expect(benign.length).toBeGreaterThanOrEqual(50);
  });

  it('refuses every attack URL', async () => {
    const bypasses: string[] = [];
    for (const c of attacks) {
      const r = await checkUrl(c.url, { resolve: staticResolver(c.resolve) });
      if (r.allowed || !r.reason) bypasses.push(`${c.url} -> ${r.reason}`);
    }
    expect(bypasses).toEqual([]);
  });

  it('allows every benign URL, with a public address to connect to', async () => {
    const refused: string[] = [];
    for (const c of benign) {
      const r = await checkUrl(c.url, { resolve: staticResolver(c.resolve) });
      if (!r.allowed || !r.address || !checkAddress(r.address).allowed) refused.push(`${c.url} -> ${r.reason}`);
    }
    expect(refused).toEqual([]);
  });
});

describe('checkAddress', () => {
  const refused = [
    '127.0.0.1',
    '127.1',
    '0177.0.0.1',
    '0x7f.0.0.1',
    '0x7f000001',
    '2130706433',
    '127.0.1',
    '0x7f.0.0x0.01',
    '0.0.0.0',
    '0',
    '10.1.2.3',
    '100.64.0.1',
    '100.127.255.255',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.0.1',
    '192.0.0.8',
    '192.0.2.1',
    '192.88.99.2',
    '192.168.10.1',
    '198.18.0.1',
    '198.19.0.1',
    '198.51.100.1',
    '203.0.113.1',
    '224.0.0.251',
    '239.1.1.1',
    '240.0.0.1',
    '255.255.255.255',
    '１２７.０.０.１',
    '127。0。0。1',
    '::1',
    '::',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::127.0.0.1',
    '::ffff:0:7f00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::1',
    '2002:7f00:1::1',
    '2002:a00:1::',
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    '[fe80::1%25eth0]',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '100::1',
    '3fff::1',
    '5f00::1',
    '2001:2::1',
    '2001:10::1',
    'not-an-ip',
    '',
    '1.2.3.4.5',
    '256.0.0.1',
    'localhost',
  ];
  const allowed = [
    '8.8.8.8',
    '93.184.216.34',
    '1.1.1.1',
    '0x08080808',
    '134744072',
    '172.32.0.1',
    '100.128.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '[2a00:1450:4001:82a::200e]',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:5db8:d822::1',
  ];
  it.each(refused)('refuses %s', (a) => {
    const v = checkAddress(a);
    expect(v.allowed).toBe(false);
    expect(v.reason).not.toBe('');
  });
  it.each(allowed)('allows %s', (a) => {
    expect(checkAddress(a).allowed).toBe(true);
  });
  it('names the range in the reason', () => {
    expect(checkAddress('169.254.169.254').reason).toMatch(/link-local/);
    expect(checkAddress('100.64.1.1').reason).toMatch(/carrier-grade NAT/);
    expect(checkAddress('::ffff:10.0.0.1').reason).toMatch(/10\.0\.0\.1.*private/);
    expect(checkAddress('2002:c0a8:101::1').reason).toMatch(/6to4.*192\.168\.1\.1/);
  });
  it('honours allowCidrs (and only them)', () => {
    expect(checkAddress('10.1.2.3', { allowCidrs: ['10.1.0.0/16'] }).allowed).toBe(true);
    expect(checkAddress('::ffff:10.1.2.3', { allowCidrs: ['10.1.0.0/16'] }).allowed).toBe(true);
    expect(checkAddress('10.2.0.1', { allowCidrs: ['10.1.0.0/16'] }).allowed).toBe(false);
    expect(checkAddress('127.0.0.2', { allowCidrs: ['127.0.0.2'] }).allowed).toBe(true);
    expect(checkAddress('127.0.0.1', { allowCidrs: ['127.0.0.2'] }).allowed).toBe(false);
    expect(checkAddress('fd00::5', { allowCidrs: ['fd00::/64'] }).allowed).toBe(true);
    expect(() => checkAddress('10.0.0.1', { allowCidrs: ['10.0.0.0/99'] })).toThrow(/allowCidrs/);
  });
});

describe('checkUrl', () => {
  it('refuses other schemes, userinfo, bad ports and empty hosts with clear reasons', async () => {
    const opts = { resolve: mustNotResolve };
    expect((await checkUrl('file:///etc/passwd', opts)).reason).toMatch(/scheme file:/);
    expect((await checkUrl('gopher://example.com/_x', opts)).reason).toMatch(/scheme gopher:/);
    expect((await checkUrl('javascript:alert(1)', opts)).reason).toMatch(/scheme/);
    expect((await checkUrl('http://user@example.com/', opts)).reason).toMatch(/userinfo/);
    expect((await checkUrl('http://good.com@evil.com/', opts)).reason).toMatch(/userinfo/);
    expect((await checkUrl('http://@example.com/', opts)).reason).toMatch(/userinfo/);
    expect((await checkUrl('http://example.com:0/', opts)).reason).toMatch(/port/);
    expect((await checkUrl('http://example.com:25/', opts)).reason).toMatch(/port 25/);
    expect((await checkUrl('http:///', opts)).allowed).toBe(false);
    expect((await checkUrl('', opts)).reason).toMatch(/empty/);
    expect((await checkUrl('http://[fe80::1%25eth0]/', opts)).reason).toMatch(/zone id/);
  });

  it('decides IP literals and blocked names without DNS', async () => {
    for (const u of [
      'http://0x7f.1/',
      'http://[::ffff:7f00:1]/',
      'http://localhost./',
      'http://ｌｏｃａｌｈｏｓｔ/',
      'http://metadata.google.internal/',
      'http://8.8.8.8/',
    ]) {
      const r = await checkUrl(u, { resolve: mustNotResolve });
      expect(r.reason).not.toMatch(/resolver must not be called/);
    }
    const r = await checkUrl('http://127。0。0。1:8080/x', { resolve: mustNotResolve });
    expect(r).toMatchObject({ allowed: false, url: 'http://127.0.0.1:8080/x', address: '127.0.0.1' });
  });

  it('refuses when ANY DNS answer is private, and returns a checked address', async () => {
    const resolve = staticResolver(['mixed.test:93.184.216.34', 'mixed.test:10.0.0.7', 'ok.test:93.184.216.34', 'ok.test:2606:4700::1']);
    const bad = await checkUrl('http://mixed.test/', { resolve });
    expect(bad).toMatchObject({ allowed: false, address: '10.0.0.7' });
    const good = await checkUrl('https://OK.test./a?b#c', { resolve });
    expect(good).toMatchObject({ allowed: true, address: '93.184.216.34', host: 'ok.test.' });
  });

  it('fails closed on DNS errors and empty answers', async () => {
    expect((await checkUrl('http://nowhere.test/', { resolve: staticResolver([]) })).reason).toMatch(/DNS resolution failed/);
    expect((await checkUrl('http://empty.test/', { resolve: async () => [] })).reason).toMatch(/no addresses/);
  });

  it('honours allowHosts and allowCidrs', async () => {
    const resolve = staticResolver(['api.corp.example.com:10.20.0.5', 'localhost:127.0.0.1']);
    expect((await checkUrl('http://api.corp.example.com/', { resolve })).allowed).toBe(false);
    expect((await checkUrl('http://api.corp.example.com/', { resolve, allowCidrs: ['10.20.0.0/16'] })).allowed).toBe(true);
    expect((await checkUrl('http://api.corp.example.com/', { resolve, allowHosts: ['API.corp.example.com.'] })).allowed).toBe(true);
    expect((await checkUrl('http://localhost:9000/', { resolve, allowHosts: ['localhost'] })).allowed).toBe(true);
    expect((await checkUrl('http://other.corp.example.com/', { resolve, allowHosts: ['api.corp.example.com'] })).allowed).toBe(false);
  });
});

describe('staticResolver and loadUrlCorpus', () => {
  it('answers every pair for a host and fails unknown hosts', async () => {
    const r = staticResolver(['a.test:1.2.3.4', 'A.test.:2606:4700::1', 'b.test:[::1]']);
    expect(await r('a.test')).toEqual(['1.2.3.4', '2606:4700::1']);
    expect(await r('b.test')).toEqual(['::1']);
    await expect(r('c.test')).rejects.toThrow(/ENOTFOUND/);
    expect(() => staticResolver(['no-address'])).toThrow(TypeError);
  });
  it('parses the corpus format', () => {
    const line = loadUrlCorpus(corpus('attacks.txt')).find((c) => c.url === 'http://multi.example.com/');
    expect(line).toEqual({ url: 'http://multi.example.com/', resolve: ['multi.example.com:93.184.216.34', 'multi.example.com:127.0.0.1'] });
  });
});

// ---------------------------------------------------------------------------

describe('safeFetch against loopback servers', () => {
  let pair: { a: TestServer; b: TestServer; port: number };
  let secret: TestServer;
  let dnsSrv: DnsServer;

  beforeAll(async () => {
    secret = await startServer('127.0.0.1', (_req, res) => res.end('the secret'));
    // The same handler answers on 127.0.0.2 (admitted via allowCidrs) and 127.0.0.1 (must never be reached).
    pair = await startPair((req, res, hit) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const redirect = (status: number, location: string) => {
        res.writeHead(status, { location });
        res.end();
      };
      switch (url.pathname) {
        case '/whoami':
          res.end(`served by ${hit.local}`);
          return;
        case '/echo':
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ method: hit.method, body: hit.body, headers: hit.headers }));
          return;
        case '/to-secret':
          return redirect(302, `http://127.0.0.1:${secret.port}/secret`);
        case '/to-secret-by-name':
          return redirect(307, `http://evil.test:${secret.port}/secret`);
        case '/to-localhost':
          return redirect(301, `http://localhost:${secret.port}/secret`);
        case '/to-metadata':
          return redirect(302, `http://metadata.google.internal:${secret.port}/computeMetadata/v1/`);
        case '/to-mapped':
          return redirect(302, `http://[::ffff:127.0.0.1]:${secret.port}/secret`);
        case '/to-file':
          return redirect(302, 'file:///etc/passwd');
        case '/relative':
          return redirect(302, '/whoami');
        case '/post-303':
          return redirect(303, '/echo');
        case '/post-307':
          return redirect(307, '/echo');
        case '/cross-origin':
          return redirect(302, `http://other.test:${pair.port}/echo`);
        case '/loop':
          return redirect(302, `/loop?n=${Number(url.searchParams.get('n') ?? 0) + 1}`);
        case '/big':
          res.end(Buffer.alloc(1024 * 1024, 0x61));
          return;
        case '/slow':
          res.writeHead(200);
          res.write('partial');
          return; // never ends
        case '/hang':
          return; // never answers
        default:
          res.statusCode = 404;
          res.end('not found');
      }
    });
  });

  afterAll(async () => {
    await Promise.all([pair?.a.close(), pair?.b.close(), secret?.close(), dnsSrv?.close()]);
  });

  const url = (path: string, host = '127.0.0.2') => `http://${host}:${pair.port}${path}`;

  it('DNS rebinding: connects to the checked address, one DNS lookup per hop, never to the later answer', async () => {
    // First A answer 127.0.0.2 (admitted for the test), every later one 127.0.0.1.
    dnsSrv = await startDns((name, qtype, nth) => {
      if (name === 'rebind.test') return qtype === 1 ? [nth === 0 ? '127.0.0.2' : '127.0.0.1'] : [];
      if (name === 'multi.test') return ['127.0.0.2', '127.0.0.1'];
      if (name === 'multi6.test') return ['127.0.0.2', '::1'];
      return null;
    });
    const resolve = dnsResolver(dnsSrv.port);
    const before = pair.b.hits.length;

    const res = await safeFetch(url('/whoami', 'rebind.test'), { resolve, allowCidrs: ALLOW_TEST_HOST });
    expect(res.status).toBe(200);
    expect(res.address).toBe('127.0.0.2');
    expect(res.body.toString()).toBe('served by 127.0.0.2');
    expect(pair.a.hits.at(-1)?.host).toBe(`rebind.test:${pair.port}`);
    expect(resolve.calls).toEqual(['rebind.test']);
    expect(dnsSrv.count('A', 'rebind.test')).toBe(1);

    // DNS has rebound to 127.0.0.1: the next check sees it and refuses; nothing connects.
    const err = await safeFetch(url('/whoami', 'rebind.test'), { resolve, allowCidrs: ALLOW_TEST_HOST }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SsrfBlockedError);
    expect((err as SsrfBlockedError).check.address).toBe('127.0.0.1');
    expect(dnsSrv.count('A', 'rebind.test')).toBe(2);
    expect(pair.b.hits.length).toBe(before);

    // Multi-answer DNS: one allowed and one private answer is refused outright.
    expect(await checkUrl(url('/', 'multi.test'), { resolve, allowCidrs: ALLOW_TEST_HOST })).toMatchObject({ allowed: false, address: '127.0.0.1' });
    expect(await checkUrl(url('/', 'multi6.test'), { resolve, allowCidrs: ALLOW_TEST_HOST })).toMatchObject({ allowed: false, address: '::1' });
    expect(pair.b.hits.length).toBe(before);
  });

  it('a Resolver that would rebind between check and connect is asked only once, and its first answer is used', async () => {
    let n = 0;
    const resolve = counting(async () => (n++ === 0 ? ['127.0.0.2'] : ['127.0.0.1']));
    const before = pair.b.hits.length;
    const res = await safeFetch(url('/whoami', 'flip.test'), { resolve, allowCidrs: ALLOW_TEST_HOST });
    expect(res.address).toBe('127.0.0.2');
    expect(res.body.toString()).toBe('served by 127.0.0.2');
    expect(resolve.calls).toEqual(['flip.test']);
    expect(pair.b.hits.length).toBe(before);
  });

  it('re-checks redirect hops: a same-host redirect is re-resolved and refused when the answer turned private', async () => {
    let n = 0;
    const resolve = counting(async () => (n++ === 0 ? ['127.0.0.2'] : ['127.0.0.1']));
    const before = pair.b.hits.length;
    const err = await safeFetch(url('/relative', 'flip.test'), { resolve, allowCidrs: ALLOW_TEST_HOST }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SsrfBlockedError);
    expect((err as SsrfBlockedError).hop).toBe(1);
    expect(resolve.calls).toEqual(['flip.test', 'flip.test']);
    expect(pair.b.hits.length).toBe(before);
  });

  it('follows allowed redirects, relative to the current URL', async () => {
    const res = await safeFetch(url('/relative'), { allowCidrs: ALLOW_TEST_HOST });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('served by 127.0.0.2');
    expect(res.redirects).toEqual([url('/whoami')]);
    expect(res.url).toBe(url('/whoami'));
  });

  // Every redirect target below is either on 127.0.0.1 or unresolvable here, so even a broken
  // guard could not send traffic off loopback (link-local literals are covered by checkUrl above).
  it.each([
    ['/to-secret', () => `http://127.0.0.1:${secret.port}/secret`],
    ['/to-secret-by-name', () => `http://evil.test:${secret.port}/secret`],
    ['/to-localhost', () => `http://localhost:${secret.port}/secret`],
    ['/to-mapped', () => `http://[::ffff:7f00:1]:${secret.port}/secret`],
    ['/to-metadata', () => `http://metadata.google.internal:${secret.port}/computeMetadata/v1/`],
    ['/to-file', () => 'file:///etc/passwd'],
  ])('refuses the redirect %s and never reaches its target', async (path, target) => {
    const before = secret.hits.length;
    const resolve = staticResolver(['evil.test:127.0.0.1']);
    const err = await safeFetch(url(path), { resolve, allowCidrs: ALLOW_TEST_HOST }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SsrfBlockedError);
    const blocked = err as SsrfBlockedError;
    expect(blocked.hop).toBe(1);
    expect(blocked.message).toContain(`redirect hop 1 to ${target()}`);
    expect(blocked.check.allowed).toBe(false);
    expect(secret.hits.length).toBe(before);
  });

  it('rewrites POST to GET on 303, keeps it on 307, drops credentials across origins', async () => {
    const r303 = await safeFetch(url('/post-303'), { method: 'POST', body: 'payload', headers: { 'content-type': 'text/plain' }, allowCidrs: ALLOW_TEST_HOST });
    expect(JSON.parse(r303.body.toString())).toMatchObject({ method: 'GET', body: '' });
    const r307 = await safeFetch(url('/post-307'), { method: 'POST', body: 'payload', allowCidrs: ALLOW_TEST_HOST });
    expect(JSON.parse(r307.body.toString())).toMatchObject({ method: 'POST', body: 'payload' });
    const cross = await safeFetch(url('/cross-origin'), {
      headers: { authorization: 'Bearer s3cret', 'x-keep': 'yes' },
      resolve: staticResolver(['other.test:127.0.0.2']),
      allowCidrs: ALLOW_TEST_HOST,
    });
    const seen = JSON.parse(cross.body.toString()) as { headers: Record<string, string> };
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-keep']).toBe('yes');
    expect(seen.headers.host).toBe(`other.test:${pair.port}`);
  });

  it('caps redirects', async () => {
    const before = pair.a.hits.length;
    await expect(safeFetch(url('/loop'), { maxRedirects: 3, allowCidrs: ALLOW_TEST_HOST })).rejects.toThrow(/too many redirects/);
    expect(pair.a.hits.length - before).toBe(4);
  });

  it('truncates at maxBytes', async () => {
    const small = await safeFetch(url('/big'), { maxBytes: 1000, allowCidrs: ALLOW_TEST_HOST });
    expect(small.truncated).toBe(true);
    expect(small.body.length).toBe(1000);
    const full = await safeFetch(url('/big'), { allowCidrs: ALLOW_TEST_HOST });
    expect(full.truncated).toBe(false);
    expect(full.body.length).toBe(1024 * 1024);
    const exact = await safeFetch(url('/big'), { maxBytes: 1024 * 1024, allowCidrs: ALLOW_TEST_HOST });
    expect(exact.truncated).toBe(false);
  });

  it('times out (no response, and a body that never ends) and honours an abort signal', async () => {
    const t0 = Date.now();
    await expect(safeFetch(url('/hang'), { timeoutMs: 300, allowCidrs: ALLOW_TEST_HOST })).rejects.toThrow(/timed out after 300 ms/);
    await expect(safeFetch(url('/slow'), { timeoutMs: 300, allowCidrs: ALLOW_TEST_HOST })).rejects.toThrow(/timed out/);
    expect(Date.now() - t0).toBeLessThan(5000);
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('caller gave up')), 100);
    await expect(safeFetch(url('/hang'), { signal: ac.signal, allowCidrs: ALLOW_TEST_HOST })).rejects.toThrow(/caller gave up/);
  });

  it('refuses schemes and userinfo before connecting', async () => {
    const before = pair.a.hits.length;
    for (const u of ['file:///etc/passwd', 'gopher://127.0.0.2:70/_x', `http://user:pw@127.0.0.2:${pair.port}/echo`, `http://127.0.0.1:${pair.port}/whoami`]) {
      const err = await safeFetch(u, { allowCidrs: ALLOW_TEST_HOST }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SsrfBlockedError);
      expect((err as SsrfBlockedError).hop).toBe(0);
    }
    expect(pair.a.hits.length).toBe(before);
    expect(pair.b.hits.length).toBe(0);
  });

  it('https: connects to the checked address and sends the hostname as SNI', async () => {
    const sni: string[] = [];
    const locals: string[] = [];
    const server = https.createServer(
      {
        key: TLS_KEY,
        cert: TLS_CERT,
        SNICallback: (name, cb) => {
          sni.push(name);
          cb(null);
        },
      },
      (_req, res) => res.end('tls'),
    );
    server.on('connection', (s: Socket) => locals.push(s.localAddress ?? ''));
    await listen(server, '127.0.0.2', 0);
    try {
      const port = (server.address() as AddressInfo).port;
      const err = await safeFetch(`https://tls.test:${port}/`, {
        resolve: staticResolver(['tls.test:127.0.0.2']),
        allowCidrs: ALLOW_TEST_HOST,
        timeoutMs: 5000,
      }).catch((e: unknown) => e);
      // Self-signed certificate: verification must fail (it is on), and it is not an SSRF refusal.
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(SsrfBlockedError);
      expect(String((err as NodeJS.ErrnoException).code)).toMatch(/CERT|SELF_SIGNED/);
      expect(sni).toEqual(['tls.test']);
      expect(locals).toEqual(['127.0.0.2']);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

// Self-signed P-256 certificate for CN/SAN tls.test (100-year validity); used only to observe SNI.
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8rjh/9D6/uljbcxQ
IFjeKWo3qr6LThIowh5dTMuM2CihRANCAAQz87pqEwzT08DO9NoJ9KWBbTxSYRmV
xs8AEBl6n2rdbbYFGaSIeSJGmP3e+/QyDdzTTIXGLmgN5mRi7UKdYr6C
-----END PRIVATE KEY-----
`;
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBkjCCATigAwIBAgIUCgqcXLFhF2xaq7zp4h4LQcyvatwwCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIdGxzLnRlc3QwIBcNMjYxMTMwMDMwMDUxWhgPMjEyNjExMDYw
MzAwNTFaMBMxETAPBgNVBAMMCHRscy50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEM/O6ahMM09PAzvTaCfSlgW08UmEZlcbPABAZep9q3W22BRmkiHkiRpj9
3vv0Mg3c00yFxi5oDeZkYu1CnWK+gqNoMGYwHQYDVR0OBBYEFJaUXSOfULkeYttf
5dwsUtpT9HBgMB8GA1UdIwQYMBaAFJaUXSOfULkeYttf5dwsUtpT9HBgMA8GA1Ud
EwEB/wQFMAMBAf8wEwYDVR0RBAwwCoIIdGxzLnRlc3QwCgYIKoZIzj0EAwIDSAAw
RQIgGcYvBHf+9u2zkSdy9eqQEasESTAm2SAJ1QJI1bLd2r8CIQCB8s7WB4fwqz/2
BpjIgcY1TjTzvhJoqTGpq6451xNzfQ==
-----END CERTIFICATE-----
`;
