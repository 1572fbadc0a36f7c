import type { ChannelProbe } from '../../src/channel/index.js';
import type { DiscordSettings } from './config.js';

/** Application flags that say the Message Content intent is switched on (verified apps; unverified ones get LIMITED). */
const GATEWAY_MESSAGE_CONTENT = 1 << 18;
const GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19;

async function get(c: DiscordSettings, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${c.apiBaseUrl.replace(/\/+$/, '')}/v10${path}`, {
    headers: { authorization: `Bot ${c.token}` },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: r.status, body: (await r.json().catch(() => ({}))) as Record<string, unknown> };
}

/**
 * doctor --probe for Discord: the bot token (GET /users/@me), and whether the Message Content
 * intent the gateway needs is on (GET /applications/@me, its flags). Read-only.
 */
export async function probeDiscord(c: DiscordSettings): Promise<ChannelProbe[]> {
  try {
    const me = await get(c, '/users/@me');
    if (me.status !== 200)
      return [
        {
          name: 'bot token',
          ok: false,
          message: `Discord refused the bot token (${c.botTokenEnv}): HTTP ${me.status} ${String(me.body.message ?? '')}`.trim(),
        },
      ];
    const out: ChannelProbe[] = [{ name: 'bot token', ok: true, message: `bot ${String(me.body.username)} (${String(me.body.id)})` }];
    const app = await get(c, '/applications/@me');
    if (app.status === 200) {
      const flags = Number(app.body.flags ?? 0);
      const on = (flags & (GATEWAY_MESSAGE_CONTENT | GATEWAY_MESSAGE_CONTENT_LIMITED)) !== 0;
      out.push({
        name: 'message content intent',
        ok: on,
        message: on ? 'on' : 'off: turn on MESSAGE CONTENT INTENT (Developer Portal > Bot > Privileged Gateway Intents); start refuses without it',
      });
    }
    return out;
  } catch (err) {
    return [{ name: 'bot token', ok: false, message: `cannot reach ${c.apiBaseUrl}: ${(err as Error).message}` }];
  }
}
