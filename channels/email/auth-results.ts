import { domainOf } from './headers.js';

/** One method result of an Authentication-Results header: dkim=pass header.d=example.com. */
interface MethodResult {
  method: string;
  result: string;
  props: Record<string, string>;
}

/** Parses `authserv-id [version]; method=result (comment) ptype.prop=value; …` (RFC 8601). */
export function parseAuthResults(value: string): { authServId: string; results: MethodResult[] } {
  const noComments = value.replace(/\([^()]*\)/g, ' ');
  const parts = noComments.split(';').map((p) => p.trim());
  const authServId = (parts.shift() ?? '').split(/\s+/)[0]!.toLowerCase();
  const results: MethodResult[] = [];
  for (const part of parts) {
    const tokens = part.split(/\s+/).filter(Boolean);
    const head = tokens.shift();
    const m = head && /^([a-z0-9_-]+)(?:\/\d+)?=([a-z0-9_-]+)$/i.exec(head);
    if (!m) continue;
    const props: Record<string, string> = {};
    for (const t of tokens) {
      const kv = /^([a-z0-9_-]+\.[a-z0-9_-]+)=(.+)$/i.exec(t);
      if (kv) props[kv[1]!.toLowerCase()] = kv[2]!.replace(/^"|"$/g, '');
    }
    results.push({ method: m[1]!.toLowerCase(), result: m[2]!.toLowerCase(), props });
  }
  return { authServId, results };
}

/** Relaxed alignment: the same domain, or one a subdomain of the other. */
function aligned(a: string, b: string): boolean {
  if (!a || !b) return false;
  return a === b || a.endsWith(`.${b}`) || b.endsWith(`.${a}`);
}

const domainProp = (v: string | undefined): string => (v ? (v.includes('@') ? domainOf(v) : v.toLowerCase().replace(/\.$/, '')) : '');

/**
 * Whether the receiving server vouches for the From address: its
 * Authentication-Results header (the topmost one with our authserv-id, else the
 * topmost, which the receiving server adds last) says dkim=pass for the From
 * domain, spf=pass for it (envelope sender), or dmarc=pass. Headers from other
 * servers are ignored: anyone can write one.
 */
export function senderAuthenticated(headerValues: string[], fromAddress: string, authServId?: string): boolean {
  const fromDomain = domainOf(fromAddress);
  if (!fromDomain) return false;
  const parsed = headerValues.map(parseAuthResults);
  // Only the topmost header of ours counts: the receiving server adds its verdict on top, and a sender can
  // write an Authentication-Results of our authserv-id lower down (dkim=pass for the operator's domain) that a
  // server which does not strip it leaves in the message; counting every header of ours would let that one win.
  const trusted = (authServId ? parsed.filter((p) => p.authServId === authServId.toLowerCase()) : parsed).slice(0, 1);
  for (const header of trusted) {
    for (const r of header.results) {
      if (r.result !== 'pass') continue;
      if (r.method === 'dkim' && aligned(domainProp(r.props['header.d'] ?? r.props['header.i']), fromDomain)) return true;
      if (r.method === 'spf' && aligned(domainProp(r.props['smtp.mailfrom']), fromDomain)) return true;
      if (r.method === 'dmarc' && aligned(domainProp(r.props['header.from']), fromDomain)) return true;
    }
  }
  return false;
}
