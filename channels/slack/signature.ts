import { createHmac, timingSafeEqual } from 'node:crypto';

/** Slack's replay window: a request signed more than five minutes away from now is refused. */
export const SIGNATURE_WINDOW_S = 300;

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * Slack request signing (v0): HMAC-SHA256 of `v0:<timestamp>:<raw body>` with
 * the signing secret, over the RAW body bytes, sent as `x-slack-signature`,
 * with the timestamp in `x-slack-request-timestamp`. Stricter than bolt's
 * helper: a timestamp in the future beyond the window is refused too, and
 * missing headers are an answer (not an exception).
 */
export function verifySlackSignature(
  secret: string,
  rawBody: Buffer | string,
  headers: Record<string, string | string[] | undefined>,
  nowMs = Date.now(),
): SignatureCheck {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const ts = one(headers['x-slack-request-timestamp']);
  const sig = one(headers['x-slack-signature']);
  if (!ts || !sig) return { ok: false, reason: 'missing signature headers' };
  if (!/^\d{1,12}$/.test(ts)) return { ok: false, reason: 'malformed timestamp' };
  if (Math.abs(Math.floor(nowMs / 1000) - Number(ts)) > SIGNATURE_WINDOW_S) return { ok: false, reason: 'timestamp outside the five-minute window' };
  if (!sig.startsWith('v0=')) return { ok: false, reason: 'unknown signature version' };
  const expected = signSlackRequest(secret, ts, rawBody);
  const a = Buffer.from(sig);
  const b = Buffer.from(expected);
  if (a.length !== b.length || !timingSafeEqual(a, b)) return { ok: false, reason: 'signature mismatch' };
  return { ok: true };
}

export function signSlackRequest(secret: string, timestamp: string, rawBody: Buffer | string): string {
  const h = createHmac('sha256', secret);
  h.update(`v0:${timestamp}:`);
  h.update(rawBody);
  return `v0=${h.digest('hex')}`;
}
