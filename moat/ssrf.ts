/**
 * The SSRF guard: decides whether a URL the agent wants fetched may be
 * fetched, and fetches it so that the connection goes to exactly the address
 * that was checked.
 *
 *  - checkUrl: scheme (http/https), no userinfo, sane port, blocked names
 *    (localhost, metadata, *.internal, ...), then DNS: EVERY answer must be
 *    public unicast (see ./ssrf-ranges.ts for the address policy).
 *  - safeFetch: one checkUrl per hop, then connects to the checked address
 *    (no second DNS lookup, so no DNS-rebinding window); redirects are resolved
 *    against the current URL and re-checked; size, time and hop caps.
 *
 * Nothing here sends traffic anywhere before the verdict is in.
 */

import type { LookupAddress, LookupOptions } from 'node:dns';
import dns from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { SwitchboardError } from '../kernel/errors.js';
import { canonicalAddress, checkAddress, checkParsedAddress, parseAnyAddress, parseCidrList } from './ssrf-ranges.js';

export { checkAddress };

export interface UrlCheck {
  allowed: boolean;
  reason: string;
  /** Normalized URL (WHATWG href) when the URL parsed. */
  url?: string;
  /** URL hostname (lowercase, punycode; IPv6 in brackets). */
  host?: string;
  /** The address checked (and, when allowed, the one to connect to). */
  address?: string;
}

/** Returns every A/AAAA answer for a host. */
export type Resolver = (host: string) => Promise<string[]>;

export interface SsrfOptions {
  /** Default: dns.lookup(host, {all: true, verbatim: true}). */
  resolve?: Resolver;
  /** Exact hostnames exempted from the blocked-name and private-range checks (operator config). */
  allowHosts?: string[];
  /** Address ranges (CIDR or single address) exempted from the private-range check. */
  allowCidrs?: string[];
}

const MAX_URL_LENGTH = 8192;

/** Ports browsers refuse to fetch (WHATWG Fetch "bad port"), plus 0. Guards against protocol smuggling. */
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137,
  139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Names refused before DNS: loopback aliases and cloud metadata endpoints. */
const BLOCKED_NAMES = new Set([
  'localhost',
  'localhost.localdomain',
  'ip6-localhost',
  'ip6-loopback',
  'ip6-localnet',
  'ip6-allnodes',
  'ip6-allrouters',
  'metadata',
  'instance-data',
  'metadata.google.internal',
  'metadata.goog',
  'metadata.azure.com',
  'metadata.packet.net',
  'metadata.platformequinix.com',
  'metadata.tencentyun.com',
  'kubernetes.default',
]);

/** Suffixes (and the bare label itself) that only ever name internal hosts. */
const BLOCKED_SUFFIXES = ['localhost', 'local', 'internal', 'localdomain', 'home.arpa', 'arpa', 'lan', 'intranet', 'corp', 'home', 'private', 'svc', 'onion'];

function normalizeHostName(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return h.replace(/\.+$/, '');
}

function blockedName(name: string): string | null {
  if (BLOCKED_NAMES.has(name)) return `hostname ${name} is a loopback or cloud-metadata name`;
  for (const suffix of BLOCKED_SUFFIXES) {
    if (name === suffix || name.endsWith(`.${suffix}`)) return `hostname ${name} is in the internal-only namespace .${suffix}`;
  }
  return null;
}

