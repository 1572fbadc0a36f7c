/**
 * SSRF guard, address half: which IP addresses a fetch may connect to.
 *
 * Principle: allow only unicast public addresses. IPv4 must be ipaddr.js
 * 'unicast' AND outside every block listed in V4_BLOCKS; IPv6 must be inside
 * global unicast 2000::/3, outside V6_BLOCKS and ipaddr.js 'unicast'. IPv6
 * forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4) are
 * unwrapped first and the embedded address is judged too.
 *
 * Nothing here touches the network: every verdict is computed from the string.
 */
import ipaddr from 'ipaddr.js';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;
type Addr = IPv4 | IPv6;

export interface AddressVerdict {
  allowed: boolean;
  reason: string;
}

type Block<T> = { cidr: [T, number]; text: string; name: string };

function v4block(text: string, name: string): Block<IPv4> {
  return { cidr: ipaddr.IPv4.parseCIDR(text), text, name };
}
function v6block(text: string, name: string): Block<IPv6> {
  return { cidr: ipaddr.IPv6.parseCIDR(text), text, name };
}

/** IPv4 blocks refused by name (ipaddr's range names are coarser; this list gives precise reasons). */
export const V4_BLOCKS: ReadonlyArray<Block<IPv4>> = [
  v4block('0.0.0.0/8', '"this network" / unspecified'),
  v4block('10.0.0.0/8', 'private (RFC 1918)'),
  v4block('100.64.0.0/10', 'carrier-grade NAT (RFC 6598)'),
  v4block('127.0.0.0/8', 'loopback'),
  v4block('169.254.0.0/16', 'link-local / cloud metadata'),
  v4block('172.16.0.0/12', 'private (RFC 1918)'),
  v4block('192.0.0.0/24', 'IETF protocol assignments'),
  v4block('192.0.2.0/24', 'documentation (TEST-NET-1)'),
  v4block('192.31.196.0/24', 'AS112'),
  v4block('192.52.193.0/24', 'AMT'),
  v4block('192.88.99.0/24', '6to4 relay anycast'),
  v4block('192.168.0.0/16', 'private (RFC 1918)'),
  v4block('192.175.48.0/24', 'AS112'),
  v4block('198.18.0.0/15', 'benchmarking'),
  v4block('198.51.100.0/24', 'documentation (TEST-NET-2)'),
  v4block('203.0.113.0/24', 'documentation (TEST-NET-3)'),
  v4block('224.0.0.0/4', 'multicast'),
  v4block('255.255.255.255/32', 'broadcast'),
  v4block('240.0.0.0/4', 'reserved'),
];

/**
 * IPv6 blocks refused outright (the ones embedding IPv4 — mapped, NAT64 /96,
 * 6to4 — are handled before this list is consulted).
 */
export const V6_BLOCKS: ReadonlyArray<Block<IPv6>> = [
  v6block('::/128', 'unspecified'),
  v6block('::1/128', 'loopback'),
  v6block('::ffff:0:0:0/96', 'IPv4-translated (RFC 6145)'),
  v6block('::/96', 'IPv4-compatible (deprecated)'),
  v6block('64:ff9b:1::/48', 'local-use NAT64 (RFC 8215)'),
  v6block('100::/64', 'discard-only (RFC 6666)'),
  v6block('2001::/32', 'Teredo'),
  v6block('2001::/23', 'IETF protocol assignments'),
  v6block('2001:db8::/32', 'documentation'),
  v6block('3fff::/20', 'documentation (RFC 9637)'),
  v6block('5f00::/16', 'SRv6 SIDs'),
  v6block('fc00::/7', 'unique-local'),
  v6block('fe80::/10', 'link-local'),
  v6block('fec0::/10', 'site-local (deprecated)'),
  v6block('ff00::/8', 'multicast'),
];

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
const MAPPED_V6 = ipaddr.IPv6.parseCIDR('::ffff:0:0/96');
const NAT64_V6 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const SIX_TO_FOUR_V6 = ipaddr.IPv6.parseCIDR('2002::/16');

/**
 * WHATWG-style IPv4 parse: 1–4 parts, each decimal, octal (leading 0) or hex
 * (0x); the last part fills the remaining bytes (127.1 = 127.0.0.1,
 * 2130706433 = 127.0.0.1). One trailing dot is tolerated. Returns null if the
 * string is not an IPv4 address in any of those notations.
 */
