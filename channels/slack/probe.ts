import { LogLevel, WebClient } from '@slack/web-api';
import type { ChannelProbe } from '../../src/channel/index.js';
import { slackError } from './client.js';
import type { SlackConfig } from './config.js';

/** A Web API client for one read-only call: no retries, quiet. */
function client(c: SlackConfig, token: string): WebClient {
  return new WebClient(token, {
    slackApiUrl: c.apiUrl.endsWith('/') ? c.apiUrl : `${c.apiUrl}/`,
    timeout: Math.min(c.requestTimeoutMs, 10_000),
    retryConfig: { retries: 0 },
    logLevel: LogLevel.ERROR,
  });
}

/**
 * doctor --probe for Slack: the bot token with auth.test (workspace and bot user), and in Socket
 * Mode the app token with apps.connections.open (it needs connections:write; the URL it hands out
 * is not used). Neither call changes anything.
 */
export async function probeSlack(c: SlackConfig): Promise<ChannelProbe[]> {
  const out: ChannelProbe[] = [];
  try {
    const r = await client(c, c.botToken).auth.test();
    out.push({ name: 'bot token', ok: true, message: `auth.test: bot ${r.user ?? '?'} (${r.user_id ?? '?'}) in ${r.team ?? '?'} (${r.team_id ?? '?'})` });
  } catch (err) {
    out.push({ name: 'bot token', ok: false, message: `auth.test refused the bot token (${c.botTokenEnv}): ${slackError(err)}` });
  }
  if (c.mode === 'socket' && c.appToken) {
    try {
      await client(c, c.appToken).apps.connections.open();
      out.push({ name: 'app token', ok: true, message: 'apps.connections.open: Socket Mode accepts the app token' });
    } catch (err) {
      const why = slackError(err);
      out.push({
        name: 'app token',
        ok: false,
        message: `apps.connections.open refused the app token (${c.appTokenEnv}): ${why}${why === 'missing_scope' ? ' (the token needs connections:write)' : ''}`,
      });
    }
  }
  return out;
}
