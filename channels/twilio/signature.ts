import type { IncomingMessage } from 'node:http';
import twilio from 'twilio';

/** Form parameters as Twilio signs them (a repeated key keeps every value). */
export type FormParams = Record<string, string | string[]>;

export function parseForm(raw: Buffer): FormParams {
  const out: FormParams = {};
  for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) {
    // Own properties only, and defined rather than assigned: a field named __proto__ or toString is just a field.
    const prev = Object.hasOwn(out, k) ? out[k] : undefined;
    Object.defineProperty(out, k, {
      value: prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

export const param = (p: FormParams, key: string): string | undefined => {
  const v = Object.hasOwn(p, key) ? p[key] : undefined;
  return Array.isArray(v) ? v[v.length - 1] : v;
};

/**
 * The URL Twilio called: the configured public URL (scheme, host, any prefix a
 * proxy strips) followed by the path and query the gateway received. Behind a
 * proxy the local URL (http://127.0.0.1:8787/...) is not what Twilio signed.
 */
export function signedUrl(publicUrl: string, localPathAndQuery: string): string {
  return publicUrl + (localPathAndQuery.startsWith('/') ? localPathAndQuery : `/${localPathAndQuery}`);
}

/** Why a webhook signature was refused (or whose secret it held). */
export type SignatureCheck =
  | { ok: true; signedWith: 'auth_token' | 'signing_key' }
  | { ok: false; reason: 'missing' | 'invalid' | 'unsupported_algorithm' | 'no_signing_key'; algorithm?: string };

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * X-Twilio-Signature: HMAC over the URL and the sorted POST parameters. Without
 * X-Twilio-Webhooks-Signature-Settings it is HMAC-SHA1 with the auth token; with
 * it (`key=<SharedKey id>,algorithm=HMAC_SHA256`, set by a Webhook Rule), Twilio
 * signed with that SharedKey's secret and the algorithm the header names, as
 * twilio-node's webhook() reads it. Such a request is checked against the
 * signing key only: without one configured it is refused (`no_signing_key`).
 * Twilio signs no timestamp, so a captured request stays valid: replays are
 * stopped by MessageSid (the listener's memory and the inbox's unique key).
 */
export function verifyTwilioRequest(
  req: IncomingMessage,
  secrets: { authToken: string; signingKey?: string },
  url: string,
  params: FormParams,
): SignatureCheck {
  const signature = header(req, 'x-twilio-signature');
  if (!signature) return { ok: false, reason: 'missing' };
  const settings = header(req, 'x-twilio-webhooks-signature-settings');
  const algorithm = twilio.getSignatureAlgorithm(settings);
  if (algorithm !== 'HMAC_SHA1' && algorithm !== 'HMAC_SHA256') return { ok: false, reason: 'unsupported_algorithm', algorithm };
  const signedWith = settings ? 'signing_key' : 'auth_token';
  const secret = settings ? secrets.signingKey : secrets.authToken;
  if (!secret) return { ok: false, reason: 'no_signing_key', algorithm };
  try {
    return twilio.validateRequest(secret, signature, url, params, algorithm) ? { ok: true, signedWith } : { ok: false, reason: 'invalid', algorithm };
  } catch {
    // validateRequest throws only on a URL it cannot parse: that request is not Twilio's.
    return { ok: false, reason: 'invalid', algorithm };
  }
}
