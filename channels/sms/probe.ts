import type { ChannelProbe } from '../../src/channel/index.js';
import type { SmsConfig } from './config.js';

/**
 * doctor --probe for SMS: the account SID and auth token against Twilio's REST API
 * (GET /2010-04-01/Accounts/<sid>.json, read-only), and the account's status.
 */
export async function probeSms(c: SmsConfig): Promise<ChannelProbe[]> {
  const base = c.apiBaseUrl ?? 'https://api.twilio.com';
  try {
    const r = await fetch(`${base}/2010-04-01/Accounts/${encodeURIComponent(c.accountSid)}.json`, {
      headers: { authorization: `Basic ${Buffer.from(`${c.accountSid}:${c.authToken}`).toString('base64')}` },
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await r.json().catch(() => ({}))) as { status?: string; friendly_name?: string; message?: string };
    if (r.status !== 200)
      return [{ name: 'account', ok: false, message: `Twilio refused the account SID and auth token: HTTP ${r.status} ${body.message ?? ''}`.trim() }];
    const active = body.status === 'active';
    return [{ name: 'account', ok: active, message: `${body.friendly_name ?? c.accountSid}: ${body.status ?? 'unknown status'}` }];
  } catch (err) {
    return [{ name: 'account', ok: false, message: `cannot reach ${base}: ${(err as Error).message}` }];
  }
}