/** The raw authority of a special-scheme URL, the way WHATWG parsing delimits it. */
function rawAuthority(url: string): string | null {
  const s = url.replace(/[\t\n\r]/g, '').replace(/^[\u0000-\u0020]+/, '');
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]*([^/\\?#]*)/.exec(s);
  return m ? m[1] : null;
}

const defaultResolver: Resolver = async (host) => {
  const answers = await dns.lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

function refuse(reason: string, extra: Partial<UrlCheck> = {}): UrlCheck {
  return { allowed: false, reason, ...extra };
}

/** Parses and normalizes the URL, resolves the host (ALL answers must be public), returns the verdict. */
export async function checkUrl(url: string, opts: SsrfOptions = {}): Promise<UrlCheck> {
  const allow = parseCidrList(opts.allowCidrs);
  const allowHosts = new Set((opts.allowHosts ?? []).map(normalizeHostName));

  if (typeof url !== 'string' || url.trim() === '') return refuse('empty URL');
  if (url.length > MAX_URL_LENGTH) return refuse(`URL longer than ${MAX_URL_LENGTH} characters`);
  if (/\[[^\]]*%/.test(rawAuthority(url) ?? '')) return refuse('IPv6 zone id in host (scoped address)');

  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('unparseable URL');
  }
  const href = parsed.href;
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return refuse(`scheme ${parsed.protocol} not allowed (http and https only)`, { url: href });
  }
  if (parsed.username !== '' || parsed.password !== '' || (rawAuthority(url) ?? '').includes('@')) {
    return refuse('URL carries userinfo (user@host); credentials in URLs are refused', { url: href });
  }
  const host = parsed.hostname;
  if (host === '') return refuse('empty host', { url: href });
  if (parsed.port !== '') {
    const port = Number(parsed.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return refuse(`bad port ${parsed.port}`, { url: href, host });
    if (BAD_PORTS.has(port)) return refuse(`port ${port} is a blocked (non-HTTP service) port`, { url: href, host });
  }

  const name = normalizeHostName(host);
  const base = { url: href, host };
  const exempt = allowHosts.has(name);

  // IP literal: judged without DNS.
  if (net.isIP(name) !== 0) {
    const p = parseAnyAddress(name);
    if (!p) return refuse(`host ${host} is not a valid address`, base);
    const address = connectAddress(p.addr);
    if (exempt) return { allowed: true, reason: `host ${name} is in allowHosts`, ...base, address };
    const v = checkParsedAddress(p, allow);
    return { allowed: v.allowed, reason: v.allowed ? v.reason : `address ${v.reason}`, ...base, address: v.allowed ? address : canonicalAddress(p.addr) };
  }

  if (name === '') return refuse('empty host', base);
  if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(name)) return refuse(`hostname ${host} has characters DNS names do not`, base);
  if (!exempt) {
    const blocked = blockedName(name);
    if (blocked) return refuse(blocked, base);
    if (!name.includes('.')) return refuse(`single-label hostname ${name} (resolved via search domains / local names)`, base);
  }

  let answers: string[];
  try {
    answers = await (opts.resolve ?? defaultResolver)(name);
  } catch (err) {
    return refuse(`DNS resolution failed for ${name}: ${(err as Error)?.message ?? String(err)}`, base);
  }
  if (!Array.isArray(answers) || answers.length === 0) return refuse(`DNS returned no addresses for ${name}`, base);

  const addrs: Array<ipaddr.IPv4 | ipaddr.IPv6> = [];
  for (const answer of answers) {
    const p = typeof answer === 'string' && net.isIP(answer) !== 0 ? parseAnyAddress(answer) : null;
    if (!p) return refuse(`DNS answer ${JSON.stringify(answer)} for ${name} is not an IP address`, base);
    if (!exempt) {
      const v = checkParsedAddress(p, allow);
      if (!v.allowed) {
        const of = answers.length > 1 ? ` (one of ${answers.length} answers)` : '';
        return refuse(`${name} resolves to ${v.reason}${of}`, { ...base, address: canonicalAddress(p.addr) });
      }
    }
    addrs.push(p.addr);
  }
  // All answers passed; connect to the first IPv4 one if any (IPv6 routes are often missing), else the first.
  const pick = addrs.find((a) => a.kind() === 'ipv4') ?? addrs[0];
  const reason = exempt ? `host ${name} is in allowHosts` : `${name} resolves only to allowed addresses (${addrs.map(canonicalAddress).join(', ')})`;
  return { allowed: true, reason, ...base, address: connectAddress(pick) };
}

/** IPv4-mapped IPv6 is connected to as plain IPv4 (that is what it was judged as). */
function connectAddress(a: ipaddr.IPv4 | ipaddr.IPv6): string {
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) return (a as ipaddr.IPv6).toIPv4Address().toString();
  return canonicalAddress(a);
}

