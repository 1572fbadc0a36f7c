import type { ChannelProbe } from '../../src/channel/index.js';
import { probeTwilioAccount, twilioGet } from '../twilio/probe.js';
import type { WhatsAppConfig } from './config.js';

/** The Twilio Sandbox for WhatsApp: shared by every account, listed by none. */
export const SANDBOX_SENDER = 'whatsapp:+14155238886';

type Listed = Record<string, unknown>;
const items = (body: Record<string, unknown>): Listed[] => {
  const key = typeof (body.meta as { key?: unknown } | undefined)?.key === 'string' ? String((body.meta as { key: string }).key) : 'senders';
  return Array.isArray(body[key]) ? (body[key] as Listed[]) : [];
};

/**
 * doctor --probe for WhatsApp: the account (as for SMS), then the sender replies go from, read-only
 * from Twilio's Messaging API: with `from`, that sender in the WhatsApp Senders list
 * (GET /v2/Channels/Senders?Channel=whatsapp) and ONLINE; with a Messaging Service, a WhatsApp sender
 * in its sender pool (GET /v1/Services/<MG>/ChannelSenders); with neither, whether any sender is
 * ONLINE (replies go from the address each person wrote to). The Sandbox is listed by no account.
 */
export async function probeWhatsApp(c: WhatsAppConfig): Promise<ChannelProbe[]> {
  const account = await probeTwilioAccount(c);
  if (!account.ok) return [account, { name: 'sender', ok: false, message: 'not checked: the account check failed' }];
  return [account, await probeSender(c)];
}

async function probeSender(c: WhatsAppConfig): Promise<ChannelProbe> {
  // apiBaseUrl (tests, proxies) stands in for messaging.twilio.com too.
  const base = c.apiBaseUrl ?? 'https://messaging.twilio.com';
  const name = 'sender';
  try {
    if (c.messagingServiceSid) {
      const { status, body } = await twilioGet(c, `${base}/v1/Services/${encodeURIComponent(c.messagingServiceSid)}/ChannelSenders?PageSize=100`);
      if (status === 404) return { name, ok: false, message: `the Messaging Service ${c.messagingServiceSid} (messagingServiceSid) is not on this account` };
      if (status !== 200)
        return { name, ok: false, message: `Twilio refused to list the Messaging Service's senders: HTTP ${status} ${String(body.message ?? '')}`.trim() };
      const wa = items(body)
        .map((s) => String(s.sender ?? ''))
        .filter((s) => s.startsWith('whatsapp:'));
      return wa.length
        ? { name, ok: true, message: `the Messaging Service ${c.messagingServiceSid} sends from ${wa.join(', ')}` }
        : {
            name,
            ok: false,
            message: `the Messaging Service ${c.messagingServiceSid} has no WhatsApp sender in its sender pool (Twilio Console > Messaging > Services > Sender Pool)`,
          };
    }
    if (c.from === SANDBOX_SENDER)
      return {
        name,
        ok: true,
        warn: true,
        message: `${SANDBOX_SENDER} is the Twilio Sandbox for WhatsApp: only people who joined it ("join <code>") reach it; for tests`,
      };
    const { status, body } = await twilioGet(c, `${base}/v2/Channels/Senders?Channel=whatsapp&PageSize=100`);
    if (status !== 200) return { name, ok: false, message: `Twilio refused to list the WhatsApp senders: HTTP ${status} ${String(body.message ?? '')}`.trim() };
    const senders = items(body).map((s) => ({
      id: String(s.sender_id ?? ''),
      status: String(s.status ?? 'unknown'),
      reasons: Array.isArray(s.offline_reasons) ? (s.offline_reasons as Array<{ message?: unknown }>).map((r) => String(r.message ?? '')).filter(Boolean) : [],
    }));
    if (c.from) {
      const s = senders.find((x) => x.id === c.from);
      if (!s)
        return {
          name,
          ok: false,
          message: `${c.from} (channels.whatsapp.from) is not a WhatsApp sender of this account${senders.length ? ` (its senders: ${senders.map((x) => x.id).join(', ')})` : ''}: register it (Twilio Console > Messaging > Senders > WhatsApp senders)`,
        };
      if (s.status !== 'ONLINE')
        return { name, ok: false, message: `${c.from} is ${s.status}${s.reasons.length ? ` (${s.reasons.join('; ')})` : ''}: it sends only when ONLINE` };
      return { name, ok: true, message: `${c.from}: ONLINE` };
    }
    const online = senders.filter((x) => x.status === 'ONLINE').map((x) => x.id);
    return online.length
      ? { name, ok: true, message: `replies go from the address each person wrote to; ONLINE: ${online.join(', ')}` }
      : {
          name,
          ok: true,
          warn: true,
          message: `no WhatsApp sender of this account is ONLINE: only the Sandbox (${SANDBOX_SENDER}) can answer; set channels.whatsapp.from once a sender is registered`,
        };
  } catch (err) {
    return { name, ok: false, message: `cannot reach ${base}: ${(err as Error).message}` };
  }
}