export function parseIPv4Loose(input: string): IPv4 | null {
  let s = input;
  if (s.endsWith('.')) s = s.slice(0, -1);
  if (s === '' || !/^[0-9a-fA-FxX.]+$/.test(s)) return null;
  const parts = s.split('.');
  if (parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    if (p === '') return null;
    let n: number;
    if (/^0[xX]/.test(p)) {
      const h = p.slice(2);
      if (h !== '' && !/^[0-9a-fA-F]+$/.test(h)) return null;
      n = h === '' ? 0 : parseInt(h, 16);
    } else if (p.length > 1 && p.startsWith('0')) {
      if (!/^[0-7]+$/.test(p)) return null;
      n = parseInt(p, 8);
    } else {
      if (!/^[0-9]+$/.test(p)) return null;
      n = parseInt(p, 10);
    }
    if (!Number.isFinite(n)) return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255)) return null;
  if (last >= 256 ** (4 - nums.length)) return null;
  const octets = [...nums];
  const tailBytes = 4 - nums.length;
  for (let i = tailBytes - 1; i >= 0; i--) octets.push(Math.floor(last / 256 ** i) % 256);
  return new ipaddr.IPv4(octets);
}

export interface ParsedAddress {
  addr: Addr;
  zoneId?: string;
}

/**
 * Parses an IP address in any notation: bracketed or bare IPv6 (optionally
 * with a %zone), IPv4 in dotted/octal/hex/integer/short forms, fullwidth
 * digits and ideographic dots. Returns null for anything that is not an IP.
 */
export function parseAnyAddress(input: string): ParsedAddress | null {
  let s = input
    .normalize('NFKC')
    .replace(/[\u3002\uff0e\uff61]/g, '.')
    .trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  let zoneId: string | undefined;
  const pct = s.indexOf('%');
  if (pct >= 0) {
    if (!s.includes(':')) return null;
    zoneId = s.slice(pct + 1);
    if (zoneId.startsWith('25')) zoneId = zoneId.slice(2); // URL-encoded '%25'
    s = s.slice(0, pct);
  }
  if (s.includes(':')) {
    if (!ipaddr.IPv6.isValid(s)) return null;
    try {
      return { addr: ipaddr.IPv6.parse(s), zoneId };
    } catch {
      return null;
    }
  }
  if (zoneId !== undefined) return null;
  const v4 = parseIPv4Loose(s);
  return v4 ? { addr: v4 } : null;
}

/** Canonical text of an address: dotted decimal for IPv4, RFC 5952 for IPv6. */
export function canonicalAddress(addr: Addr): string {
  return addr.kind() === 'ipv4' ? addr.toString() : (addr as IPv6).toRFC5952String();
}

/** Parses allowCidrs entries (CIDR or a bare address). Throws on a malformed entry: it is operator config. */
export function parseCidrList(cidrs: readonly string[] | undefined): Array<[Addr, number]> {
  const out: Array<[Addr, number]> = [];
  for (const raw of cidrs ?? []) {
    const c = raw.trim();
    if (c.includes('/')) {
      if (!ipaddr.isValidCIDR(c)) throw new TypeError(`allowCidrs: invalid CIDR ${JSON.stringify(raw)}`);
      out.push(ipaddr.parseCIDR(c));
    } else {
      if (!ipaddr.isValid(c)) throw new TypeError(`allowCidrs: invalid address ${JSON.stringify(raw)}`);
      const a = ipaddr.parse(c);
      out.push([a, a.kind() === 'ipv4' ? 32 : 128]);
    }
  }
  return out;
}

function inCidr(addr: Addr, cidr: [Addr, number]): boolean {
  if (addr.kind() !== cidr[0].kind()) return false;
  return addr.kind() === 'ipv4' ? (addr as IPv4).match(cidr as [IPv4, number]) : (addr as IPv6).match(cidr as [IPv6, number]);
}

/** The IPv4 address an IPv6 address stands for on the wire (mapped / compatible), if any. */
function sameHostV4(a: IPv6): IPv4 | null {
  if (a.match(MAPPED_V6)) return a.toIPv4Address();
  const p = a.parts;
  // ::a.b.c.d (IPv4-compatible), excluding :: and ::1
  if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7] > 1)) return v4FromBits(p[6], p[7]);
  return null;
}

