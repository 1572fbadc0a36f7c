import { Api, GrammyError } from 'grammy';
import type { ChannelProbe } from '../../src/channel/index.js';
import { type TelegramSettings, WEBHOOK_PATH } from './config.js';

/**
 * doctor --probe for Telegram, read-only: the bot token (getMe), whether privacy mode lets the bot
 * see group messages that do not address it (can_read_all_group_messages), and the webhook as
 * Telegram has it (getWebhookInfo: its URL and last delivery error).
 */
export async function probeTelegram(c: TelegramSettings): Promise<ChannelProbe[]> {
  const api = new Api(c.token, { apiRoot: c.apiRoot, timeoutSeconds: 10 });
  try {
    const me = await api.getMe();
    const out: ChannelProbe[] = [
      { name: 'bot token', ok: true, message: `bot @${me.username} (${me.id})` },
      {
        name: 'privacy mode',
        ok: true,
        message: me.can_read_all_group_messages
          ? 'off: the bot sees every group message (it answers only when addressed unless requireMention is false)'
          : 'on: in groups the bot sees only messages that address it (mentions, replies, commands); requireMention: false needs it off (@BotFather /setprivacy)',
      },
    ];
    const hook = await api.getWebhookInfo();
    const want = c.publicUrl ? `${c.publicUrl}${WEBHOOK_PATH}` : '';
    const ok = c.publicUrl ? hook.url === want && !hook.last_error_message : true;
    out.push({
      name: 'webhook',
      ok,
      message: c.publicUrl
        ? `${hook.url ? `set to ${hook.url}` : 'not set (start sets it)'}${hook.url && hook.url !== want ? `; start sets ${want}` : ''}${hook.last_error_message ? `; last error: ${hook.last_error_message}` : ''}; ${hook.pending_update_count} pending`
        : `${hook.url ? `set to ${hook.url}; start deletes it (polling)` : 'none (polling)'}; ${hook.pending_update_count} pending`,
    });
    return out;
  } catch (err) {
    if (err instanceof GrammyError) return [{ name: 'bot token', ok: false, message: `Telegram refused the bot token (${c.botTokenEnv}): ${err.description}` }];
    return [{ name: 'bot token', ok: false, message: `cannot reach ${c.apiRoot}: ${(err as Error).message}` }];
  }
}