/** Builds a Resolver from curl-style "host:address" pairs (several per host allowed); unknown hosts fail to resolve. */
export function staticResolver(pairs: string[]): Resolver {
  const table = new Map<string, string[]>();
  for (const pair of pairs) {
    const i = pair.indexOf(':');
    const host = i > 0 ? normalizeHostName(pair.slice(0, i)) : '';
    let address = i > 0 ? pair.slice(i + 1).trim() : '';
    if (address.startsWith('[') && address.endsWith(']')) address = address.slice(1, -1);
    if (host === '' || address === '') throw new TypeError(`staticResolver: expected "host:address", got ${JSON.stringify(pair)}`);
    const list = table.get(host) ?? [];
    list.push(address);
    table.set(host, list);
  }
  return async (host: string) => {
    const list = table.get(normalizeHostName(host));
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', hostname: host });
    return [...list];
  };
}

/** Reads a URL corpus: `URL[\thost:address]...` per line; blank lines and `#` comments ignored. */
export function loadUrlCorpus(path: string): Array<{ url: string; resolve: string[] }> {
  const out: Array<{ url: string; resolve: string[] }> = [];
  for (const rawLine of readFileSync(path, 'utf8').split('\n')) {
    const line = rawLine.replace(/\r$/, '');
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const [url, ...rest] = line.split('\t');
    out.push({ url: url.trim(), resolve: rest.map((r) => r.trim()).filter((r) => r !== '') });
  }
  return out;
}

// ---------------------------------------------------------------------------
// safeFetch

export interface SafeFetchOptions extends SsrfOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Default 5. Exceeding it throws. */
  maxRedirects?: number;
  /** Default 5 MB. The body is cut there and `truncated` set. */
  maxBytes?: number;
  /** Whole-call deadline (DNS, every hop, body). Default 15000. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface SafeFetchResult {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  truncated: boolean;
  /** Final URL (after redirects). */
  url: string;
  /** Address the final response came from. */
  address: string;
  /** Redirect targets followed, in order (normalized). */
  redirects: string[];
}

export class SsrfBlockedError extends SwitchboardError {
  readonly code = 'ssrf_blocked';
  readonly check: UrlCheck;
  /** 0 = the URL passed in; n = the n-th redirect target. */
  readonly hop: number;
  constructor(check: UrlCheck, hop = 0, target?: string) {
    const what = hop === 0 ? 'URL' : `redirect hop ${hop} to`;
    super(`SSRF guard refused ${what} ${check.url ?? target ?? '(unknown)'}: ${check.reason}`);
    this.name = 'SsrfBlockedError';
    this.check = check;
    this.hop = hop;
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

function sameAddress(a: string | undefined, b: string): boolean {
  if (!a || !ipaddr.isValid(a) || !ipaddr.isValid(b)) return false;
  return ipaddr.process(a).toNormalizedString() === ipaddr.process(b).toNormalizedString();
}

/** One HTTP exchange against the checked address; resolves when response headers arrive. */
function requestOnce(
  check: UrlCheck,
  method: string,
  headers: Record<string, string>,
  body: string | Buffer | undefined,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  const u = new URL(check.url!);
  const address = check.address!;
  const isHttps = u.protocol === 'https:';
  const family = net.isIPv6(address) ? 6 : 4;
  const bareHost = normalizeHostName(u.hostname);

  const hdrs: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(headers)) {
    const lk = k.toLowerCase();
    if (lk === 'host' || lk === 'content-length' || lk === 'transfer-encoding' || lk === 'connection') continue;
    hdrs[k] = v;
  }
  hdrs.Host = u.host;
  if (body !== undefined) hdrs['Content-Length'] = Buffer.byteLength(body);

  // Pinned lookup: Node never calls it for an IP host, but if anything did, it could only get the checked address.
  const lookup = (
    _hostname: string,
    options: LookupOptions,
    cb: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    if (options?.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  };

  const options: https.RequestOptions = {
    host: address,
    family,
    port: u.port !== '' ? Number(u.port) : isHttps ? 443 : 80,
    method,
    path: `${u.pathname}${u.search}`,
    headers: hdrs,
    agent: false,
    lookup,
    signal,
  };
  // SNI and certificate verification use the hostname, not the IP we connect to.
  if (isHttps && net.isIP(bareHost) === 0) options.servername = bareHost;

  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = (isHttps ? https : http).request(options, resolve);
    req.on('error', (err) => reject(signal.aborted ? signal.reason : err));
    req.on('socket', (socket) => {
      const verify = () => {
        if (!sameAddress(socket.remoteAddress, address)) {
          req.destroy(new Error(`safeFetch: connected to ${socket.remoteAddress}, expected checked address ${address}`));
        }
      };
      if (socket.connecting) socket.once('connect', verify);
      else verify();
    });
    req.end(body);
  });
}