function v4FromBits(hi: number, lo: number): IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

function checkV4(a: IPv4): AddressVerdict {
  const text = a.toString();
  for (const b of V4_BLOCKS) {
    if (a.match(b.cidr)) return { allowed: false, reason: `${text} is ${b.name} (${b.text})` };
  }
  const range = a.range();
  if (range !== 'unicast') return { allowed: false, reason: `${text} is not public unicast (${range})` };
  return { allowed: true, reason: `${text} is public unicast` };
}

function checkV6(a: IPv6): AddressVerdict {
  const text = a.toRFC5952String();
  // Forms that embed an IPv4 address: judge the IPv4 address.
  if (a.match(MAPPED_V6)) {
    const v4 = a.toIPv4Address();
    const inner = checkV4(v4);
    return { allowed: inner.allowed, reason: `IPv4-mapped ${text}: ${inner.reason}` };
  }
  if (a.match(NAT64_V6)) {
    const v4 = v4FromBits(a.parts[6], a.parts[7]);
    const inner = checkV4(v4);
    return { allowed: inner.allowed, reason: `NAT64 ${text} embeds ${inner.reason}` };
  }
  if (a.match(SIX_TO_FOUR_V6)) {
    const v4 = v4FromBits(a.parts[1], a.parts[2]);
    const inner = checkV4(v4);
    if (!inner.allowed) return { allowed: false, reason: `6to4 ${text} embeds ${inner.reason}` };
    // public embedded IPv4: fall through to the global-unicast checks
  }
  for (const b of V6_BLOCKS) {
    if (a.match(b.cidr)) {
      let extra = '';
      if (b.text === '::/96') extra = `, embeds ${v4FromBits(a.parts[6], a.parts[7]).toString()}`;
      if (b.text === '::ffff:0:0:0/96') extra = `, embeds ${v4FromBits(a.parts[6], a.parts[7]).toString()}`;
      if (b.text === '2001::/32') extra = `, client ${v4FromBits(a.parts[6] ^ 0xffff, a.parts[7] ^ 0xffff).toString()}`;
      return { allowed: false, reason: `${text} is ${b.name} (${b.text}${extra})` };
    }
  }
  if (!a.match(GLOBAL_UNICAST_V6)) return { allowed: false, reason: `${text} is outside global unicast 2000::/3` };
  const range = a.range();
  if (range !== 'unicast' && range !== '6to4') return { allowed: false, reason: `${text} is not public unicast (${range})` };
  return { allowed: true, reason: `${text} is public unicast` };
}

/** Classifies a parsed address (see checkAddress). */
export function checkParsedAddress(parsed: ParsedAddress, allow: Array<[Addr, number]>): AddressVerdict {
  const { addr, zoneId } = parsed;
  const text = canonicalAddress(addr);
  if (zoneId !== undefined) return { allowed: false, reason: `${text}%${zoneId} carries an IPv6 zone id (scoped address)` };
  if (allow.length > 0) {
    const alt = addr.kind() === 'ipv6' ? sameHostV4(addr as IPv6) : (addr as IPv4).toIPv4MappedAddress();
    const hit = allow.find((c) => inCidr(addr, c) || (alt !== null && inCidr(alt, c)));
    if (hit) return { allowed: true, reason: `${text} is in allowCidrs ${canonicalAddress(hit[0])}/${hit[1]}` };
  }
  return addr.kind() === 'ipv4' ? checkV4(addr as IPv4) : checkV6(addr as IPv6);
}

/**
 * Classifies one IP address string (any notation). Only public unicast
 * addresses are allowed, plus anything inside `allowCidrs`.
 */
export function checkAddress(address: string, opts?: { allowCidrs?: string[] }): AddressVerdict {
  const allow = parseCidrList(opts?.allowCidrs);
  if (typeof address !== 'string') return { allowed: false, reason: 'not an IP address' };
  const parsed = parseAnyAddress(address);
  if (!parsed) return { allowed: false, reason: `${JSON.stringify(address)} is not an IP address` };
  return checkParsedAddress(parsed, allow);
}
