import type { ChannelProbe } from '../../src/channel/index.js';

/** What a Twilio probe needs: the account, its token, and where the REST API is. */
export interface TwilioProbeConfig {
  accountSid: string;
  authToken: string;
  apiBaseUrl?: string;
}

export const basicAuth = (c: TwilioProbeConfig) => `Basic ${Buffer.from(`${c.accountSid}:${c.authToken}`).toString('base64')}`;

/** A read-only GET against Twilio with the account's credentials: the status and the JSON body (empty when none). */
export async function twilioGet(c: TwilioProbeConfig, url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url, { headers: { authorization: basicAuth(c), accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
  const body = (await r.json().catch(() => ({}))) as Record<string, unknown>;
  return { status: r.status, body };
}

/**
 * doctor --probe for a Twilio channel: the account SID and auth token against Twilio's REST API
 * (GET /2010-04-01/Accounts/<sid>.json, read-only), and the account's status. SMS and WhatsApp share it.
 */
export async function probeTwilioAccount(c: TwilioProbeConfig): Promise<ChannelProbe> {
  const base = c.apiBaseUrl ?? 'https://api.twilio.com';
  try {
    const { status, body } = await twilioGet(c, `${base}/2010-04-01/Accounts/${encodeURIComponent(c.accountSid)}.json`);
    if (status !== 200)
      return { name: 'account', ok: false, message: `Twilio refused the account SID and auth token: HTTP ${status} ${String(body.message ?? '')}`.trim() };
    const active = body.status === 'active';
    return { name: 'account', ok: active, message: `${String(body.friendly_name ?? c.accountSid)}: ${String(body.status ?? 'unknown status')}` };
  } catch (err) {
    return { name: 'account', ok: false, message: `cannot reach ${base}: ${(err as Error).message}` };
  }
}