function readBody(res: http.IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<{ body: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let done = false;
    const cleanup = () => signal.removeEventListener('abort', onAbort);
    const finish = (truncated: boolean) => {
      if (done) return;
      done = true;
      cleanup();
      resolve({ body: Buffer.concat(chunks, total), truncated });
    };
    const fail = (err: unknown) => {
      if (done) return;
      done = true;
      cleanup();
      res.destroy();
      reject(err);
    };
    const onAbort = () => fail(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    res.on('data', (chunk: Buffer) => {
      if (done) return;
      const room = maxBytes - total;
      if (chunk.length > room) {
        if (room > 0) {
          chunks.push(chunk.subarray(0, room));
          total += room;
        }
        res.destroy();
        finish(true);
        return;
      }
      chunks.push(chunk);
      total += chunk.length;
    });
    res.on('end', () => finish(false));
    res.on('error', (err) => fail(signal.aborted ? signal.reason : err));
    res.on('close', () => {
      if (!done) fail(signal.aborted ? signal.reason : new Error('safeFetch: connection closed before the body was complete'));
    });
  });
}

function flattenHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  return out;
}

/**
 * Fetches through the guard: connects to exactly the checked address (no
 * second DNS lookup, so no rebinding window), re-checks every redirect hop,
 * caps size and time. Throws SsrfBlockedError when a hop is refused.
 */
export async function safeFetch(url: string, opts: SafeFetchOptions = {}): Promise<SafeFetchResult> {
  const maxRedirects = opts.maxRedirects ?? 5;
  const maxBytes = opts.maxBytes ?? 5 * 1024 * 1024;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const controller = new AbortController();
  const signal = controller.signal;
  const timer = setTimeout(() => {
    const err = new Error(`safeFetch: timed out after ${timeoutMs} ms`);
    err.name = 'TimeoutError';
    controller.abort(err);
  }, timeoutMs);
  const onUserAbort = () => controller.abort(opts.signal?.reason ?? new Error('safeFetch: aborted'));
  if (opts.signal?.aborted) onUserAbort();
  else opts.signal?.addEventListener('abort', onUserAbort, { once: true });

  try {
    let current = url;
    let method = (opts.method ?? 'GET').toUpperCase();
    let body = opts.body;
    let headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const redirects: string[] = [];
    for (let hop = 0; ; hop++) {
      const check = await abortable(checkUrl(current, opts), signal);
      if (!check.allowed || !check.url || !check.address) throw new SsrfBlockedError(check, hop, current);
      const res = await requestOnce(check, method, headers, body, signal);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECT_STATUSES.has(status) && location) {
        res.resume();
        res.destroy();
        if (redirects.length >= maxRedirects) {
          throw new Error(`safeFetch: too many redirects (limit ${maxRedirects}) at ${check.url} -> ${location}`);
        }
        let next: URL;
        try {
          next = new URL(location, check.url);
        } catch {
          throw new SsrfBlockedError({ allowed: false, reason: `invalid redirect Location ${JSON.stringify(location)}` }, hop + 1, location);
        }
        if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
          if (method !== 'HEAD') method = 'GET';
          body = undefined;
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'content-type'));
        }
        if (next.origin !== new URL(check.url).origin) {
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !CREDENTIAL_HEADERS.has(k.toLowerCase())));
        }
        redirects.push(next.href);
        current = next.href;
        continue;
      }
      const read = await readBody(res, maxBytes, signal);
      return {
        status,
        headers: flattenHeaders(res.headers),
        body: read.body,
        truncated: read.truncated,
        url: check.url,
        address: check.address,
        redirects,
      };
    }
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onUserAbort);
  }
}
