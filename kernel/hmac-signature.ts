import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures, both ways: HMAC-SHA256 over `${timestamp}.${rawBody}`,
 * sent as `X-Switchboard-Timestamp: <unix seconds>` and
 * `X-Switchboard-Signature: v1=<hex>`. A timestamp outside the window is refused,
 * so a captured request cannot be replayed later.
 */
export const TIMESTAMP_HEADER = 'x-switchboard-timestamp';
export const SIGNATURE_HEADER = 'x-switchboard-signature';

export function sign(secret: string, timestamp: number, body: string | Buffer): string {
  return 'v1=' + createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

export function signedHeaders(secret: string, body: string): Record<string, string> {
  const ts = Math.floor(Date.now() / 1000);
  return { [TIMESTAMP_HEADER]: String(ts), [SIGNATURE_HEADER]: sign(secret, ts, body), 'content-type': 'application/json' };
}

export type Verdict = { ok: true } | { ok: false; reason: string };

export function verify(secret: string, headers: Record<string, string | string[] | undefined>, body: Buffer, windowSeconds: number, now = Date.now()): Verdict {
  const ts = headers[TIMESTAMP_HEADER];
  const sig = headers[SIGNATURE_HEADER];
  if (typeof ts !== 'string' || typeof sig !== 'string') return { ok: false, reason: 'missing signature headers' };
  if (!/^\d{9,11}$/.test(ts)) return { ok: false, reason: 'bad timestamp' };
  if (Math.abs(now / 1000 - Number(ts)) > windowSeconds) return { ok: false, reason: 'timestamp outside the replay window' };
  const expected = Buffer.from(sign(secret, Number(ts), body));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'signature mismatch' };
  return { ok: true };
}
