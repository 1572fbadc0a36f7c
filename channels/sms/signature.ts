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

/**
 * X-Twilio-Signature: HMAC over the URL and the sorted POST parameters with the
 * auth token (HMAC-SHA1, or the algorithm named by X-Twilio-Webhooks-Signature-Settings).
 * Twilio signs no timestamp, so a captured request stays valid: replays are
 * stopped by MessageSid (the listener's memory and the inbox's unique key).
 */
export function verifyTwilioRequest(req: IncomingMessage, authToken: string, url: string, params: FormParams): boolean {
  const header = req.headers['x-twilio-signature'];
  const signature = Array.isArray(header) ? header[0] : header;
  if (!signature) return false;
  const settings = req.headers['x-twilio-webhooks-signature-settings'];
  const algorithm = twilio.getSignatureAlgorithm(Array.isArray(settings) ? settings[0] : settings);
  if (algorithm !== 'HMAC_SHA1' && algorithm !== 'HMAC_SHA256') return false;
  try {
    return twilio.validateRequest(authToken, signature, url, params, algorithm);
  } catch {
    return false;
  }
}
